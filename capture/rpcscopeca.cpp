#include "rpcscopeca.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rpcscope {

namespace {
constexpr long kCaDays = 3650;
constexpr long kLeafSeconds = 7L * 86400;
constexpr long kLeafRenewSeconds = 86400;

std::string opensslError()
{
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (!e) return "unknown OpenSSL error";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
}

EVP_PKEY *newP256Key()
{
    return EVP_EC_gen("P-256");
}

bool addExt(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (!ext) return false;
    const bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

bool randomSerial(X509 *cert)
{
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
    bytes[0] &= 0x7f; // positive
    BIGNUM *bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
    const bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
    BN_free(bn);
    return ok;
}

bool mkdirs(const std::string &dir)
{
    for (size_t i = 1; i <= dir.size(); ++i) {
        if (i < dir.size() && dir[i] != '/') continue;
        const std::string part = dir.substr(0, i);
        // The CA's own directory is private; parents are whatever the user's umask makes them.
        if (mkdir(part.c_str(), i == dir.size() ? 0700 : 0755) != 0 && errno != EEXIST) return false;
    }
    return true;
}

// Written beside the final name and renamed over it, the key created with mode 0600 (never chmod-ed after, so
// it is not readable by others for even a moment).
bool writeFile(const std::string &path, mode_t mode, const std::string &text, std::string *error)
{
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    unlink(tmp.c_str());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        *error = "cannot write " + tmp + ": " + std::strerror(errno);
        return false;
    }
    size_t off = 0;
    while (off < text.size()) {
        const ssize_t n = write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            *error = "cannot write " + tmp + ": " + std::strerror(errno);
            close(fd);
            unlink(tmp.c_str());
            return false;
        }
        off += size_t(n);
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
        *error = "cannot write " + path + ": " + std::strerror(errno);
        unlink(tmp.c_str());
        return false;
    }
    return true;
}

std::string bioText(BIO *bio)
{
    char *p = nullptr;
    const long n = BIO_get_mem_data(bio, &p);
    return std::string(p, size_t(n));
}

bool isIpAddress(const std::string &name)
{
    ASN1_OCTET_STRING *ip = a2i_IPADDRESS(name.c_str());
    ASN1_OCTET_STRING_free(ip);
    return ip != nullptr;
}
} // namespace

RpcscopeCa::Leaf::~Leaf()
{
    X509_free(cert);
    EVP_PKEY_free(key);
}

RpcscopeCa::RpcscopeCa() = default;

RpcscopeCa::~RpcscopeCa()
{
    X509_free(m_cert);
    EVP_PKEY_free(m_key);
    EVP_PKEY_free(m_leafKey);
}

std::string RpcscopeCa::defaultDirectory()
{
    const char *xdg = std::getenv("XDG_CONFIG_HOME");
    if (xdg && *xdg == '/') return std::string(xdg) + "/rpcscope";
    const char *home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.config/rpcscope";
}

std::string RpcscopeCa::certPath() const
{
    return m_dir + "/rpcscope-ca.pem";
}

std::string RpcscopeCa::keyPath() const
{
    return m_dir + "/rpcscope-ca.key";
}

std::string RpcscopeCa::certPem() const
{
    if (!m_cert) return {};
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, m_cert);
    std::string pem = bioText(bio);
    BIO_free(bio);
    return pem;
}

bool RpcscopeCa::open(const std::string &directory, bool regenerate, std::string *error)
{
    std::string dummy;
    std::string &err = error ? *error : dummy;
    m_dir = directory.empty() ? defaultDirectory() : directory;
    while (m_dir.size() > 1 && m_dir.back() == '/')
        m_dir.pop_back();
    m_created = false;
    struct stat st
    {
    };
    const bool haveCert = stat(certPath().c_str(), &st) == 0;
    const bool haveKey = stat(keyPath().c_str(), &st) == 0;
    if (regenerate || (!haveCert && !haveKey)) {
        if (!mkdirs(m_dir)) {
            err = "cannot make the rpcscope CA's directory " + m_dir + ": " + std::strerror(errno);
            return false;
        }
        if (!create(&err)) return false;
        m_created = true;
        return true;
    }
    if (haveCert != haveKey) {
        err = "the rpcscope CA in " + m_dir + " is incomplete (" + (haveCert ? keyPath() : certPath()) +
              " is missing); make a new one with `rpcscope-cli ca --regenerate`";
        return false;
    }
    return load(&err);
}

bool RpcscopeCa::load(std::string *error)
{
    FILE *cf = std::fopen(certPath().c_str(), "r");
    FILE *kf = cf ? std::fopen(keyPath().c_str(), "r") : nullptr;
    if (!cf || !kf) {
        *error =
            "cannot read the rpcscope CA: " + (cf ? keyPath() : certPath()) + ": " + std::strerror(errno);
        if (cf) std::fclose(cf);
        return false;
    }
    X509 *cert = PEM_read_X509(cf, nullptr, nullptr, nullptr);
    EVP_PKEY *key = PEM_read_PrivateKey(kf, nullptr, nullptr, nullptr);
    std::fclose(cf);
    std::fclose(kf);
    if (!cert || !key || X509_check_private_key(cert, key) != 1) {
        *error = "the rpcscope CA in " + m_dir + " cannot be used (" + opensslError() +
                 "); make a new one with `rpcscope-cli ca --regenerate`";
        X509_free(cert);
        EVP_PKEY_free(key);
        return false;
    }
    adopt(cert, key);
    return true;
}

