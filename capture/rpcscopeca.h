#pragma once

#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <string>

typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

namespace rpcscope {

// The local certificate authority that TLS interception signs its server certificates with. Made on first use
// (EC P-256, valid ten years) in the user's configuration directory; its key is written there with mode 0600
// and is never put into a capture or an export. Whoever holds that key can impersonate any server to a client
// that trusts the CA, which is why clients should trust it per process only (README, "TLS interception").
class RpcscopeCa
{
public:
    // A minted server certificate and its key.
    struct Leaf
    {
        X509 *cert = nullptr;
        EVP_PKEY *key = nullptr;
        std::time_t notAfter = 0;
        ~Leaf();
    };

    RpcscopeCa();
    ~RpcscopeCa();
    RpcscopeCa(const RpcscopeCa &) = delete;
    RpcscopeCa &operator=(const RpcscopeCa &) = delete;

    // $XDG_CONFIG_HOME/rpcscope, else ~/.config/rpcscope.
    static std::string defaultDirectory();

    // Loads the CA kept in `directory` (empty: defaultDirectory()), making it when there is none, or anew
    // when `regenerate`. False with the reason (and the fix) when it can be neither read nor made.
    bool open(const std::string &directory, bool regenerate, std::string *error);
    bool created() const { return m_created; }
    std::string certPath() const;
    std::string keyPath() const;
    std::string certPem() const;
    X509 *cert() const { return m_cert; }

    // A server certificate for `name` (a DNS name or an IP address, put in its subjectAltName), valid for
    // a week and signed by the CA; the same one for the same name while it has a day left. Thread-safe.
    std::shared_ptr<const Leaf> leafFor(const std::string &name, std::string *error);

private:
    bool load(std::string *error);
    bool create(std::string *error);
    // Takes ownership of the CA's certificate and key, replacing the current ones and their leaves.
    void adopt(X509 *cert, EVP_PKEY *key);

    std::string m_dir;
    X509 *m_cert = nullptr;
    EVP_PKEY *m_key = nullptr;
    bool m_created = false;
    std::mutex m_mutex;
    EVP_PKEY *m_leafKey = nullptr; // one key for every leaf: minting stays cheap
    std::map<std::string, std::shared_ptr<const Leaf>> m_leaves;
};

} // namespace rpcscope
