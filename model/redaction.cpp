#include "redaction.h"

#include <algorithm>

namespace rpcscope {

namespace {
std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : char(c); });
    return out;
}
} // namespace

const std::vector<std::string> &Redaction::defaultNames()
{
    static const std::vector<std::string> names{"authorization", "proxy-authorization", "cookie",
                                                "set-cookie"};
    return names;
}

std::vector<std::string> Redaction::names() const
{
    if (!enabled) return {};
    std::vector<std::string> all = defaultNames();
    for (const std::string &n : extraNames)
        if (std::string l = lower(n); !l.empty() && std::find(all.begin(), all.end(), l) == all.end())
            all.push_back(std::move(l));
    return all;
}

bool Redaction::masks(std::string_view headerName) const
{
    if (!enabled) return false;
    // HTTP/2 header names are lowercase on the wire, but a peer that breaks the rule must not leak a secret.
    const std::string l = lower(headerName);
    const auto &d = defaultNames();
    if (std::find(d.begin(), d.end(), l) != d.end()) return true;
    return std::any_of(extraNames.begin(), extraNames.end(),
                       [&](const std::string &n) { return lower(n) == l; });
}

size_t Redaction::apply(EventBatch &batch) const
{
    if (!enabled) return 0;
    size_t masked = 0;
    for (WireEvent &e : batch) {
        if (e.kind != EventKind::Headers) continue;
        for (Header &h : e.headers)
            if (masks(h.name)) {
                h.value = kRedactedValue;
                ++masked;
            }
    }
    return masked;
}

} // namespace rpcscope
