#pragma once

#include <string>

namespace rpcscope {

// A hop that terminates TLS: facing the client with a certificate the rpcscope CA mints for the SNI, facing
// the target as a TLS client. The decoder sees the plaintext in both directions.
struct TlsInterceptOptions
{
    bool enabled = false;
    std::string caDirectory;  // empty: RpcscopeCa::defaultDirectory()
    std::string targetCaFile; // empty: the system's roots
    bool targetInsecure = false;
    std::string targetCertFile; // client certificate for mTLS to the target (with targetKeyFile)
    std::string targetKeyFile;
    std::string keylogFile; // NSS key log of both legs, appended to
};

} // namespace rpcscope