void RpcscopeCa::adopt(X509 *cert, EVP_PKEY *key)
{
    std::lock_guard lk(m_mutex);
    X509_free(m_cert);
    EVP_PKEY_free(m_key);
    m_cert = cert;
    m_key = key;
    m_leaves.clear(); // minted by the CA this replaces
}

bool RpcscopeCa::create(std::string *error)
{
    EVP_PKEY *key = newP256Key();
    X509 *cert = X509_new();
    bool ok = key && cert && X509_set_version(cert, 2) && randomSerial(cert) &&
              X509_gmtime_adj(X509_getm_notBefore(cert), -86400) &&
              X509_gmtime_adj(X509_getm_notAfter(cert), kCaDays * 86400) && X509_set_pubkey(cert, key);
    if (ok) {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        const char *user = std::getenv("USER");
        const std::string cn = std::string("rpcscope CA (") + (user ? user : "user") + "@" + host + ")";
        X509_NAME *name = X509_get_subject_name(cert);
        ok = X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                        reinterpret_cast<const unsigned char *>("rpcscope"), -1, -1, 0) &&
             X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                        reinterpret_cast<const unsigned char *>(cn.c_str()), -1, -1, 0) &&
             X509_set_issuer_name(cert, name) &&
             addExt(cert, cert, NID_basic_constraints, "critical,CA:TRUE") &&
             addExt(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign") &&
             addExt(cert, cert, NID_subject_key_identifier, "hash") && X509_sign(cert, key, EVP_sha256()) > 0;
    }
    if (!ok) {
        *error = "cannot make the rpcscope CA: " + opensslError();
        X509_free(cert);
        EVP_PKEY_free(key);
        return false;
    }
    BIO *kb = BIO_new(BIO_s_mem());
    BIO *cb = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(kb, key, nullptr, nullptr, 0, nullptr, nullptr);
    PEM_write_bio_X509(cb, cert);
    const std::string keyPem = bioText(kb);
    const std::string certPem = bioText(cb);
    BIO_free(kb);
    BIO_free(cb);
    // The key first: a cert without its key is never left behind as the CA.
    if (!writeFile(keyPath(), 0600, keyPem, error) || !writeFile(certPath(), 0644, certPem, error)) {
        X509_free(cert);
        EVP_PKEY_free(key);
        return false;
    }
    adopt(cert, key);
    return true;
}

std::shared_ptr<const RpcscopeCa::Leaf> RpcscopeCa::leafFor(const std::string &name, std::string *error)
{
    std::lock_guard lk(m_mutex);
    if (!m_cert || !m_key) {
        if (error) *error = "no rpcscope CA loaded";
        return nullptr;
    }
    // The name goes into an extension's text: nothing but a host name's characters, so it cannot add others.
    const bool plain =
        !name.empty() && name.size() <= 253 &&
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") ==
            std::string::npos;
    if (!plain) {
        if (error) *error = "cannot mint a certificate for '" + name + "': not a host name or address";
        return nullptr;
    }
    const std::time_t now = std::time(nullptr);
    if (auto it = m_leaves.find(name); it != m_leaves.end() && it->second->notAfter - now > kLeafRenewSeconds)
        return it->second;
    if (!m_leafKey && !(m_leafKey = newP256Key())) {
        if (error) *error = "cannot make a key: " + opensslError();
        return nullptr;
    }
    auto leaf = std::make_shared<Leaf>();
    leaf->cert = X509_new();
    leaf->key = m_leafKey;
    EVP_PKEY_up_ref(m_leafKey);
    leaf->notAfter = now + kLeafSeconds;
    X509 *cert = leaf->cert;
    const std::string san = (isIpAddress(name) ? "IP:" : "DNS:") + name;
    // A name that is no valid CN (over 64 bytes) still gets its certificate: clients check the SAN.
    const std::string cn = name.size() <= 64 ? name : name.substr(0, 64);
    X509_NAME *subject = X509_get_subject_name(cert);
    const bool ok =
        X509_set_version(cert, 2) && randomSerial(cert) &&
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600) &&
        X509_gmtime_adj(X509_getm_notAfter(cert), kLeafSeconds) && X509_set_pubkey(cert, m_leafKey) &&
        X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char *>(cn.c_str()), -1, -1, 0) &&
        X509_set_issuer_name(cert, X509_get_subject_name(m_cert)) &&
        addExt(cert, m_cert, NID_basic_constraints, "critical,CA:FALSE") &&
        addExt(cert, m_cert, NID_key_usage, "critical,digitalSignature") &&
        addExt(cert, m_cert, NID_ext_key_usage, "serverAuth") &&
        addExt(cert, m_cert, NID_subject_alt_name, san.c_str()) &&
        addExt(cert, m_cert, NID_authority_key_identifier, "keyid:always") &&
        X509_sign(cert, m_key, EVP_sha256()) > 0;
    if (!ok) {
        if (error) *error = "cannot mint a certificate for " + name + ": " + opensslError();
        return nullptr;
    }
    m_leaves[name] = leaf;
    return leaf;
}

} // namespace rpcscope
