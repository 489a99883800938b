#pragma once

// Masking of sensitive header values in everything rpcscope writes out. Only Headers events carry header
// values; the gRPC fields parsed from them (path, status, timeout, call id...) stay, because the timeline is
// built from them.

#include "events.h"

#include <string>
#include <string_view>
#include <vector>

namespace rpcscope {

inline constexpr char kRedactedValue[] = "<redacted>";

struct Redaction
{
    bool enabled = true;
    std::vector<std::string> extraNames; // user-configured header names (case-insensitive)

    // authorization, proxy-authorization, cookie, set-cookie
    static const std::vector<std::string> &defaultNames();
    // Every masked name, lowercase; empty when disabled.
    std::vector<std::string> names() const;
    bool masks(std::string_view headerName) const;
    // Replaces the value of every masked header in the batch; returns how many were masked.
    size_t apply(EventBatch &batch) const;
};

} // namespace rpcscope
