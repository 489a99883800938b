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

namespace {
// bandwidth: a side is read again once this much of a second's rate has built up (a 20th of a second's worth,
// at least a byte), so a slow rate is kept without a wake-up for every byte.
double bucketOf(std::uint64_t rate)
{
    return std::max(1.0, double(rate) / 20);
}

int msUntil(std::int64_t at, std::int64_t now)
{
    if (at <= now) return 0;
    return int(std::min<std::int64_t>((at - now + 999'999) / 1'000'000, 60'000));
}

void wakeBy(int &timeout, int ms)
{
    if (timeout < 0 || ms < timeout) timeout = ms;
}
} // namespace

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
    m_connectionRules.clear();
    m_streamRules = m_faultRules->framesHop(m_faultHop);
    for (size_t i = 0; i < m_faultRules->rules.size(); ++i) {
        const FaultRule &r = m_faultRules->rules[i];
        if (m_faultRules->enabled[i] && isConnectionAction(r.action) &&
            (r.hop.empty() || r.hop == m_faultHop))
            m_connectionRules.push_back(i);
    }
}

void RelayLoop::chooseFault(Conn &c, std::int64_t now)
{
    refreshFaultRules();
    if (m_streamRules)
        c.streams = std::make_unique<StreamFaults>(m_faults, m_faultHop, m_faultOrigin, m_faultRandom());
    const std::int64_t since = now - m_faultOrigin;
    for (size_t i : m_connectionRules) {
        const FaultRule &r = m_faultRules->rules[i];
        // A connection open when the window opens is hit then: a channel keeps its connection for long.
        const std::int64_t at = std::max(now + r.afterNs, m_faultOrigin + r.windowFromNs);
        if (r.windowToNs && (since >= *r.windowToNs || at >= m_faultOrigin + *r.windowToNs)) continue;
        if (r.nth && !r.nth->contains(m_faults->nextMatch(i))) continue;
        if (r.percent < 100 && std::uniform_real_distribution<double>(0, 100)(m_faultRandom) >= r.percent)
            continue;
        c.fault = std::make_unique<ConnFault>();
        c.fault->rule = i;
        c.fault->action = r.action;
        c.fault->at = at;
        return; // one rule a connection: the first that chooses it
    }
}

void RelayLoop::faultPoll(Conn &c, std::int64_t now, short &ce, short &se, int &timeout)
{
    ConnFault &f = *c.fault;
    if (!f.applied) {
        if (!c.draining) wakeBy(timeout, msUntil(f.at, now));
        return;
    }
    switch (f.action) {
    case FaultAction::Blackhole:
        // Both sides are still read (and what they send dropped), so neither is held up by a full window.
        ce = c.cfd >= 0 ? POLLIN : 0;
        se = c.sfd >= 0 ? POLLIN : 0;
        return;
    case FaultAction::Bandwidth: {
        const std::uint64_t rate = m_faultRules->rules[f.rule].bytesPerSecond;
        for (int side = 0; side < 2; ++side) {
            short &events = side == 0 ? ce : se;
            if (!(events & POLLIN) || faultReadAllowance(c, side == 0, now) > 0) continue;
            events &= short(~POLLIN);
            const double missing = std::min(bucketOf(rate), 1.0 * double(rate)) - f.tokens[side];
            wakeBy(timeout, msUntil(now + std::int64_t(missing * 1e9 / double(rate)) + 1, now));
        }
        return;
    }
    case FaultAction::SlowClose:
        for (int side = 0; side < 2; ++side)
            if (f.closeAt[side] > now) wakeBy(timeout, msUntil(f.closeAt[side], now));
        return;
    default:
        return;
    }
}

bool RelayLoop::faultEvents(Conn &c, short cr, short sr, std::int64_t now)
{
    ConnFault &f = *c.fault;
    if (!f.applied) {
        // A connection already ending (reset, or the target refused) is left to end as it would.
        if (now < f.at || c.draining) return false;
        f.applied = true;
        m_faults->hit(f.rule);
        const std::string what =
            std::string("fault: ") + faultActionName(f.action) + " (rule " + std::to_string(f.rule + 1) + ")";
        m_decoder.push(RelayChunk::note(c.id, now, what));
        switch (f.action) {
        case FaultAction::Close:
        case FaultAction::TcpReset:
            c.reset = f.action == FaultAction::TcpReset; // closeConn() then closes both with RST
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
        case FaultAction::Bandwidth:
            f.refilledAt = now;
            f.tokens[0] = f.tokens[1] = bucketOf(m_faultRules->rules[f.rule].bytesPerSecond);
            break;
        default:
            break;
        }
        return false;
    }
    if (f.action != FaultAction::Blackhole) return false;
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

size_t RelayLoop::faultReadAllowance(Conn &c, bool fromClient, std::int64_t now)
{
    ConnFault &f = *c.fault;
    if (f.action != FaultAction::Bandwidth) return SIZE_MAX;
    const FaultRule &r = m_faultRules->rules[f.rule];
    if (!(fromClient ? r.limitUp : r.limitDown)) return SIZE_MAX;
    const double bucket = bucketOf(r.bytesPerSecond);
    if (now > f.refilledAt) {
        const double added = double(now - f.refilledAt) * double(r.bytesPerSecond) / 1e9;
        for (double &t : f.tokens)
            t = std::min(bucket, t + added);
        f.refilledAt = now;
    }
    const double tokens = f.tokens[fromClient ? 0 : 1];
    // Wait for a whole bucket (or a second's rate, when that is less) rather than read a byte at a time.
    if (tokens < std::min(bucket, double(r.bytesPerSecond))) return 0;
    return size_t(tokens);
}

void RelayLoop::faultSpent(Conn &c, bool fromClient, size_t n)
{
    ConnFault &f = *c.fault;
    if (f.action == FaultAction::Bandwidth) f.tokens[fromClient ? 0 : 1] -= double(n);
}

bool RelayLoop::faultHoldsClose(Conn &c, bool fromClient, std::int64_t now)
{
    ConnFault &f = *c.fault;
    if (!f.applied || f.action != FaultAction::SlowClose) return false;
    std::int64_t &at = f.closeAt[fromClient ? 0 : 1];
    if (at == 0) at = now + m_faultRules->rules[f.rule].byNs;
    return now < at;
}

} // namespace rpcscope
