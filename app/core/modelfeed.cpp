#include "modelfeed.h"

#include "heapbytes.h"
#include "stallprobe.h"
#include "timelinemodel.h"

#include <QThread>
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>

namespace rpcscope {

namespace {
// Appends start this small and double while they take under half a frame interval: a first append of the
// most events at once could stall the thread before it learns what an event costs.
constexpr size_t kFirstAppend = 2048;
// Within a turn, events go to the model this many at a time, the turn's time checked after each.
constexpr size_t kSlice = 1024;
// A queued batch smaller than this goes to the model together with the small ones after it (up to kSlice
// events in one append), so that a stream of tiny batches (lab decisions, a chatty ingestion client) does not
// make as many appends, each with its signals and its entry in the event log.
constexpr size_t kJoinBelow = 64;
} // namespace

// A queued batch, applied from `from` on: a turn applies batches where they lie, as views (EventSpan), and
// one larger than the turn's share goes back to the front of the queue with `from` past what was applied.
// Merging every queued batch into one, moving each event (576 bytes), was a third of the model thread's time
// under sequential unary calls.
struct QueuedBatch
{
    EventBatch events;
    size_t from = 0;
    size_t bytes = 0; // estimated, of the events from `from` on
    size_t left() const { return events.size() - from; }
};

// Shared by the feed and every sink it made, so a sink that outlives the feed finds it gone instead of a
// dangling pointer.
struct ModelFeedQueue
{
    mutable std::mutex mu;
    mutable std::condition_variable room; // notified after each append, and when waiting must end
    ModelFeedLimits limits;
    std::deque<QueuedBatch> batches;
    size_t events = 0, bytes = 0; // queued, and being applied: the append's batch is memory all the same
    ModelFeed *owner = nullptr;
    QThread *ownerThread = nullptr;
    bool drainPosted = false; // a drain is posted or its timer runs: pushes need not post another
    bool gaveUp = false;      // a wait ran out: no waiting again until the model has caught up by half
    int stopping = 0;
    std::uint64_t appends = 0, applied = 0, shed = 0, waits = 0;

    size_t budgetBytes = 0; // the model's retention budget (0: none), copied on the model's thread

    // The queue counts against the model's budget, so it takes a quarter of it: under a small --keep the
    // queue must not hold more than the timeline it feeds. At least 1 MB, so a small budget does not shed
    // at the first stall, but never more than half: a full queue would otherwise evict the whole timeline.
    size_t byteLimit() const
    {
        if (!budgetBytes) return limits.maxQueuedBytes;
        const size_t least = std::min(size_t(1) << 20, budgetBytes / 2);
        return std::min(limits.maxQueuedBytes, std::max(budgetBytes / 4, least));
    }
    bool full() const { return events >= limits.maxQueuedEvents || bytes >= byteLimit(); }
    bool belowHalf() const { return events <= limits.maxQueuedEvents / 2 && bytes <= byteLimit() / 2; }

    // Under mu.
    void enqueue(EventBatch &&batch, size_t batchBytes)
    {
        events += batch.size();
        bytes += batchBytes;
        batches.push_back({std::move(batch), 0, batchBytes});
        if (drainPosted || !owner) return;
        drainPosted = true;
        ModelFeed *o = owner;
        // Posted events to a destroyed receiver are discarded; the destructor clears `owner` under mu first.
        QMetaObject::invokeMethod(o, "schedule", Qt::QueuedConnection);
    }

    // As the allocator counts it, the batch's spare capacity included.
    static size_t bytesOf(const EventBatch &batch) { return heapbytes::batch(batch); }

