#include "inflate.h"

#include <zlib.h>

namespace rpcscope {

namespace {

// Decompressed messages beyond this are cut: a few kilobytes of captured gzip may claim gigabytes.
constexpr std::size_t kMaxInflatedBytes = std::size_t(4) << 20;

} // namespace

bool inflateBytes(std::string_view in, std::string *out, bool *complete, std::string *why)
{
    z_stream z{};
    if (inflateInit2(&z, 15 + 32) != Z_OK) // 32: detect the zlib or gzip header
        return false;
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.data()));
    z.avail_in = uInt(in.size());
    char buf[16384];
    int rc = Z_OK;
    *complete = false;
    while (true) {
        z.next_out = reinterpret_cast<Bytef *>(buf);
        z.avail_out = sizeof buf;
        rc = inflate(&z, Z_NO_FLUSH);
        out->append(buf, sizeof buf - z.avail_out);
        if (rc == Z_STREAM_END) {
            *complete = true;
            break;
        }
        if (out->size() > kMaxInflatedBytes) {
            out->resize(kMaxInflatedBytes);
            *why =
                "inflated beyond " + std::to_string(kMaxInflatedBytes >> 20) + " MiB, the rest is not shown";
            break;
        }
        if (rc != Z_OK || (z.avail_in == 0 && z.avail_out != 0)) {
            if (rc != Z_OK && rc != Z_BUF_ERROR) *why = z.msg ? z.msg : "not valid compressed data";
            break;
        }
    }
    inflateEnd(&z);
    return *complete || !out->empty() || why->empty();
}

} // namespace rpcscope
