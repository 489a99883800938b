#pragma once

// The proxy variables of the test's environment, set for one scope: C-core reads them when a channel is made.

#include <cstdlib>
#include <string>

class ProxyEnv
{
public:
    explicit ProxyEnv(const std::string &proxy, const char *noProxy = nullptr)
    {
        for (const char *name : {"grpc_proxy", "https_proxy", "http_proxy", "no_grpc_proxy", "no_proxy"})
            unsetenv(name);
        setenv("grpc_proxy", ("http://" + proxy).c_str(), 1);
        if (noProxy) setenv("no_grpc_proxy", noProxy, 1);
    }
    ~ProxyEnv()
    {
        unsetenv("grpc_proxy");
        unsetenv("no_grpc_proxy");
    }
    ProxyEnv(const ProxyEnv &) = delete;
    ProxyEnv &operator=(const ProxyEnv &) = delete;
};
