#include "tlsoptions.h"

#include "rpcscopeca.h"

#include <cstdio>
#include <unistd.h>

namespace rpcscope {

bool tlsInterceptOptions(const std::map<std::string, std::string> &opts, TlsInterceptOptions *out,
                         std::string *error)
{
    out->enabled = opts.count("--tls-intercept");
    for (const char *flag : {"--target-ca", "--target-insecure", "--target-cert", "--target-key", "--keylog"})
        if (!out->enabled && opts.count(flag)) {
            *error = std::string(flag) + " needs --tls-intercept";
            return false;
        }
    if (!out->enabled) return true;
    if (opts.count("--target-ca") && opts.count("--target-insecure")) {
        *error =
            "--target-ca and --target-insecure contradict each other: verify against FILE, or not at all";
        return false;
    }
    if (opts.count("--target-cert") != opts.count("--target-key")) {
        *error = "--target-cert and --target-key go together (a client certificate and its key)";
        return false;
    }
    for (const char *flag : {"--target-ca", "--target-cert", "--target-key"})
        if (opts.count(flag) && access(opts.at(flag).c_str(), R_OK) != 0) {
            *error = std::string(flag) + " " + opts.at(flag) + " cannot be read";
            return false;
        }
    auto get = [&](const char *flag) { return opts.count(flag) ? opts.at(flag) : std::string(); };
    out->targetCaFile = get("--target-ca");
    out->targetCertFile = get("--target-cert");
    out->targetKeyFile = get("--target-key");
    out->keylogFile = get("--keylog");
    out->targetInsecure = opts.count("--target-insecure");
    if (out->targetInsecure)
        std::fprintf(stderr, "rpcscope-cli: warning: --target-insecure: the target's certificate is not "
                             "verified; anyone on the path to it can read and change the traffic\n");
    // Made here on first use rather than by the first connection, so the user learns where it is before any
    // client needs it.
    RpcscopeCa ca;
    if (!ca.open(out->caDirectory, false, error)) return false;
    std::fprintf(
        stderr,
        "rpcscope-cli: TLS interception signs with the rpcscope CA %s%s; trust it in the client's process "
        "only, e.g. GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=%s\n",
        ca.certPath().c_str(), ca.created() ? " (made now)" : "", ca.certPath().c_str());
    return true;
}

} // namespace rpcscope
