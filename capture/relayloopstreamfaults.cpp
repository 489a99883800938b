// The relay's stream faults: a connection of a hop with a stream fault rule is read by copy and handed to its
// StreamFaults, which frames both directions and says what each side is to get. The decoder sees what the
// client sent and what the client got (the injected answers included), so the timeline shows the attempt as
// the client saw it fail.

#include "clock.h"
#include "relayloop.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace rpcscope {

bool RelayLoop::streamRead(Conn &c, bool fromClient)
{
    size_t limit = m_readBuffer.size();
    const bool throttled = c.fault && c.fault->applied;
    if (throttled) {
        limit = std::min(limit, faultReadAllowance(c, fromClient, steadyNowNs()));
        if (limit == 0) return true;
    }
    char *buf = m_readBuffer.data();
    const ssize_t n = recv(fromClient ? c.cfd : c.sfd, buf, limit, 0);
    const std::int64_t t = steadyNowNs();
    if (n <= 0) return readEnded(c, fromClient, n);
    if (throttled) faultSpent(c, fromClient, size_t(n));
    m_bytes += std::uint64_t(n);
    const auto *bytes = reinterpret_cast<const std::uint8_t *>(buf);
    if (fromClient) {
        if (c.decode) {
            RelayChunk chunk = RelayChunk::bytes(c.id, Direction::ClientToServer, t);
            chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(size_t(n));
            chunk.size = size_t(n);
            std::memcpy(chunk.data.get(), buf, size_t(n));
            toDecoder(c, std::move(chunk));
        }
        c.streams->fromClient(bytes, size_t(n), t);
    } else {
        c.streams->fromServer(bytes, size_t(n), t);
    }
    return streamOutput(c, t);
}

void RelayLoop::streamEarly(Conn &c, std::string early, std::int64_t at)
{
    // The decoder already has these bytes (takeAdopted()).
    c.streams->fromClient(reinterpret_cast<const std::uint8_t *>(early.data()), early.size(), at);
    if (!streamOutput(c, at)) closeConn(c, {});
}

bool RelayLoop::streamOutput(Conn &c, std::int64_t t)
{
    StreamFaults &s = *c.streams;
    for (StreamFaults::Injection &i : s.injections) {
        RelayChunk chunk = RelayChunk::note(c.id, t, std::move(i.what));
        chunk.dir = Direction::ServerToClient;
        chunk.stream = i.stream;
        chunk.faultRule = std::uint32_t(i.rule + 1);
        chunk.faultText = std::move(i.text);
        m_decoder.push(std::move(chunk));
    }
    s.injections.clear();
    if (!s.toClient.empty()) {
        // What the client gets, injected frames and re-encoded header blocks included, is what is decoded.
        if (c.decode) {
            RelayChunk chunk = RelayChunk::bytes(c.id, Direction::ServerToClient, t);
            chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(s.toClient.size());
            chunk.size = s.toClient.size();
            std::memcpy(chunk.data.get(), s.toClient.data(), chunk.size);
            toDecoder(c, std::move(chunk));
        }
        c.down.queued += s.toClient;
        s.toClient.clear();
    }
    if (!s.toServer.empty()) {
        c.up.queued += s.toServer;
        s.toServer.clear();
    }
    if (!s.failure.empty()) {
        c.reset = true;
        closeConn(c, "fault rules: " + s.failure);
        return false;
    }
    if (c.up.pending() && c.sfd >= 0 && !c.connecting && !flush(c, false)) return false;
    if (c.down.pending() && c.cfd >= 0 && !flush(c, true)) return false;
    return true;
}

void RelayLoop::streamPoll(Conn &c, std::int64_t now, int &timeout)
{
    if (c.draining || c.connecting) return;
    const std::int64_t at = c.streams->nextTime();
    if (!at) return;
    const int ms = at <= now ? 0 : int(std::min<std::int64_t>((at - now + 999'999) / 1'000'000, 60'000));
    if (timeout < 0 || ms < timeout) timeout = ms;
}

bool RelayLoop::streamTimers(Conn &c, std::int64_t now)
{
    if (c.draining || c.connecting || c.dead) return true;
    const std::int64_t at = c.streams->nextTime();
    if (!at || at > now) return true;
    c.streams->onTime(now);
    return streamOutput(c, now);
}

} // namespace rpcscope