    // A relay's batch that found no room in time: what keeps the timeline's connections whole stays, the rest
    // goes, counted in a note on its connection so the gap is not silent.
    void shedInto(EventBatch &batch)
    {
        std::map<std::uint32_t, std::pair<std::uint64_t, std::int64_t>> dropped; // count, last time
        EventBatch kept;
        for (WireEvent &e : batch) {
            if (e.kind == EventKind::ConnectionOpened || e.kind == EventKind::ConnectionClosed ||
                e.kind == EventKind::DecodeError) {
                kept.push_back(std::move(e));
                continue;
            }
            ++shed;
            if (e.connection != 0) {
                auto &d = dropped[e.connection];
                ++d.first;
                d.second = std::max(d.second, e.tNs);
            }
        }
        for (const auto &[conn, d] : dropped) {
            WireEvent note;
            note.kind = EventKind::Notice;
            note.connection = conn;
            note.tNs = d.second;
            note.reason = "the timeline fell behind: " + std::to_string(d.first) +
                          " decoded events of this connection were not shown (bytes still relayed)";
            // Before a close in the same batch, so the connection still takes notes.
            auto close = std::find_if(kept.begin(), kept.end(), [&](const WireEvent &k) {
                return k.connection == conn && k.kind == EventKind::ConnectionClosed;
            });
            kept.insert(close, std::move(note));
        }
        batch = std::move(kept);
    }

    // Whether `n` more events of `b` bytes fit within the bounds. An empty queue takes any one event, so a
    // batch always gets on however small the bounds.
    bool fits(size_t n, size_t b) const
    {
        return (events + n <= limits.maxQueuedEvents && bytes + b <= byteLimit()) || (events == 0 && n <= 1);
    }

    // The bytes `e` takes queued alone, as fitting() counts it: its record in a block of its own and what it
    // owns. What a waiting push waits for must be exactly what fitting() then takes, or a push that finds
    // "room" for the event but then fits none of it turns again at once without ever letting go of the lock,
    // and the model's thread, which alone could make room, waits for that lock for ever.
    static size_t aloneBytes(const WireEvent &e)
    {
        return heapbytes::block(sizeof(WireEvent)) + heapbytes::event(e) - sizeof(WireEvent);
    }

    // How many of `batch`'s events from `from` on fit now (their bytes in *taken), at least one when the
    // queue is empty.
    size_t fitting(const EventBatch &batch, size_t from, size_t *taken) const
    {
        size_t n = 0, owned = 0;
        for (size_t i = from; i < batch.size(); ++i) {
            const size_t more = heapbytes::event(batch[i]) - sizeof(WireEvent);
            if (!fits(n + 1, heapbytes::block((n + 1) * sizeof(WireEvent)) + owned + more)) break;
            owned += more;
            ++n;
        }
        *taken = heapbytes::block(n * sizeof(WireEvent)) + owned;
        return n;
    }

    bool push(EventBatch &&batch)
    {
        if (batch.empty()) return true;
        const size_t whole = bytesOf(batch);
        std::unique_lock lk(mu);
        if (!owner) return false;
        // Never waits on the model's own thread: only it could make room.
        if (QThread::currentThread() == ownerThread) {
            enqueue(std::move(batch), whole);
            return true;
        }
        // The bounds hold with the batch in: what does not fit waits for room, in as many parts as it takes
        // (a batch of a megabyte would otherwise take a quarter-budget queue past it by as much).
        if (fits(batch.size(), whole)) {
            enqueue(std::move(batch), whole);
            return true;
        }
        size_t from = 0;
        while (from < batch.size()) {
            size_t b = 0;
            const size_t n = fitting(batch, from, &b);
            if (n > 0) {
                EventBatch part(std::make_move_iterator(batch.begin() + std::ptrdiff_t(from)),
                                std::make_move_iterator(batch.begin() + std::ptrdiff_t(from + n)));
                enqueue(std::move(part), b);
                from += n;
                continue;
            }
            // No room for the next event: wait for it, unless waiting already ran out.
            if (gaveUp || stopping > 0) break;
            ++waits;
            const size_t next = aloneBytes(batch[from]);
            if (!room.wait_for(lk, limits.giveUpAfter,
                               [&] { return fits(1, next) || stopping > 0 || !owner; }))
                gaveUp = true;
            if (!owner) return false;
        }
        if (from == batch.size()) return true;
        // What found no room in time is shed; what keeps the timeline's connections whole is queued anyway.
        EventBatch rest(std::make_move_iterator(batch.begin() + std::ptrdiff_t(from)),
                        std::make_move_iterator(batch.end()));
        batch = {};
        shedInto(rest);
        if (!rest.empty()) {
            const size_t b = bytesOf(rest);
            enqueue(std::move(rest), b);
        }
        return false;
    }

