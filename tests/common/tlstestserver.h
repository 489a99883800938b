#pragma once

// A grpc++ TLS server for tests: its certificate (for localhost) comes from a CA of its own, made with the
// rpcscope CA code as a certificate factory, never the proxy's CA.

#include "lab.grpc.pb.h"
#include "rpcscopeca.h"

#include <chrono>
#include <cstdint>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <memory>
#include <mutex>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <string>
#include <thread>
#include <vector>

namespace tlstest {

inline std::string pemOf(X509 *cert)
{
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, cert);
    char *p = nullptr;
    const long n = BIO_get_mem_data(bio, &p);
    std::string s(p, size_t(n));
    BIO_free(bio);
    return s;
}

inline std::string pemOf(EVP_PKEY *key)
{
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    char *p = nullptr;
    const long n = BIO_get_mem_data(bio, &p);
    std::string s(p, size_t(n));
    BIO_free(bio);
    return s;
}

// An attempt that reached the server: its call id, its grpc-previous-rpc-attempts, when (steady clock, ns).
struct TlsArrival
{
    std::string callId;
    int previousAttempts = 0;
    std::int64_t tNs = 0;
};

// Fails the first attempt of every call with UNAVAILABLE, so that a retry policy makes a second one.
class FlakyLab final : public rpcscope::lab::Lab::Service
{
public:
    grpc::Status Call(grpc::ServerContext *context, const rpcscope::lab::CallRequest *request,
                      rpcscope::lab::CallReply *) override
    {
        const auto &md = context->client_metadata();
        {
            const auto previous = md.find("grpc-previous-rpc-attempts");
            std::lock_guard lk(m_mutex);
            m_arrivals.push_back({request->call_id(),
                                  previous == md.end() ? 0
                                                       : std::stoi(std::string(previous->second.data(),
                                                                               previous->second.size())),
                                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now().time_since_epoch())
                                      .count()});
        }
        // The server's processing time: a connection fault can then strike while the call is in flight.
        if (request->delay_ms() > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(request->delay_ms()));
        if (m_flaky && md.find("grpc-previous-rpc-attempts") == md.end())
            return grpc::Status(grpc::StatusCode::UNAVAILABLE, "first attempt fails");
        return grpc::Status::OK;
    }
    bool m_flaky = false;

    std::vector<TlsArrival> arrivalsFor(const std::string &callId) const
    {
        std::lock_guard lk(m_mutex);
        std::vector<TlsArrival> found;
        for (const TlsArrival &a : m_arrivals)
            if (a.callId == callId) found.push_back(a);
        return found;
    }

private:
    mutable std::mutex m_mutex;
    std::vector<TlsArrival> m_arrivals;
};

// A grpc++ TLS server whose certificate (for localhost) comes from its own CA, made here with OpenSSL.
struct TlsServer
{
    FlakyLab service;
    std::unique_ptr<grpc::Server> server;
    int port = 0;
    std::string caPem;
    std::string caFile;

    bool start(const std::string &dir)
    {
        // Only as a certificate factory: this is the server's own CA, not the proxy's.
        rpcscope::RpcscopeCa ca;
        std::string error;
        if (!ca.open(dir + "/server-ca", false, &error)) return false;
        auto leaf = ca.leafFor("localhost", &error);
        if (!leaf) return false;
        caPem = ca.certPem();
        caFile = ca.certPath();
        grpc::SslServerCredentialsOptions opts;
        opts.pem_key_cert_pairs.push_back({pemOf(leaf->key), pemOf(leaf->cert)});
        grpc::ServerBuilder b;
        b.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(opts), &port);
        b.RegisterService(&service);
        server = b.BuildAndStart();
        return server && port > 0;
    }
};

} // namespace tlstest
