// The relay's connection faults: a fault rule that chose a connection at accept time starts when its time
// comes and then blackholes, closes, resets, throttles or slowly closes it. Only a connection a rule chose
// (Conn::fault) ever comes here, so a capture without such rules relays exactly as before.

#include "clock.h"
#include "relayloop.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rpcscope {

void RelayLoop::setFaults(std::shared_ptr<FaultSet> faults, const std::string &hopLabel)
{
    m_faults = std::move(faults);
    m_faultHop = hopLabel;
    m_faultRules.reset();
    m_connectionRules.clear();
    m_faultOrigin = steadyNowNs();
    refreshFaultRules();
}

void RelayLoop::refreshFaultRules()
{
    if (!m_faults || (m_faultRules && m_faultRules->version == m_faults->version())) return;
    m_faultRules = m_faults->snapshot();
    m_streamRules = m_faultRules->framesHop(m_faultHop);
    m_connectionRules = ConnectionFault::rulesFor(*m_faultRules, m_faultHop);
}

void RelayLoop::chooseFault(Conn &c, std::int64_t now)
{
    refreshFaultRules();
    if (m_streamRules)
        c.streams = std::make_unique<StreamFaults>(m_faults, m_faultHop, m_faultOrigin, m_faultRandom());
    c.fault = ConnectionFault::choose(*m_faults, *m_faultRules, m_connectionRules, m_faultOrigin, now,
                                      m_faultRandom);
}

void RelayLoop::faultPoll(Conn &c, std::int64_t now, short &ce, short &se, int &timeout)
{
    // A connection already ending (reset, or the target refused) is left to end as it would.
    if (!c.fault->applied() && c.draining) return;
    bool clientIn = ce & POLLIN, serverIn = se & POLLIN;
    c.fault->poll(now, clientIn, serverIn, c.cfd >= 0, c.sfd >= 0, timeout);
    if (c.fault->applied() && c.fault->action() == FaultAction::Blackhole) ce = se = 0;
    ce = short((ce & ~POLLIN) | (clientIn ? POLLIN : 0));
    se = short((se & ~POLLIN) | (serverIn ? POLLIN : 0));
}

bool RelayLoop::faultEvents(Conn &c, short cr, short sr, std::int64_t now)
{
    ConnectionFault &f = *c.fault;
    if (!f.applied()) {
        // A connection already ending (reset, or the target refused) is left to end as it would.
        std::string what;
        if (c.draining || !f.start(*m_faults, now, &what)) return false;
        m_decoder.push(RelayChunk::note(c.id, now, what));
        switch (f.action()) {
        case FaultAction::Close:
        case FaultAction::TcpReset:
            c.reset = f.action() == FaultAction::TcpReset; // closeConn() then closes both with RST
            closeConn(c, what);
            return true;
        case FaultAction::Blackhole:
            // Whatever was on its way is dropped, and a connect still going on is given up: nothing more
            // reaches either side.
            for (HalfConnection *h : {&c.up, &c.down}) {
                h->queued.clear();
                h->queuedOff = 0;
                closePipes(*h);
            }
            if (c.connecting && c.sfd >= 0) {
                ::close(c.sfd);
                c.sfd = -1;
                c.connecting = false;
            }
            return true; // the events of this round were polled for relaying; the next round reads and drops
        default:
            return false;
        }
    }
    if (f.action() != FaultAction::Blackhole) return false;
    if (c.cfd >= 0 && (cr & (POLLIN | POLLHUP | POLLERR))) blackholeRead(c, true);
    if (!c.dead && c.sfd >= 0 && (sr & (POLLIN | POLLHUP | POLLERR))) blackholeRead(c, false);
    return true;
}

void RelayLoop::blackholeRead(Conn &c, bool fromClient)
{
    const int fd = fromClient ? c.cfd : c.sfd;
    const ssize_t n = recv(fd, m_readBuffer.data(), m_readBuffer.size(), 0);
    const std::int64_t t = steadyNowNs();
    if (n > 0) {
        // The decoder still sees what was sent into the hole: the timeline shows the calls the server never
        // got.
        if (c.decode) {
            RelayChunk chunk = RelayChunk::bytes(
                c.id, fromClient ? Direction::ClientToServer : Direction::ServerToClient, t);
            chunk.data = std::make_unique_for_overwrite<std::uint8_t[]>(size_t(n));
            chunk.size = size_t(n);
            std::memcpy(chunk.data.get(), m_readBuffer.data(), size_t(n));
            toDecoder(c, std::move(chunk));
        }
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (fromClient) { // the client gave up: the connection is over
        closeConn(c, n == 0 ? "closed by client"
                            : std::string("client reset the connection (") + std::strerror(errno) + ")");
        return;
    }
    // The server went away; the client, in the hole, is not told.
    ::close(c.sfd);
    c.sfd = -1;
}

} // namespace rpcscope
