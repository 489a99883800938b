// The relay's stream faults: a connection of a hop with a stream fault rule is read by copy and handed to its
// StreamFaults, which frames both directions and says what each side is to get. The decoder sees what the
// client sent and what the client got (the injected answers included), so the timeline shows the attempt as
// the client saw it fail.

#include "clock.h"
#include "relayloop.h"
#include "streamfaultoutput.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace rpcscope {

bool RelayLoop::streamRead(Conn &c, bool fromClient)
{
    size_t limit = m_readBuffer.size();
    const bool throttled = c.fault && c.fault->applied();
    if (throttled) {
        limit = std::min(limit, c.fault->readAllowance(fromClient, steadyNowNs()));
        if (limit == 0) return true;
    }
    char *buf = m_readBuffer.data();
    const ssize_t n = recv(fromClient ? c.cfd : c.sfd, buf, limit, 0);
    const std::int64_t t = steadyNowNs();
    if (n <= 0) return readEnded(c, fromClient, n);
    if (throttled) c.fault->spent(fromClient, size_t(n));
    m_bytes += std::uint64_t(n);
    const DecoderThread::DeferWakes forwardFirst; // the bytes go to the decoder first, but out first
    const auto *bytes = reinterpret_cast<const std::uint8_t *>(buf);
    if (fromClient) {
        if (c.decode) toDecoder(c, copiedBytes(c.id, Direction::ClientToServer, t, buf, size_t(n)));
        c.streams->fromClient(bytes, size_t(n), t);
    } else {
        c.streams->fromServer(bytes, size_t(n), t);
    }
    const bool ok = streamOutput(c, t);
    if (ok)
        m_steering.read(fromClient ? c.cfd : c.sfd, fromClient, size_t(n)); // after forwarding, as copySide
    return ok;
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
    const auto note = [this](RelayChunk &&chunk) { m_decoder.push(std::move(chunk)); };
    const auto decode = [this, &c](RelayChunk &&chunk) { toDecoder(c, std::move(chunk)); };
    if (!takeStreamOutput(s, c.id, t, c.up.queued, c.down.queued, note,
                          c.decode ? std::function<void(RelayChunk &&)>(decode) : nullptr)) {
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
    const int ms = c.streams->pollTimeout(now);
    if (ms >= 0 && (timeout < 0 || ms < timeout)) timeout = ms;
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
