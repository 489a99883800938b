#include "tlskeylog.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace rpcscope {

namespace {

int hexDigit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool fromHex(std::string_view hex, std::string *out)
{
    if (hex.empty() || hex.size() % 2) return false;
    out->clear();
    out->reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
        const int hi = hexDigit(hex[i]), lo = hexDigit(hex[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out->push_back(char(hi << 4 | lo));
    }
    return true;
}

std::string_view nextField(std::string_view *line)
{
    size_t start = 0;
    while (start < line->size() && ((*line)[start] == ' ' || (*line)[start] == '\t'))
        ++start;
    size_t end = start;
    while (end < line->size() && (*line)[end] != ' ' && (*line)[end] != '\t')
        ++end;
    const std::string_view field = line->substr(start, end - start);
    line->remove_prefix(end);
    return field;
}

} // namespace

size_t TlsKeyLog::RandomHash::operator()(const Random &r) const
{
    size_t h;
    std::memcpy(&h, r.data(), sizeof h); // the random is random
    return h;
}

bool TlsKeyLog::load(const std::string &path, std::string *error)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        *error = "cannot read the key log " + path + ": " + std::strerror(errno);
        return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (!parse(text.str(), error)) {
        *error = "key log " + path + ": " + *error;
        return false;
    }
    return true;
}

bool TlsKeyLog::parse(std::string_view text, std::string *error)
{
    m_byRandom.clear();
    size_t lineNo = 0;
    bool anyLine = false;
    while (!text.empty()) {
        ++lineNo;
        const size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::string_view label = nextField(&line);
        if (label.empty() || label[0] == '#') continue;
        std::string TlsSecrets::*slot = nullptr;
        if (label == "CLIENT_RANDOM")
            slot = &TlsSecrets::masterSecret;
        else if (label == "CLIENT_HANDSHAKE_TRAFFIC_SECRET")
            slot = &TlsSecrets::clientHandshake;
        else if (label == "SERVER_HANDSHAKE_TRAFFIC_SECRET")
            slot = &TlsSecrets::serverHandshake;
        else if (label == "CLIENT_TRAFFIC_SECRET_0")
            slot = &TlsSecrets::clientTraffic0;
        else if (label == "SERVER_TRAFFIC_SECRET_0")
            slot = &TlsSecrets::serverTraffic0;
        else if (label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string_view::npos)
            continue; // a label for something not decrypted here (early data, exporters)
        else {
            *error = "line " + std::to_string(lineNo) +
                     " is no key-log line (expected LABEL CLIENT_RANDOM_HEX SECRET_HEX)";
            return false;
        }
        const std::string_view randomHex = nextField(&line);
        const std::string_view secretHex = nextField(&line);
        std::string random, secret;
        if (!fromHex(randomHex, &random) || random.size() != 32) {
            *error = "line " + std::to_string(lineNo) + ": the client random must be 64 hex digits";
            return false;
        }
        if (!fromHex(secretHex, &secret) || secret.size() < 32 || secret.size() > 64 ||
            !nextField(&line).empty()) {
            *error = "line " + std::to_string(lineNo) + ": the secret must be 64 to 128 hex digits";
            return false;
        }
        Random key;
        std::memcpy(key.data(), random.data(), key.size());
        m_byRandom[key].*slot = std::move(secret);
        anyLine = true;
    }
    if (!anyLine) {
        *error = "holds no key line (CLIENT_RANDOM or *_TRAFFIC_SECRET*): is it an NSS key log?";
        return false;
    }
    return true;
}

const TlsSecrets *TlsKeyLog::find(const Random &clientRandom) const
{
    auto it = m_byRandom.find(clientRandom);
    return it == m_byRandom.end() ? nullptr : &it->second;
}

} // namespace rpcscope
