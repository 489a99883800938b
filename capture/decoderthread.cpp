#include "decoderthread.h"

#include "clock.h"
#include "connectiondecoder.h"
#include "heapbytes.h"
#include "threadpriority.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <unordered_map>

namespace rpcscope {

namespace {
// Decoded events are flushed to the sink at least this often (DESIGN.md: batches of <= 16 ms).
constexpr std::int64_t kFlushIntervalNs = 16'000'000;
constexpr size_t kFlushEvents = 4096;
// Bytes are decoded in pieces of this many, and a batch full after a piece goes out before the next: a
// chunk of a megabyte of tiny frames (a rapid reset) would otherwise decode into one batch of tens of
// thousands of events, grown by doubling, uncounted until handed over and then written and encoded whole:
// the capture's peak memory, never seen by its budget.
constexpr size_t kReadBack = 64 * 1024;
// A batch also goes out once it holds this much, its events (576 bytes each) and what they own: a few hundred
// streams with 64 KiB header lists each (an HPACK-heavy flood) are tens of MB in one batch, which the file's
// encoder then copies again, and 4,096 events are 2.4 MB before they own anything.
constexpr size_t kFlushBytes = 1 << 20;
// The decoder is fed at most this many bytes at a time, so a batch passes kFlushBytes by what one piece
// decodes to: a piece of rapid-reset frames (HEADERS, RST_STREAM) is about 500 events, 300 KB, where one of
// 64 KiB was four times that, and often doubled the batch's array past its reserve.
constexpr size_t kPiece = 16 * 1024;
// The decoder thread is not woken for every read. While reads keep coming it decodes them every
// kDecodeTickNs; only after a tick with nothing to do does it sleep until the relay wakes it. A busy relay
// then wakes nobody per read: on a machine with few cores the client and the server need that time. Events
// keep the time they were read at, and batches go out every kFlushIntervalNs anyway, so nothing shows the
// tick. A spliced read's handoff pipe, or kWakeBacklog bytes waiting, wakes the decoder at once. At 4 ms,
// sequential unary calls (a few thousand a second) keep it ticking, about 250 wake-ups a second, instead of
// being woken by the relay after each quiet millisecond; a batch is due 16 ms after its first bytes were
// read (not decoded), so the tick does not make batches older.
constexpr std::int64_t kDecodeTickNs = 4'000'000;
constexpr size_t kWakeBacklog = 1 << 20;
// Past this backlog the capture is behind: its lowered threads leave the idle policy until the decoder has
// brought the backlog under a quarter of it (threadpriority.h), so other work cannot starve them.
constexpr size_t kBehindBacklog = 1 << 20;
// How often the decoders' state is counted again (memoryBytes()): O(open streams), so not every round.
constexpr std::int64_t kMeasureIntervalNs = 20'000'000;
size_t kChunkOverhead(const RelayChunk &c)
{
    if (!c.data) return sizeof(RelayChunk);
    return sizeof(RelayChunk) + heapbytes::block(c.data.get_deleter().pooled ? kPooledChunkBytes : c.size) -
           c.size;
}
} // namespace

void DecoderThread::start(Sink sink, const DecoderLimits &limits, std::string label)
{
    m_sink = std::move(sink);
    m_limits = limits;
    m_maxHeld.store(limits.maxDecoderHeldBytes, std::memory_order_relaxed);
    m_label = std::move(label);
    m_stopping = false;
    m_thread = std::thread([this] { loop(); });
    // Named for top -H and profilers (at most 15 characters).
    pthread_setname_np(m_thread.native_handle(), "rpcscope-decode");
}

bool DecoderThread::sync(std::chrono::milliseconds timeout)
{
    if (!m_thread.joinable()) return true;
    std::unique_lock lk(m_mutex);
    const std::uint64_t ticket = ++m_syncAsked;
    m_wake.notify_one();
    // Waited for as stop() waits: the decoder leaves the idle policy meanwhile.
    lk.unlock();
    captureFallingBehind(true);
    lk.lock();
    m_synced.wait_for(lk, timeout, [&] { return m_syncDone >= ticket || m_stopping; });
    // Woken by stop() instead: its drain is still to come, so not synced yet.
    const bool done = m_syncDone >= ticket;
    lk.unlock();
    captureFallingBehind(false);
    return done;
}

void DecoderThread::stop()
{
    if (!m_thread.joinable()) return;
    {
        std::lock_guard lk(m_mutex);
        m_stopping = true;
    }
    m_synced.notify_all();
    // What is left to decode is waited for: meanwhile the lowered threads (this decoder, and a sink's that
    // it may wait for) do not wait for a busy machine to go quiet.
    captureFallingBehind(true);
    m_wake.notify_one();
    m_thread.join();
    captureFallingBehind(false);
    // A push after the loop's last look (a close) may have counted the capture behind.
    if (m_behind.exchange(false)) captureFallingBehind(false);
    // Whatever this decoder still counts leaves the shared sum with it (a batch's spare capacity, chunks
    // pushed after its last round).
    const size_t held = m_backlog.exchange(0) + m_chunkBytes.exchange(0) + m_batchBytes.exchange(0) +
                        m_stateBytes.exchange(0);
    if (m_shared) m_shared->bytes.fetch_sub(held, std::memory_order_relaxed);
    for (const std::array<int, 2> &p : m_freePipes) {
        close(p[0]);
        close(p[1]);
    }
    m_freePipes.clear();
    if (m_devNull >= 0) close(m_devNull);
    m_devNull = -1;
}

std::string DecoderThread::overHeldLimitReason() const
{
    const size_t limit = heldLimit();
    const std::string amount =
        limit >= (1u << 20) ? std::to_string(limit >> 20) + " MiB" : std::to_string(limit >> 10) + " KiB";
    if (m_shared)
        return "decoders fell behind (over " + amount +
               " waiting for them across the proxy's targets, or held for their open streams); relaying "
               "continues without decoding";
    return "decoder fell behind (over " + amount +
           " waiting for it, or held for its open streams); relaying continues without decoding";
}

void DecoderThread::setShared(std::atomic<size_t> &mine, size_t n)
{
    if (!m_shared) {
        mine.store(n, std::memory_order_relaxed);
        return;
    }
    // Unsigned: a smaller figure wraps around and comes out of the sum.
    const size_t before = mine.exchange(n, std::memory_order_relaxed);
    m_shared->bytes.fetch_add(n - before, std::memory_order_relaxed);
}

namespace {
thread_local int t_deferDepth = 0;
thread_local std::condition_variable *t_owedWake = nullptr;
} // namespace

DecoderThread::DeferWakes::DeferWakes()
{
    ++t_deferDepth;
}

DecoderThread::DeferWakes::~DeferWakes()
{
    if (--t_deferDepth == 0 && t_owedWake) {
        t_owedWake->notify_one();
        t_owedWake = nullptr;
    }
}

void DecoderThread::push(RelayChunk &&c)
{
    const size_t now = m_backlog += c.size;
    // The chunk itself and its bytes' block header, beyond the bytes the backlog counts: a flood of small
    // reads costs several times its bytes.
    m_chunkBytes.fetch_add(kChunkOverhead(c), std::memory_order_relaxed);
    if (m_shared) m_shared->bytes.fetch_add(c.size + kChunkOverhead(c), std::memory_order_relaxed);
    if (now > m_peakBacklog.load(std::memory_order_relaxed))
        m_peakBacklog.store(now, std::memory_order_relaxed); // only the relay thread writes it
    if (now >= kBehindBacklog && !m_behind.load(std::memory_order_relaxed) && !m_behind.exchange(true))
        captureFallingBehind(true);
    // A handoff pipe must come back soon, and a large backlog is worth decoding now; anything else waits
    // for the decoder's next tick unless it is asleep.
    const bool urgent = c.pipe[0] >= 0 || now >= kWakeBacklog;
    bool wake;
    {
        std::lock_guard lk(m_mutex);
        m_queue.push_back(std::move(c));
        wake = urgent || m_asleep;
    }
    if (!wake) return;
    if (t_deferDepth > 0 && (!t_owedWake || t_owedWake == &m_wake))
        t_owedWake = &m_wake;
    else
        m_wake.notify_one();
}

std::array<int, 2> DecoderThread::takeHandoffPipe()
{
    std::lock_guard lk(m_mutex);
    if (m_freePipes.empty()) return {-1, -1};
    const std::array<int, 2> p = m_freePipes.back();
    m_freePipes.pop_back();
    return p;
}

void DecoderThread::releaseHandoffPipe(const int pipe[2])
{
    std::lock_guard lk(m_mutex);
    m_freePipes.push_back({pipe[0], pipe[1]});
}

// Reads a handoff pipe's c.size bytes into the decoder (none without one), in pieces of kReadBack so that a
// long DATA frame spans them and the decoder can say how much of it it will not look at; that much is spliced
// to /dev/null instead of read. False when the pipe held less than it should.
bool DecoderThread::readPipe(RelayChunk &c, ConnectionDecoder *decoder, EventBatch &batch,
                             const std::function<void()> &pieceDone)
{
    if (!m_readBack) m_readBack = std::make_unique_for_overwrite<std::uint8_t[]>(kReadBack);
    if (m_devNull == -1 && (m_devNull = ::open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0) m_devNull = -2;
    size_t left = c.size;
    while (left > 0) {
        const size_t skip = decoder ? std::min(decoder->skippable(c.dir), left) : left;
        if (skip > 0 && m_devNull >= 0) {
            const ssize_t n =
                splice(c.pipe[0], nullptr, m_devNull, nullptr, skip, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                if (decoder) decoder->skip(c.dir, size_t(n), c.t, batch);
                left -= size_t(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n == 0 || errno == EAGAIN) return false;
            m_devNull = -2; // this system cannot splice to /dev/null: read and drop instead
            continue;
        }
        const size_t want = std::min(left, kReadBack);
        size_t got = 0;
        while (got < want) {
            const ssize_t r = read(c.pipe[0], m_readBack.get() + got, want - got);
            if (r > 0)
                got += size_t(r);
            else if (!(r < 0 && errno == EINTR))
                return false;
        }
        for (size_t at = 0; at < want; at += kPiece) {
            if (decoder) decoder->feed(c.dir, m_readBack.get() + at, std::min(kPiece, want - at), c.t, batch);
            pieceDone();
        }
        left -= want;
    }
    return true;
}

void DecoderThread::loop()
{
    lowerThisThreadsPriority(); // below the relay's threads (threadpriority.h)
    std::unordered_map<std::uint32_t, std::unique_ptr<ConnectionDecoder>> decoders;
    std::vector<std::array<int, 2>> returned; // handoff pipes read back in this round
    auto giveBackPipes = [&] {
        if (returned.empty()) return;
        std::lock_guard lk(m_mutex);
        m_freePipes.insert(m_freePipes.end(), returned.begin(), returned.end());
        returned.clear();
    };
    // The capture stops being behind (push()) once the backlog is well under the bound again.
    auto caughtUp = [this] {
        if (m_behind.load(std::memory_order_relaxed) &&
            m_backlog.load(std::memory_order_relaxed) <= kBehindBacklog / 4 && m_behind.exchange(false))
            captureFallingBehind(false);
    };
    EventBatch batch;
    std::uint64_t syncTicket = 0, syncedUpTo = 0; // sync() tickets: the last seen, the last answered
    std::int64_t firstPending = 0;
    bool busy = false; // the last round had work
    std::int64_t nextMeasure = 0;
    // Counted before a sink that may wait for the model: the batch is held all that time.
    // The next batch starts with room for as many events as the last one had: grown from empty, a batch of
    // a few hundred events would be reallocated and moved (a WireEvent is ~300 bytes) about ten times.
    size_t lastBatch = 0;
    auto handOver = [&] {
        lastBatch = std::min(batch.size(), kFlushEvents);
        if (!m_sink) return;
        orderConnectionsByTime(batch); // calls get their lanes in the order they started (events.h)
        setBatchBytes(heapbytes::batch(batch));
        m_sink(std::move(batch));
        setBatchBytes(0);
    };
    size_t sized = 0, sizedBytes = 0; // the events of `batch` counted so far and what they own
    auto freshBatch = [&] {
        batch = EventBatch();
        // A quarter more: a batch goes out one decoded piece past its flush size, and one that outgrew its
        // reserve would double its array.
        batch.reserve(lastBatch + lastBatch / 4);
        sized = sizedBytes = 0;
    };
    auto measure = [&](bool now) {
        const std::int64_t t = steadyNowNs();
        if (!now && t < nextMeasure) return;
        nextMeasure = t + kMeasureIntervalNs;
        size_t n = heapbytes::hashMap<std::uint32_t, std::unique_ptr<ConnectionDecoder>>(
            decoders.size(), decoders.bucket_count());
        for (const auto &[conn, decoder] : decoders)
            n += heapbytes::block(sizeof(ConnectionDecoder)) - sizeof(ConnectionDecoder) +
                 decoder->memoryBytes();
        setStateBytes(n);
        setBatchBytes(heapbytes::batch(batch));
    };
    // Due to go: kFlushEvents events, or kFlushBytes in its events and what they own (its spare capacity
    // aside: reserved for the events, it would send a batch reserved for many out with a few).
    auto full = [&] {
        return batch.size() >= kFlushEvents || batch.size() * sizeof(WireEvent) + sizedBytes >= kFlushBytes;
    };
    // What the events decoded since the last look own.
    auto sizeNew = [&] {
        for (; sized < batch.size(); ++sized)
            sizedBytes += heapbytes::event(batch[sized]) - sizeof(WireEvent);
    };
    const std::function<void()> flushIfFull = [&] {
        sizeNew();
        // Counted as it grows, not only every kMeasureIntervalNs.
        setBatchBytes(heapbytes::block(batch.capacity() * sizeof(WireEvent)) + sizedBytes);
        if (!full()) return;
        giveBackPipes(); // before a sink that may wait: the relay thread can splice with them meanwhile
        measure(false);
        handOver(); // may wait while the model is behind (app/modelsink.h)
        freshBatch();
    };
    for (;;) {
        std::deque<RelayChunk> work;
        bool stopping = false;
        {
            std::unique_lock lk(m_mutex);
            auto ready = [&] { return m_stopping || !m_queue.empty() || m_syncAsked > m_syncDone; };
            auto untilFlush = [&] {
                return std::chrono::nanoseconds(
                    std::max<std::int64_t>(0, firstPending + kFlushIntervalNs - steadyNowNs()));
            };
            if (busy && !ready()) // reads are coming: take the next ones a tick from now
                m_wake.wait_for(lk, std::chrono::nanoseconds(kDecodeTickNs), ready);
            if (!ready()) { // a quiet tick: sleep until the relay wakes us (or the batch is due)
                m_asleep = true;
                if (batch.empty())
                    m_wake.wait(lk, ready);
                else
                    m_wake.wait_for(lk, untilFlush(), ready);
                m_asleep = false;
            }
            work.swap(m_queue);
            stopping = m_stopping;
            // Every chunk pushed before this ticket was asked for is in `work` or decoded already.
            syncTicket = m_syncAsked;
        }
        busy = !work.empty();
        for (RelayChunk &c : work) {
            const size_t before = batch.size();
            switch (c.kind) {
            case RelayChunk::Open: {
                decoders[c.conn] = std::make_unique<ConnectionDecoder>(c.conn, m_limits);
                WireEvent e;
                e.kind = EventKind::ConnectionOpened;
                e.connection = c.conn;
                e.tNs = c.t;
                e.about = PeerNames{std::move(c.clientPeer), std::move(c.serverPeer)};
                e.label = m_label;
                batch.push_back(std::move(e));
                break;
            }
            case RelayChunk::Data: {
                auto it = decoders.find(c.conn);
                ConnectionDecoder *decoder = it == decoders.end() ? nullptr : it->second.get();
                if (c.pipe[0] < 0) {
                    for (size_t at = 0; decoder && at < c.size; at += kPiece) {
                        decoder->feed(c.dir, c.data.get() + at, std::min(kPiece, c.size - at), c.t, batch);
                        flushIfFull();
                    }
                    break;
                }
                // A spliced read's copy, read back here and then returned. Only what the decoder looks at is
                // read: bytes it can skip (message bodies past the kept bytes) are discarded unread.
                if (!readPipe(c, decoder, batch, flushIfFull) && decoder) {
                    decoders.erase(it);
                    WireEvent e;
                    e.kind = EventKind::DecodeError;
                    e.connection = c.conn;
                    e.dir = c.dir;
                    e.tNs = c.t;
                    e.reason = "lost part of the decoder's copy of the relayed bytes; relaying continues "
                               "without decoding";
                    batch.push_back(std::move(e));
                }
                returned.push_back({c.pipe[0], c.pipe[1]});
                break;
            }
            case RelayChunk::Error:
            case RelayChunk::Note: {
                // An error ends decoding of the connection; a note only says something about it.
                if (c.kind == RelayChunk::Error) decoders.erase(c.conn);
                WireEvent e;
                e.kind = c.kind == RelayChunk::Error ? EventKind::DecodeError : EventKind::Notice;
                e.connection = c.conn;
                e.dir = c.dir;
                e.tNs = c.t;
                e.reason = std::move(c.reason);
                if (c.stream) {
                    e.stream = c.stream;
                    e.about = FaultInjection{c.faultRule, std::move(c.faultText)};
                }
                batch.push_back(std::move(e));
                break;
            }
            case RelayChunk::Close: {
                if (auto it = decoders.find(c.conn); it != decoders.end()) it->second->finish(c.t, batch);
                decoders.erase(c.conn);
                WireEvent e;
                e.kind = EventKind::ConnectionClosed;
                e.connection = c.conn;
                e.tNs = c.t;
                e.reason = std::move(c.reason);
                batch.push_back(std::move(e));
                break;
            }
            }
            if (before == 0 && !batch.empty()) firstPending = std::min(c.t, steadyNowNs());
            // Counted out only now: while this round is decoded (or waits for the model below), the relay
            // still sees it as backlog and stops decoding past maxDecoderHeldBytes rather than queue more.
            m_backlog -= c.size;
            m_chunkBytes.fetch_sub(kChunkOverhead(c), std::memory_order_relaxed);
            if (m_shared) m_shared->bytes.fetch_sub(c.size + kChunkOverhead(c), std::memory_order_relaxed);
            // A round can hold up to the whole backlog; its events go out in batches of kFlushEvents as they
            // come rather than as one batch of millions (a client opening streams as fast as it can).
            flushIfFull();
        }
        giveBackPipes();
        caughtUp();
        measure(!busy);
        sizeNew();
        const bool syncing = syncTicket > syncedUpTo;
        if (!batch.empty() &&
            (stopping || syncing || full() || steadyNowNs() - firstPending >= kFlushIntervalNs)) {
            handOver();
            freshBatch();
        }
        if (syncing) {
            syncedUpTo = syncTicket;
            {
                std::lock_guard lk(m_mutex);
                m_syncDone = syncTicket;
            }
            m_synced.notify_all();
        }
        if (stopping) {
            setStateBytes(0);
            if (m_behind.exchange(false)) captureFallingBehind(false);
            forgetThisThread();
            return;
        }
    }
}

} // namespace rpcscope
