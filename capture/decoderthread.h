#pragma once

#include "decoderlimits.h"
#include "events.h"
#include "relaychunk.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rpcscope {

class ConnectionDecoder;

// The relay's decoder thread: decodes the chunks the relay thread pushes, a ConnectionDecoder per connection,
// and hands the events to the sink in batches at most ~16 ms old. The relay thread never waits for it: push()
// only queues, and the relay reads backlog() to stop decoding a connection when the decoder falls behind.
class DecoderThread
{
public:
    using Sink = std::function<void(EventBatch &&)>;

    DecoderThread() = default;
    ~DecoderThread() { stop(); }
    DecoderThread(const DecoderThread &) = delete;
    DecoderThread &operator=(const DecoderThread &) = delete;

    // While one lives on a thread, a push that would wake the decoder leaves the wake until it ends: a relay
    // that hands bytes over before forwarding them forwards first, instead of giving its core to the decoder
    // in between (on two cores that wake put tens of microseconds into every framed call).
    class DeferWakes
    {
    public:
        DeferWakes();
        ~DeferWakes();
        DeferWakes(const DeferWakes &) = delete;
        DeferWakes &operator=(const DeferWakes &) = delete;
    };

    // `label` names the connections on the timeline.
    void start(Sink sink, const DecoderLimits &limits, std::string label);
    // What this decoder holds (below) also goes into `held`, and overHeldLimit() weighs the sum of every
    // decoder sharing it. Null: only its own. Before start().
    void shareHeld(std::shared_ptr<SharedDecoderHeld> held) { m_shared = std::move(held); }
    // Decodes what is queued, flushes the sink, ends the thread and closes the handoff pipes.
    void stop();
    // Waits (up to `timeout`) until every chunk pushed before the call is decoded and its events are with the
    // sink, without stopping: whoever ends a run of traffic learns that its events have all been handed
    // over, not 16 ms or (with the decoder at the idle policy on a busy machine) seconds later. False on
    // timeout. Any thread but the sink's.
    bool sync(std::chrono::milliseconds timeout);
    bool running() const { return m_thread.joinable(); }
    // Whether its backlog has made the capture count as behind (threadpriority.h), until it catches up.
    bool behind() const { return m_behind.load(std::memory_order_relaxed); }
    std::thread::native_handle_type nativeHandle() { return m_thread.native_handle(); }

    // Relay thread only.
    void push(RelayChunk &&c);
    // A handoff pipe read back by the decoder and returned, to be used again; {-1, -1} when none is free.
    std::array<int, 2> takeHandoffPipe();
    // A handoff pipe the relay thread emptied itself.
    void releaseHandoffPipe(const int pipe[2]);

    // Bytes pushed but not yet decoded, now and at most so far.
    // Relaxed: the relay asks on every read only to decide whether to stop handing bytes over.
    size_t backlog() const { return m_backlog.load(std::memory_order_relaxed); }
    size_t peakBacklog() const { return m_peakBacklog.load(); }
    // True when the bytes waiting to be decoded, the connections' decoder state and the batch waiting for
    // the sink (of every decoder sharing them, shareHeld()) are past DecoderLimits::maxDecoderHeldBytes: the
    // relay then stops decoding instead of queueing more. The state counts too: a client that opens streams
    // and never ends them (100,000 of them are 11 MB of per-stream state) is held to the same share.
    // Relay thread.
    bool overHeldLimit(size_t times = 1) const
    {
        const size_t held = m_shared ? m_shared->bytes.load(std::memory_order_relaxed)
                                     : m_backlog.load(std::memory_order_relaxed) +
                                           m_chunkBytes.load(std::memory_order_relaxed) +
                                           m_stateBytes.load(std::memory_order_relaxed) +
                                           m_batchBytes.load(std::memory_order_relaxed);
        return held > m_maxHeld.load(std::memory_order_relaxed) * times;
    }
    size_t heldLimit() const { return m_maxHeld.load(std::memory_order_relaxed); }
    // The note on a connection no longer decoded because of overHeldLimit().
    std::string overHeldLimitReason() const;
    // What the decoder holds, as the allocator counts it: the bytes waiting to be decoded, every
    // connection's decoder state (partial frames, HPACK tables, per-stream state) and the events decoded but
    // not yet taken by the sink (a sink that waits for the model holds a whole batch). Any thread; refreshed
    // every few ms while decoding.
    size_t memoryBytes() const
    {
        return m_backlog.load(std::memory_order_relaxed) + m_chunkBytes.load(std::memory_order_relaxed) +
               m_stateBytes.load(std::memory_order_relaxed) + m_batchBytes.load(std::memory_order_relaxed);
    }

private:
    void loop();
    // `pieceDone` after each piece fed to the decoder (it hands a full batch over).
    bool readPipe(RelayChunk &c, ConnectionDecoder *decoder, EventBatch &batch,
                  const std::function<void()> &pieceDone);

    Sink m_sink;
    DecoderLimits m_limits;
    std::string m_label;
    std::thread m_thread;

    // The queue and the free handoff pipes: all that the relay thread and this one share.
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<RelayChunk> m_queue;
    std::vector<std::array<int, 2>> m_freePipes; // read back and returned by the decoder
    bool m_stopping = false;
    bool m_asleep = false; // waiting until woken, not for its next tick
    // sync(): tickets asked for and the last one answered; m_synced tells the waiters.
    std::uint64_t m_syncAsked = 0;
    std::uint64_t m_syncDone = 0;
    std::condition_variable m_synced;
    std::atomic<size_t> m_backlog{0};
    std::atomic<size_t> m_peakBacklog{0};
    std::atomic<bool> m_behind{false};   // counted in captureFallingBehind() (threadpriority.h)
    std::atomic<size_t> m_chunkBytes{0}; // the queued chunks beyond their bytes
    std::atomic<size_t> m_stateBytes{0}; // the connection decoders
    std::atomic<size_t> m_batchBytes{0}; // the batch being decoded or handed to the sink
    std::atomic<size_t> m_maxHeld{DecoderLimits{}.maxDecoderHeldBytes};
    std::shared_ptr<SharedDecoderHeld> m_shared; // null: the limit is this decoder's alone
    // The batch's bytes and the state's, into m_shared too.
    void setBatchBytes(size_t n) { setShared(m_batchBytes, n); }
    void setStateBytes(size_t n) { setShared(m_stateBytes, n); }
    void setShared(std::atomic<size_t> &mine, size_t n);

    // This thread only: where handoff pipes are read back, and where skipped bytes go.
    std::unique_ptr<std::uint8_t[]> m_readBack;
    int m_devNull = -1; // -2: not available, skipped bytes are read and dropped
};

} // namespace rpcscope
