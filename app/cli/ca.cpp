// rpcscope-cli ca: where the rpcscope CA is and what it looks like, made on first use or anew.

#include "commands.h"
#include "options.h"
#include "rpcscopeca.h"

#include <cstdio>

namespace rpcscope {

int cmdCa(const std::vector<std::string> &args)
{
    std::map<std::string, std::string> opts;
    std::string error;
    if (!parseOptions(args, {}, {"--regenerate"}, &opts, &error)) return usageError(error);
    RpcscopeCa ca;
    if (!ca.open(std::string(), opts.count("--regenerate"), &error)) {
        std::fprintf(stderr, "rpcscope-cli: %s\n", error.c_str());
        return 1;
    }
    // The key's path is said so the user knows what to protect; the key itself is never printed.
    std::fprintf(stderr, "rpcscope-cli: %s the rpcscope CA; its key is %s (keep it private)\n",
                 ca.created() ? "made" : "using", ca.keyPath().c_str());
    std::printf("%s\n%s", ca.certPath().c_str(), ca.certPem().c_str());
    return 0;
}

} // namespace rpcscope
