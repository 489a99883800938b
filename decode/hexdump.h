#pragma once

// Bytes as text: hex dump lines, or one hex string.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rpcscope {

// "0000  0a 03 61 62 63 ...  |..abc|" lines, at most maxBytes of input (then a line saying how many more).
std::vector<std::string> hexDumpLines(std::string_view bytes, std::size_t maxBytes = 4096);
std::string hexString(std::string_view bytes); // "0a0361..."

} // namespace rpcscope
