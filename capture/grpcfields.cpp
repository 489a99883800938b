#include "grpcfields.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace rpcscope {

namespace {
template <typename T> std::optional<T> parseInt(std::string_view s)
{
    T v{};
    if (s.empty()) return std::nullopt;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}

int hexValue(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
// "initial_ms=50;multiplier=2;max_ms=1000"; anything malformed leaves the policy unknown.
void parseRetryPolicy(std::string_view text, GrpcFields *f)
{
    double initial = -1, multiplier = -1, max = -1;
    while (!text.empty()) {
        const auto semi = text.find(';');
        const std::string_view item = text.substr(0, semi);
        text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
        const auto eq = item.find('=');
        if (eq == std::string_view::npos) return;
        double v = 0;
        const std::string_view value = item.substr(eq + 1);
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size() || !std::isfinite(v) || v <= 0)
            return; // from_chars also reads "nan" and "inf"
        const std::string_view key = item.substr(0, eq);
        (key == "initial_ms" ? initial : key == "multiplier" ? multiplier : key == "max_ms" ? max : v) = v;
    }
    if (initial > 0 && multiplier > 0 && max > 0) {
        f->retryInitialMs = initial;
        f->retryMultiplier = multiplier;
        f->retryMaxMs = max;
    }
}
// Lower-case hex only: the spec tells receivers to ignore a traceparent with upper-case digits.
bool isLowerHex(std::string_view s)
{
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool allZero(std::string_view s)
{
    return s.find_first_not_of('0') == std::string_view::npos;
}
} // namespace

bool parseTraceparent(std::string_view value, std::string *traceId, std::string *parentId)
{
    // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55. A later version may
    // append "-" and more fields, which a version-00 reader skips.
    constexpr size_t kLength = 55;
    if (value.size() < kLength || value[2] != '-' || value[35] != '-' || value[52] != '-') return false;
    const std::string_view version = value.substr(0, 2), trace = value.substr(3, 32),
                           parent = value.substr(36, 16), flags = value.substr(53, 2);
    if (!isLowerHex(version) || version == "ff" || !isLowerHex(trace) || !isLowerHex(parent) ||
        !isLowerHex(flags))
        return false;
    if (value.size() > kLength && (version == "00" || value[kLength] != '-')) return false;
    if (allZero(trace) || allZero(parent)) return false;
    *traceId = std::string(trace);
    *parentId = std::string(parent);
    return true;
}

std::optional<std::int64_t> parseGrpcTimeout(std::string_view value)
{
    if (value.size() < 2 || value.size() > 9) return std::nullopt;
    const auto digits = parseInt<std::int64_t>(value.substr(0, value.size() - 1));
    if (!digits || *digits < 0) return std::nullopt;
    std::int64_t unitNs = 0;
    switch (value.back()) {
    case 'H':
        unitNs = 3600'000'000'000;
        break;
    case 'M':
        unitNs = 60'000'000'000;
        break;
    case 'S':
        unitNs = 1'000'000'000;
        break;
    case 'm':
        unitNs = 1'000'000;
        break;
    case 'u':
        unitNs = 1'000;
        break;
    case 'n':
        unitNs = 1;
        break;
    default:
        return std::nullopt;
    }
    // 8 digits of hours (3.6e20 ns) do not fit in int64: longer than the model takes (events.h) is as good as
    // infinite, as in C-core, which saturates too.
    return *digits > kMaxTimeoutNs / unitNs ? kMaxTimeoutNs : *digits * unitNs;
}

std::string percentDecode(std::string_view value)
{
    std::string out;
    out.reserve(value.size());
    for (size_t i = 0; i < value.size(); ++i) {
        if (value[i] == '%' && i + 2 < value.size()) {
            const int hi = hexValue(value[i + 1]);
            const int lo = hexValue(value[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out.push_back(char(hi * 16 + lo));
                i += 2;
                continue;
            }
        }
        out.push_back(value[i]);
    }
    return out;
}

bool isTimelineHeader(std::string_view name)
{
    return (!name.empty() && name[0] == ':') || name.substr(0, 5) == "grpc-" || name == "content-type" ||
           name == "user-agent" || name == "rpcscope-call-id" || name == "rpcscope-retry-policy" ||
           name == "traceparent";
}

GrpcFields extractGrpcFields(const std::vector<Header> &headers)
{
    GrpcFields f;
    for (const Header &h : headers) {
        const std::string_view n = h.name;
        if (n == ":path")
            f.path = h.value;
        else if (n == "grpc-timeout")
            f.timeoutNs = parseGrpcTimeout(h.value);
        else if (n == "grpc-previous-rpc-attempts")
            f.previousAttempts = parseInt<int>(h.value);
        else if (n == ":status")
            f.httpStatus = parseInt<int>(h.value);
        else if (n == "grpc-status")
            f.status = parseInt<int>(h.value);
        else if (n == "grpc-message")
            f.message = percentDecode(h.value);
        else if (n == "grpc-retry-pushback-ms")
            f.pushbackMs =
                parseInt<std::int64_t>(h.value).value_or(-1); // malformed stops retrying, as in C-core
        else if (n == "rpcscope-call-id")
            f.callId = h.value;
        else if (n == "grpc-encoding")
            f.encoding = h.value;
        else if (n == "rpcscope-retry-policy")
            parseRetryPolicy(h.value, &f);
        else if (n == "traceparent")
            parseTraceparent(h.value, &f.traceId, &f.parentSpanId);
    }
    return f;
}

} // namespace rpcscope