    bool tryPush(EventBatch &&batch)
    {
        if (batch.empty()) return true;
        const size_t b = bytesOf(batch);
        std::lock_guard lk(mu);
        // With the batch in, the bounds hold; an empty queue takes any batch, so a large one is not refused
        // for ever.
        if (!owner || (events > 0 && !fits(batch.size(), b))) return false;
        enqueue(std::move(batch), b);
        return true;
    }

    bool waitForRoom(std::chrono::milliseconds wait) const
    {
        std::unique_lock lk(mu);
        if (wait.count() > 0 && owner && full() && QThread::currentThread() != ownerThread)
            room.wait_for(lk, wait, [&] { return !full() || !owner; });
        return owner && !full();
    }
};

size_t ModelFeed::bytesOf(const WireEvent &e)
{
    return heapbytes::event(e);
}

ModelFeed *ModelFeed::of(TimelineModel *model)
{
    if (auto *f = model->findChild<ModelFeed *>(QString(), Qt::FindDirectChildrenOnly)) return f;
    return new ModelFeed(model);
}

ModelFeed::ModelFeed(TimelineModel *model, const ModelFeedLimits &limits)
    : QObject(model), m_model(model), m_q(std::make_shared<ModelFeedQueue>()),
      m_perAppend(std::min<size_t>(limits.maxEventsPerAppend, kFirstAppend))
{
    m_q->limits = limits;
    m_q->owner = this;
    m_q->ownerThread = thread();
    m_q->budgetBytes = model->retention().maxBytes;
    // What waits here is memory the capture holds: the model's budget counts it.
    model->addExternalBytes([q = m_q] {
        std::lock_guard lk(q->mu);
        return q->bytes;
    });
    m_timer.setObjectName(QStringLiteral("model feed")); // named in RPCSCOPE_STALLS lines
    m_timer.setSingleShot(true);
    m_timer.setTimerType(Qt::PreciseTimer); // a coarse timer may fire 5% early, inside the interval
    connect(&m_timer, &QTimer::timeout, this, [this] { drainOnce(); });
}

ModelFeed::~ModelFeed()
{
    {
        std::lock_guard lk(m_q->mu);
        m_q->owner = nullptr;
        m_q->batches.clear();
        m_q->events = m_q->bytes = 0;
    }
    m_q->room.notify_all();
}

void ModelFeed::setLimits(const ModelFeedLimits &limits)
{
    {
        std::lock_guard lk(m_q->mu);
        m_q->limits = limits;
    }
    m_perAppend = std::min<size_t>(limits.maxEventsPerAppend, kFirstAppend);
    m_q->room.notify_all();
}

ModelFeedLimits ModelFeed::limits() const
{
    std::lock_guard lk(m_q->mu);
    return m_q->limits;
}

bool ModelFeed::push(EventBatch &&batch)
{
    return m_q->push(std::move(batch));
}

bool ModelFeed::tryPush(EventBatch &&batch)
{
    return m_q->tryPush(std::move(batch));
}

bool ModelFeed::waitForRoom(std::chrono::milliseconds wait) const
{
    return m_q->waitForRoom(wait);
}

std::function<void(EventBatch &&)> ModelFeed::sink() const
{
    return [q = m_q](EventBatch &&batch) { q->push(std::move(batch)); };
}

std::function<bool(std::chrono::milliseconds)> ModelFeed::roomProbe() const
{
    return [q = m_q](std::chrono::milliseconds wait) { return q->waitForRoom(wait); };
}

size_t ModelFeed::queuedEvents() const
{
    std::lock_guard lk(m_q->mu);
    return m_q->events;
}

size_t ModelFeed::queuedBytes() const
{
    std::lock_guard lk(m_q->mu);
    return m_q->bytes;
}

size_t ModelFeed::byteLimit() const
{
    std::lock_guard lk(m_q->mu);
    return m_q->byteLimit();
}

std::uint64_t ModelFeed::appends() const
{
    std::lock_guard lk(m_q->mu);
    return m_q->appends;
}

std::uint64_t ModelFeed::appliedEvents() const
{
    std::lock_guard lk(m_q->mu);
    return m_q->applied;
}

std::uint64_t ModelFeed::shedEvents() const
{
    std::lock_guard lk(m_q->mu);
    return m_q->shed;
}

size_t ModelFeed::mostEventsInOneTurn() const
{
    return m_mostInOneTurn;
}

std::uint64_t ModelFeed::waits() const
{
    std::lock_guard lk(m_q->mu);
    return m_q->waits;
}

void ModelFeed::schedule()
{
    if (m_timer.isActive()) return;
    const auto interval = m_q->limits.interval.count(); // written on this thread only
    const qint64 since = m_sinceAppend.isValid() ? m_sinceAppend.elapsed() : interval;
    if (since >= interval)
        drainOnce();
    else
        m_timer.start(int(interval - since));
}

bool ModelFeed::drainOnce()
{
    QElapsedTimer whole;
    whole.start();
    const long long cpu = StallProbe::threadCpuNs();
    // This turn's share of the queue: whole batches taken out (their events stay where they are), the last
    // one perhaps only in part (`planned` of it).
    std::vector<QueuedBatch> taken;
    size_t total = 0, planned = 0, lastEnd = 0;
    bool more = false;
    {
        std::lock_guard lk(m_q->mu);
        m_q->budgetBytes = m_model->retention().maxBytes; // it may have changed since the last append
        while (!m_q->batches.empty() && total < m_perAppend) {
            planned = std::min(m_q->batches.front().left(), m_perAppend - total);
            total += planned;
            taken.push_back(std::move(m_q->batches.front()));
            m_q->batches.pop_front();
        }
        if (!taken.empty()) lastEnd = taken.back().from + planned;
        more = !m_q->batches.empty() || (!taken.empty() && lastEnd < taken.back().events.size());
        if (!more) m_q->drainPosted = false; // a push from now on posts again
    }
    const bool any = total > 0;
    if (any) {
        // In slices, each one model append, while the turn is within its budget (half a frame interval, the
        // size the append was planned for): the planned size is a guess from what the last appends cost, and
        // one that meets a retention cut or a busy core costs several times that. What is left goes back to
        // the front of the queue for the next turn, so a turn takes its budget and one slice at most.
        const qint64 budgetNs = std::max<qint64>(1, m_q->limits.interval.count()) * 1'000'000 / 2;
        QElapsedTimer took;
        took.start();
        auto endOf = [&](size_t i) { return i + 1 == taken.size() ? lastEnd : taken[i].events.size(); };
        size_t n = 0, i = 0, appliedBytes = 0;
        EventBatch joined;
        // Past batch i: its bytes are applied, and the batch goes back to the queue only if it has more.
        auto done = [&](size_t at) {
            QueuedBatch &b = taken[i];
            const size_t applied = at - b.from;
            const size_t bytes =
                applied == b.left() ? b.bytes : size_t(double(b.bytes) * double(applied) / double(b.left()));
            appliedBytes += bytes;
            b.bytes -= bytes;
            b.from = at;
        };
        while (i < taken.size() && endOf(i) > taken[i].from) {
            const size_t end = endOf(i);
            size_t slice;
            if (end - taken[i].from >= kJoinBelow) {
                slice = std::min(kSlice, end - taken[i].from);
                m_model->appendEvents(EventSpan(taken[i].events).subspan(taken[i].from, slice));
                done(taken[i].from + slice);
                if (taken[i].from == end) ++i;
            } else {
                // Small batches together, moved into one.
                joined.clear();
                size_t parts = 0;
                while (i < taken.size() && endOf(i) - taken[i].from < kJoinBelow &&
                       joined.size() + (endOf(i) - taken[i].from) <= kSlice) {
                    const size_t from = taken[i].from, to = endOf(i);
                    joined.insert(joined.end(),
                                  std::make_move_iterator(taken[i].events.begin() + std::ptrdiff_t(from)),
                                  std::make_move_iterator(taken[i].events.begin() + std::ptrdiff_t(to)));
                    done(to);
                    ++i;
                    ++parts;
                }
                // Batches of several hops (each its own decoder) arrive in the order their decoders finished
                // them: their connections go in time order, so a call another hop saw first gets the lane
                // above.
                if (parts > 1) orderConnectionsByTime(joined);
                slice = joined.size();
                m_model->appendEvents(joined);
            }
            n += slice;
            if (took.nsecsElapsed() >= budgetNs) break;
        }
        m_sinceAppend.start();
        m_mostInOneTurn = std::max(m_mostInOneTurn, n);
        // What is left, first in line and in order. A batch mostly applied keeps only its rest: the applied
        // events are memory the queue no longer counts.
        {
            std::vector<QueuedBatch> rest;
            for (size_t k = 0; k < taken.size(); ++k) {
                QueuedBatch &b = taken[k];
                if (b.left() == 0) continue;
                if (b.from >= b.left()) {
                    b.events = EventBatch(std::make_move_iterator(b.events.begin() + std::ptrdiff_t(b.from)),
                                          std::make_move_iterator(b.events.end()));
                    b.from = 0;
                }
                rest.push_back(std::move(b));
            }
            if (!rest.empty()) {
                std::lock_guard lk(m_q->mu);
                for (auto it = rest.rbegin(); it != rest.rend(); ++it)
                    m_q->batches.push_front(std::move(*it));
                m_q->drainPosted = true;
                more = true;
            }
        }
        {
            StallProbe probe("feed: free the applied batch");
            taken = {}; // freeing the events is part of the append's cost
            joined = {};
        }
        const qint64 ns = took.nsecsElapsed();
        {
            std::lock_guard lk(m_q->mu);
            m_q->events -= std::min(m_q->events, n);
            m_q->bytes -= std::min(m_q->bytes, appliedBytes);
            ++m_q->appends;
            m_q->applied += n;
            if (m_q->belowHalf()) m_q->gaveUp = false;
        }
        m_q->room.notify_all();
        resize(n, ns);
        {
            StallProbe probe("feed: appended signal");
            emit appended(qint64(n));
        }
        if (StallProbe::threshold() >= 0 && whole.elapsed() >= StallProbe::threshold())
            std::fprintf(stderr,
                         "rpcscope: stall: feed: %zu events took %lld ms (%lld on the CPU; append %lld ms), "
                         "next %zu%s\n",
                         n, static_cast<long long>(whole.elapsed()),
                         (StallProbe::threadCpuNs() - cpu) / 1000000, static_cast<long long>(ns / 1000000),
                         m_perAppend, n < total ? " (the rest of the turn's share waits)" : "");
    }
    if (more) m_timer.start(int(m_q->limits.interval.count()));
    return any;
}

void ModelFeed::resize(size_t applied, qint64 ns)
{
    // About half a frame interval of work per append, whatever an event costs the model right now, so an
    // append and a repaint fit in one interval. The cost per event is smoothed: on a busy machine one append
    // may take five times the next, and sizing each from the last alone let a lucky fast one double the next
    // into a stall. Growth is gradual too, and only after a full append (a short queue says nothing).
    if (!applied) return;
    const double perEvent = double(std::max<qint64>(ns, 1)) / double(applied);
    m_nsPerEvent =
        m_nsPerEvent > 0 ? 0.7 * m_nsPerEvent + 0.3 * std::max(perEvent, m_nsPerEvent * 0.25) : perEvent;
    const double intervalNs = double(std::max<qint64>(1, m_q->limits.interval.count())) * 1e6;
    const double want = intervalNs / 2 / std::max(m_nsPerEvent, perEvent);
    size_t next = m_perAppend;
    if (want < double(m_perAppend))
        next = size_t(want);
    else if (applied >= m_perAppend)
        next = size_t(std::min(want, double(m_perAppend) * 1.5));
    const size_t most = std::max<size_t>(1, m_q->limits.maxEventsPerAppend);
    m_perAppend = std::clamp<size_t>(next, std::min<size_t>(256, most), most);
}

void ModelFeed::drainAll()
{
    m_timer.stop();
    for (;;) {
        {
            std::lock_guard lk(m_q->mu);
            if (m_q->batches.empty()) {
                m_q->drainPosted = false;
                return;
            }
        }
        drainOnce();
        m_timer.stop();
    }
}

ModelFeed::Stopping::Stopping(ModelFeed *feed) : m_q(feed ? feed->m_q : nullptr)
{
    if (!m_q) return;
    {
        std::lock_guard lk(m_q->mu);
        ++m_q->stopping;
    }
    m_q->room.notify_all();
}

ModelFeed::Stopping::~Stopping()
{
    if (!m_q) return;
    std::lock_guard lk(m_q->mu);
    --m_q->stopping;
}

} // namespace rpcscope
