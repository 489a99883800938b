// The rpcscope CA: made once with a private key file, reused, replaced on request, and the certificates it
// mints verify against it with OpenSSL for DNS names and addresses.

#include "rpcscopeca.h"

#include <QTemporaryDir>
#include <QtTest>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rpcscope;

namespace {
mode_t modeOf(const std::string &path)
{
    struct stat st
    {
    };
    if (stat(path.c_str(), &st) != 0) return mode_t(-1);
    return st.st_mode & 0777;
}

// OpenSSL's own verdict on `cert` against a store holding only `ca`.
int verify(X509 *ca, X509 *cert)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, cert, nullptr);
    X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(ctx), X509_PURPOSE_SSL_SERVER);
    const int ok = X509_verify_cert(ctx);
    const int err = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    return err;
}
} // namespace

class TstTlsCa : public QObject
{
    Q_OBJECT
private slots:
    void createsReusesRegenerates()
    {
        QTemporaryDir tmp;
        const std::string dir = tmp.filePath("cfg/rpcscope").toStdString();
        // Even with a permissive umask the key is never readable by others.
        const mode_t old = umask(0);
        RpcscopeCa ca;
        std::string error;
        QVERIFY2(ca.open(dir, false, &error), error.c_str());
        umask(old);
        QVERIFY(ca.created());
        QCOMPARE(ca.certPath(), dir + "/rpcscope-ca.pem");
        QCOMPARE(modeOf(ca.keyPath()), mode_t(0600));
        QCOMPARE(modeOf(dir), mode_t(0700));

        X509 *cert = ca.cert();
        QVERIFY(cert);
        QCOMPARE(X509_check_ca(cert), 1);
        QVERIFY(X509_get_key_usage(cert) & KU_KEY_CERT_SIGN);
        EVP_PKEY *pub = X509_get0_pubkey(cert);
        QCOMPARE(EVP_PKEY_get_base_id(pub), EVP_PKEY_EC);
        char group[64] = {};
        size_t glen = 0;
        QVERIFY(EVP_PKEY_get_group_name(pub, group, sizeof group, &glen));
        QCOMPARE(QByteArray(group), QByteArray("prime256v1"));
        int days = 0, secs = 0;
        QVERIFY(ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(cert)));
        QVERIFY2(days > 9 * 365 && days <= 3651, qPrintable(QString::number(days)));
        // Self-signed: its own issuer, its signature checks with its own key.
        QCOMPARE(X509_check_issued(cert, cert), X509_V_OK);
        QCOMPARE(X509_verify(cert, pub), 1);
        const std::string pem = ca.certPem();
        QVERIFY(pem.starts_with("-----BEGIN CERTIFICATE-----"));
        QVERIFY(pem.find("PRIVATE") == std::string::npos);

        // The next use finds it and makes nothing.
        RpcscopeCa again;
        QVERIFY2(again.open(dir, false, &error), error.c_str());
        QVERIFY(!again.created());
        QCOMPARE(again.certPem(), pem);

        // --regenerate: a new CA in the same files, the key still private.
        RpcscopeCa fresh;
        QVERIFY2(fresh.open(dir, true, &error), error.c_str());
        QVERIFY(fresh.created());
        QVERIFY(fresh.certPem() != pem);
        QCOMPARE(modeOf(fresh.keyPath()), mode_t(0600));
        QVERIFY(verify(fresh.cert(), again.cert()) != X509_V_OK);

        // Half a CA is said as such, with the fix.
        QVERIFY(unlink(fresh.keyPath().c_str()) == 0);
        RpcscopeCa broken;
        QVERIFY(!broken.open(dir, false, &error));
        QVERIFY2(error.find("--regenerate") != std::string::npos, error.c_str());
    }

    void mintsLeavesThatVerify()
    {
        QTemporaryDir tmp;
        RpcscopeCa ca;
        std::string error;
        QVERIFY2(ca.open(tmp.path().toStdString(), false, &error), error.c_str());

        auto leaf = ca.leafFor("svc.example.com", &error);
        QVERIFY2(leaf, error.c_str());
        QCOMPARE(verify(ca.cert(), leaf->cert), X509_V_OK);
        QCOMPARE(X509_check_host(leaf->cert, "svc.example.com", 0, 0, nullptr), 1);
        QCOMPARE(X509_check_host(leaf->cert, "other.example.com", 0, 0, nullptr), 0);
        QCOMPARE(X509_check_ca(leaf->cert), 0);
        QCOMPARE(X509_check_private_key(leaf->cert, leaf->key), 1);
        int days = 0, secs = 0;
        QVERIFY(ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(leaf->cert)));
        QVERIFY2(days <= 8, qPrintable(QString::number(days)));            // short-lived
        QCOMPARE(ca.leafFor("svc.example.com", &error).get(), leaf.get()); // cached per name

        auto ip = ca.leafFor("127.0.0.1", &error);
        QVERIFY2(ip, error.c_str());
        QCOMPARE(verify(ca.cert(), ip->cert), X509_V_OK);
        QCOMPARE(X509_check_ip_asc(ip->cert, "127.0.0.1", 0), 1);
        QVERIFY(ip.get() != leaf.get());

        // A name that would smuggle another subjectAltName in is refused.
        QVERIFY(!ca.leafFor("a.example,DNS:evil.example", &error));
        QVERIFY2(error.find("not a host name") != std::string::npos, error.c_str());

        // Another CA's leaf does not verify against this one.
        QTemporaryDir tmp2;
        RpcscopeCa other;
        QVERIFY(other.open(tmp2.path().toStdString(), false, &error));
        QVERIFY(verify(ca.cert(), other.leafFor("svc.example.com", &error)->cert) != X509_V_OK);
    }

    void defaultDirectoryFollowsXdg()
    {
        const QByteArray saved = qgetenv("XDG_CONFIG_HOME");
        qputenv("XDG_CONFIG_HOME", "/somewhere/cfg");
        QCOMPARE(RpcscopeCa::defaultDirectory(), std::string("/somewhere/cfg/rpcscope"));
        qunsetenv("XDG_CONFIG_HOME");
        QCOMPARE(RpcscopeCa::defaultDirectory(),
                 std::string(qgetenv("HOME").constData()) + "/.config/rpcscope");
        if (!saved.isNull()) qputenv("XDG_CONFIG_HOME", saved);
    }
};

QTEST_GUILESS_MAIN(TstTlsCa)
#include "tst_tlsca.moc"
