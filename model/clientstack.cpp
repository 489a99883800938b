#include "clientstack.h"

#include <algorithm>
#include <cmath>

namespace rpcscope {

namespace {

// "grpc-c++/1.51.1 grpc-c/29.0.0 (linux; chttp2)" -> product "grpc-c++", version "1.51.1".
void firstProduct(std::string_view ua, std::string *product, std::string *version)
{
    const size_t end = std::min(ua.find(' '), ua.size());
    const std::string_view token = ua.substr(0, end);
    const size_t slash = token.find('/');
    *product = std::string(token.substr(0, slash));
    *version = slash == std::string_view::npos ? std::string() : std::string(token.substr(slash + 1));
}

} // namespace

ClientStack ClientStack::fromUserAgent(std::string_view ua)
{
    ClientStack s;
    firstProduct(ua, &s.m_product, &s.m_version);
    // Applications may put their own product first (grpc.primary_user_agent): look for the stack's token
    // anywhere.
    auto token = [&](std::string_view name) {
        for (size_t at = ua.find(name); at != std::string_view::npos; at = ua.find(name, at + 1)) {
            const bool startOk = at == 0 || ua[at - 1] == ' ';
            const size_t after = at + name.size();
            if (startOk && after < ua.size() && ua[after] == '/') {
                const size_t end = std::min(ua.find(' ', after), ua.size());
                s.m_product = std::string(name);
                s.m_version = std::string(ua.substr(after + 1, end - after - 1));
                return true;
            }
        }
        return false;
    };
    if (ua.find("grpc-c/") != std::string_view::npos) {
        s.m_kind = Kind::CCore; // the wrapped language's token stays the product: grpc-c++, grpc-python ...
        if (!token("grpc-c++") && !token("grpc-python") && !token("grpc-ruby") && !token("grpc-php"))
            token("grpc-c");
    } else if (token("grpc-go")) {
        s.m_kind = Kind::Go;
    } else if (token("grpc-node-js")) {
        s.m_kind = Kind::Node;
    } else if (ua.find("grpc-java") != std::string_view::npos) {
        s.m_kind = Kind::Java; // grpc-java-netty, grpc-java-okhttp
        const size_t at = ua.find("grpc-java");
        std::string product, version;
        firstProduct(ua.substr(at), &product, &version);
        s.m_product = product;
        s.m_version = version;
    } else {
        s.m_product = std::string(ua);
        s.m_version.clear();
    }
    return s;
}

ClientStack ClientStack::of(Kind kind, std::string version)
{
    ClientStack s;
    s.m_kind = kind;
    s.m_version = std::move(version);
    switch (kind) {
    case Kind::CCore:
        s.m_product = "grpc-c++";
        break;
    case Kind::Go:
        s.m_product = "grpc-go";
        break;
    case Kind::Node:
        s.m_product = "grpc-node-js";
        break;
    case Kind::Java:
        s.m_product = "grpc-java";
        break;
    case Kind::Unknown:
        break;
    }
    return s;
}

std::string ClientStack::name() const
{
    if (m_kind == Kind::Unknown)
        return m_product.empty() ? std::string("unknown client") : "unknown client (" + m_product + ")";
    std::string n = m_product;
    if (!m_version.empty()) n += " " + m_version;
    if (m_kind == Kind::CCore) n += " (C-core)";
    return n;
}

std::pair<double, double> ClientStack::jitter(int retry) const
{
    switch (m_kind) {
    case Kind::CCore:
        return retry <= 1 ? std::pair{1.0, 1.0} : std::pair{0.8, 1.2};
    case Kind::Node:
        return {0.8, 1.2};
    case Kind::Go:
    case Kind::Java:
        return {0.0, 1.0};
    case Kind::Unknown:
        break;
    }
    return {0.0, 1.2};
}

std::pair<double, double> ClientStack::backoffMs(int retry, double initialMs, double multiplier,
                                                 double maxMs) const
{
    double base = initialMs;
    for (int k = 1; k < retry && base < maxMs; ++k)
        base *= multiplier;
    base = std::min(base, maxMs);
    const auto [lo, hi] = jitter(retry);
    return {base * lo, base * hi};
}

std::string ClientStack::describeBackoff(int retry) const
{
    switch (m_kind) {
    case Kind::CCore:
        return retry <= 1 ? "waits exactly initialBackoff on the first retry"
                          : "waits the backoff x [0.8, 1.2] from the second retry on";
    case Kind::Node:
        return "waits the backoff x [0.8, 1.2]";
    case Kind::Go:
    case Kind::Java:
        return "waits a uniform random time in [0, backoff)";
    case Kind::Unknown:
        break;
    }
    return "is unknown: judged against a generic [0, 1.2] x backoff";
}

std::uint64_t ClientStack::retryBufferBytes() const
{
    switch (m_kind) {
    case Kind::CCore:
    case Kind::Go:
        return 256 * 1024;
    case Kind::Node:
    case Kind::Java:
        return 1024 * 1024;
    case Kind::Unknown:
        break;
    }
    return 0;
}

} // namespace rpcscope
