#include "hexdump.h"

#include <algorithm>
#include <cstdio>

namespace rpcscope {

std::vector<std::string> hexDumpLines(std::string_view bytes, std::size_t maxBytes)
{
    std::vector<std::string> lines;
    const std::size_t n = std::min(bytes.size(), maxBytes);
    char buf[32];
    for (std::size_t row = 0; row < n; row += 16) {
        std::snprintf(buf, sizeof buf, "%04zx ", row);
        std::string line = buf;
        std::string ascii;
        for (std::size_t i = row; i < row + 16; ++i) {
            if (i - row == 8) line += ' ';
            if (i < n) {
                const auto c = static_cast<unsigned char>(bytes[i]);
                std::snprintf(buf, sizeof buf, " %02x", c);
                line += buf;
                ascii += (c >= 0x20 && c < 0x7f) ? char(c) : '.';
            } else {
                line += "   ";
            }
        }
        lines.push_back(line + "  |" + ascii + "|");
    }
    if (n < bytes.size()) lines.push_back("… " + std::to_string(bytes.size() - n) + " more bytes");
    return lines;
}

std::string hexString(std::string_view bytes)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        out += digits[(static_cast<unsigned char>(c) >> 4) & 0xf];
        out += digits[static_cast<unsigned char>(c) & 0xf];
    }
    return out;
}

} // namespace rpcscope
