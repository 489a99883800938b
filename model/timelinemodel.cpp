#include "timelinemodel.h"

#include "clientoutcome.h"
#include "stallprobe.h"

#include <QDateTime>
#include <algorithm>

namespace rpcscope {

namespace {
// internalId 0 marks a call row; k > 0 marks an attempt of the call with serial k - 1 (Call::serial), which
// stays right while retention removes the rows above it.
constexpr quintptr kCallRow = 0;

QString statusText(const Attempt *a)
{
    return a ? QString::fromStdString(a->outcomeLabel()) : QStringLiteral("in flight");
}
} // namespace

TimelineModel::TimelineModel(QObject *parent) : QAbstractItemModel(parent)
{
    qRegisterMetaType<rpcscope::EventBatch>("rpcscope::EventBatch");
}

void TimelineModel::setOrigin(qint64 steadyNs, qint64 wallNs)
{
    m_store.setOrigin(steadyNs, wallNs);
}

size_t TimelineModel::storeRow(int row) const
{
    // While evicted rows are being announced, the store still holds them: skip the runs already removed.
    size_t r = size_t(row);
    for (const auto &[first, count] : m_removedRuns)
        if (first <= r) r += count;
    return r;
}

int TimelineModel::modelRow(size_t storeRow) const
{
    size_t r = storeRow;
    for (const auto &[first, count] : m_removedRuns)
        if (first + count <= storeRow) r -= count;
    return int(r);
}

QModelIndex TimelineModel::index(int row, int column, const QModelIndex &parent) const
{
    if (row < 0 || column < 0 || column >= ColumnCount) return {};
    if (!parent.isValid()) {
        if (row >= int(m_publishedAttempts.size())) return {};
        return createIndex(row, column, kCallRow);
    }
    if (parent.internalId() != kCallRow || parent.column() != 0) return {};
    if (parent.row() >= int(m_publishedAttempts.size()) || row >= m_publishedAttempts[parent.row()])
        return {};
    return createIndex(row, column, quintptr(m_store.calls()[storeRow(parent.row())].serial) + 1);
}

QModelIndex TimelineModel::parent(const QModelIndex &child) const
{
    if (!child.isValid() || child.internalId() == kCallRow) return {};
    const auto call = m_store.indexOfSerial(child.internalId() - 1);
    return call ? createIndex(modelRow(*call), 0, kCallRow) : QModelIndex();
}

int TimelineModel::rowCount(const QModelIndex &parent) const
{
    if (!parent.isValid()) return int(m_publishedAttempts.size());
    if (parent.internalId() != kCallRow || parent.column() != 0) return 0;
    return m_publishedAttempts[parent.row()];
}

int TimelineModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant TimelineModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid()) return {};
    const bool isCall = index.internalId() == kCallRow;
    const std::optional<size_t> row =
        isCall ? std::optional(storeRow(index.row())) : m_store.indexOfSerial(index.internalId() - 1);
    if (!row) return {};
    const Call &call = m_store.calls()[*row];
    const Attempt *attempt = isCall ? nullptr : &call.attempts[index.row()];
    const qint64 origin = m_store.originNs();
    const qint64 start = isCall ? call.startNs() : attempt->startNs;
    const std::optional<std::int64_t> end = isCall ? call.endNs() : attempt->endNs;

    if (role == StartNsRole) return start - origin;
    if (role == EndNsRole) return end ? QVariant(qint64(*end - origin)) : QVariant();
    if (role == StatusCodeRole) {
        const Attempt *a = isCall ? call.outcomeAttempt() : (attempt->ended() ? attempt : nullptr);
        return (a && a->status) ? QVariant(*a->status) : QVariant();
    }
    if (isCall) {
        switch (role) {
        case ParentCallRole:
            return call.parentCall ? QVariant(int(*call.parentCall)) : QVariant();
        case NestingDepthRole:
            return m_store.nestingDepth(*row);
        case TraceIdRole:
            return QString::fromStdString(call.traceId);
        case HopRole:
            return QString::fromStdString(call.hop);
        case DeadlineFlagsRole: {
            QStringList flags;
            for (const std::string &f : call.deadlineFlags())
                flags << QString::fromStdString(f);
            return flags;
        }
        case ParentBudgetNsRole:
            return call.parentBudgetNs ? QVariant(qint64(*call.parentBudgetNs)) : QVariant();
        case ClientStatusCodeRole: {
            const ClientOutcome client = clientOutcome(call, m_store);
            return client.status ? QVariant(*client.status) : QVariant();
        }
        case ClientOutcomeWhyRole:
            return QString::fromStdString(clientOutcome(call, m_store).why);
        }
    }
    if (role == Qt::ToolTipRole && index.column() == ColStatus) {
        if (!isCall) {
            const std::string note = attemptClientNote(call, size_t(index.row()));
            return note.empty() ? QVariant() : QVariant(QString::fromStdString(note));
        }
        const ClientOutcome client = clientOutcome(call, m_store);
        if (client.why.empty()) return {};
        return QStringLiteral("client got %1: %2")
            .arg(QString::fromStdString(client.label()), QString::fromStdString(client.why));
    }
    if (role != Qt::DisplayRole) return {};

    switch (index.column()) {
    case ColName:
        return isCall ? QString::fromStdString(call.key) : QStringLiteral("attempt %1").arg(index.row() + 1);
    case ColMethod:
        return QString::fromStdString(call.method);
    case ColStatus:
        // A call row says what its client got when the wire only implies it.
        if (isCall) return QString::fromStdString(outcomeWithClient(call, clientOutcome(call, m_store)));
        return statusText(attempt->ended() ? attempt : nullptr);
    case ColStart:
        return QStringLiteral("%1 ms").arg(double(start - origin) / 1e6, 0, 'f', 3);
    case ColDuration:
        return end ? QStringLiteral("%1 ms").arg(double(*end - start) / 1e6, 0, 'f', 3) : QString();
    }
    return {};
}

QVariant TimelineModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case ColName:
        return QStringLiteral("Call / attempt");
    case ColMethod:
        return QStringLiteral("Method");
    case ColStatus:
        return QStringLiteral("Status");
    case ColStart:
        return QStringLiteral("Start");
    case ColDuration:
        return QStringLiteral("Duration");
    }
    return {};
}

void TimelineModel::setKeepHeaders(bool keep)
{
    if (!keep)
        m_headers.reset();
    else if (!m_headers)
        m_headers.emplace();
}

void TimelineModel::appendBatch(const EventBatch &batch)
{
    if (m_divert && m_divert(batch)) return;
    deliver(batch);
}

void TimelineModel::appendEvents(EventSpan events)
{
    // The divert takes a batch of its own (a run recorded while another is shown: seldom).
    if (m_divert && m_divert(EventBatch(events.begin(), events.end()))) return;
    deliver(events);
}

void TimelineModel::deliver(EventSpan events)
{
    // A live batch delivered while a file is replayed (the event loop runs for its progress dialog) follows
    // the file, as it did when a file was replayed at once.
    if (m_replaying) {
        m_heldDuringReplay.emplace_back(events.begin(), events.end());
        return;
    }
    applyBatch(events);
}

StoreChanges TimelineModel::take(EventSpan batch)
{
    if (m_headers) m_headers->record(batch);
    StoreChanges ch;
    m_store.apply(batch, &ch);
    m_log.append(batch);
    m_stats.update(m_store, ch);
    return ch;
}

void TimelineModel::applyBatch(EventSpan batch)
{
    // A memory budget is checked between appends, so one large append (a feed that coalesced many batches of
    // a flood, tens of thousands of new streams) could hold well past it before retention ran: large batches
    // go in slices, each followed by the check.
    constexpr size_t kSlice = 2048;
    if (m_retention.maxBytes && batch.size() > kSlice) {
        for (size_t from = 0; from < batch.size(); from += kSlice)
            applyBatch(batch.subspan(from, std::min(kSlice, batch.size() - from)));
        return;
    }
    // Before the rows are announced, so whoever reacts to them finds the headers already there.
    std::optional<StallProbe> step(std::in_place, "append: take");
    const StoreChanges ch = take(batch);
    step.emplace("append: rows and retention");

    // Existing calls that gained attempts: one insertion per call at its end, and one per attempt placed
    // before others (with the appends between), where it went, so a selected attempt row stays on its
    // attempt.
    std::vector<StoreChanges::Placed> byCall = ch.attemptsPlacedBefore; // rare: mostly empty
    std::stable_sort(
        byCall.begin(), byCall.end(),
        [](const StoreChanges::Placed &a, const StoreChanges::Placed &b) { return a.call < b.call; });
    size_t placed = 0;
    for (size_t call : ch.callsWithNewAttempts) {
        const QModelIndex parent = index(int(call), 0);
        auto append = [&](int upTo) {
            if (const int have = m_publishedAttempts[call]; upTo > have) {
                beginInsertRows(parent, have, upTo - 1);
                m_publishedAttempts[call] = upTo;
                endInsertRows();
            }
        };
        for (; placed < byCall.size() && byCall[placed].call <= call; ++placed) {
            const StoreChanges::Placed &p = byCall[placed];
            if (p.call != call) continue;
            append(int(p.had));
            beginInsertRows(parent, int(p.at), int(p.at));
            ++m_publishedAttempts[call];
            endInsertRows();
        }
        append(int(m_store.calls()[call].attempts.size()));
    }
    for (size_t call : ch.changedCalls) {
        const QModelIndex callIndex = index(int(call), 0);
        emit dataChanged(callIndex, index(int(call), ColumnCount - 1));
        if (const int n = m_publishedAttempts[call]; n > 0)
            emit dataChanged(index(0, 0, callIndex), index(n - 1, ColumnCount - 1, callIndex));
    }

    // New calls in one insertion; their attempts come with them.
    const int first = int(m_publishedAttempts.size());
    const int last = int(m_store.calls().size()) - 1;
    if (last >= first) {
        beginInsertRows({}, first, last);
        for (int i = first; i <= last; ++i)
            m_publishedAttempts.push_back(int(m_store.calls()[i].attempts.size()));
        endInsertRows();
    }
    checkRetention();
    step.emplace("append: timelineChanged");
    emit timelineChanged();
}

void TimelineModel::checkRetention()
{
    if (!m_retention.maxBytes && !m_retention.maxCalls && !m_retention.maxAgeNs) return;
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const size_t calls = m_store.calls().size();
    // The call count and the oldest call's age cost nothing to check; the memory (O(calls / 64)) once a
    // second, when the calls grew by a tenth, or when they may have filled the room the last check saw
    // left in the budget.
    const size_t step = std::max<size_t>(64, m_callsAtLastCheck / 10);
    const bool overCalls = m_retention.maxCalls && calls > m_retention.maxCalls;
    const bool overAge = m_retention.maxAgeNs && calls &&
                         m_store.calls().front().startNs() < m_store.latestNs() - m_retention.maxAgeNs;
    // Records that are no calls (a flood of frames on a connection without any, a burst of ingested events)
    // grow it too: check once they may have added a twentieth of the budget. (A fortieth made a capture with
    // --keep 2 check so often that its relays shed calls while the model caught up.)
    // A twentieth, but at most 8 MB: between two checks a large budget grew by the whole step past the 95%
    // at which eviction starts (a 2 M-event burst in the window peaked 9-14 MB over its 512 MB).
    const size_t cheap = cheapBytes();
    const bool grew = m_retention.maxBytes &&
                      cheap > m_cheapBytesAtLastCheck + std::min<size_t>(m_retention.maxBytes / 20, 8 << 20);
    if (overCalls || overAge || grew || now - m_lastRetentionCheckMs >= 1000 ||
        calls >= m_callsAtLastCheck + step || (m_nextCheckCalls && calls >= m_nextCheckCalls))
        enforceRetention();
}

size_t TimelineModel::statsRowsFor(size_t maxBytes)
{
    if (!maxBytes) return CallStats::kDefaultMaxKeyedRows;
    // A row that saw a few calls holds 3-4 KiB (its map node and two latency recorders' first bins).
    return std::clamp<size_t>(maxBytes / 8 / 4096, 64, CallStats::kDefaultMaxKeyedRows);
}

void TimelineModel::setRetention(const RetentionPolicy &policy)
{
    m_retention = policy;
    m_stats.setMaxKeyedRows(statsRowsFor(policy.maxBytes));
    enforceRetention();
}

bool TimelineModel::enforceRetention()
{
    m_lastRetentionCheckMs = QDateTime::currentMSecsSinceEpoch();
    m_callsAtLastCheck = m_store.calls().size();
    m_cheapBytesAtLastCheck = cheapBytes();
    m_nextCheckCalls = 0;
    RetentionPolicy storePolicy = m_retention;
    // Small chunks: each eviction's work on the GUI thread is proportional to the calls it evicts, and the
    // views follow it without rebuilding, so frequent small steps keep every frame short.
    // A file being replayed has no view to keep smooth: larger steps, fewer passes over the store.
    storePolicy.evictTo = m_replaying ? 0.9 : 0.985;
    size_t storeBytes = 0;
    if (m_retention.maxBytes) {
        // The budget covers the store, the log and what others hold; the log shrinks with the store, so give
        // the store its share of what the others leave. Evict from 95% of the budget on, so the calls
        // arriving between two checks still fit in it.
        const size_t limit = m_retention.maxBytes / 20 * 19;
        // The records the statistics keep per call go with their calls: they count as the store's; their
        // rows stay whatever goes. What others hold counts once: the reserve is the most they may come to
        // hold, so what they hold now is part of it, not beside it.
        // What they hold counts at most three quarters of the budget, so that the calls keep a quarter:
        // that holds for a reserve set for a larger budget than the one now in force (changed while
        // capturing), and for what they hold past their reserve. Under a small --keep the decoders' and the
        // queues' floors are more than the whole budget; counted in full they left the calls nothing, and
        // every call went, though evicting them could not bring the session within the budget anyway.
        // The same goes for everything else no eviction frees: the inspector's messages, the statistics'
        // rows and the store's floor (its connections and self-bounded indices). Under a small budget those
        // may come to most of it (a storm's latencies spread the rows' bins); counted in full, the store's
        // share of the room fell below its own floor and a pass evicted every call.
        const size_t mostHeld = m_retention.maxBytes / 4 * 3;
        const size_t reserve = std::min(m_externalReserve, mostHeld);
        size_t floor = 0;
        storeBytes = m_store.approxBytes(&floor);
        const size_t others =
            std::min(otherBytes(std::min(std::max(externalBytes(), reserve), mostHeld)) + floor, mostHeld);
        const size_t room = std::max(limit > others ? limit - others : 0, limit / 20);
        const size_t storeCalls = storeBytes - std::min(storeBytes, floor);
        const size_t total = storeCalls + m_log.memoryBytes() + callBytes();
        // The store's limit is its floor and its share of the room.
        storePolicy.maxBytes = std::max<size_t>(
            1, floor + size_t(double(room) * double(storeCalls) / double(std::max<size_t>(1, total))));
        storePolicy.floorBytes = floor;
        // Check again before the limit can be reached: after half the calls that would fill the room left.
        const size_t calls = std::max<size_t>(1, m_store.calls().size());
        const double perCall = double(total) / double(calls);
        if (total < room) m_nextCheckCalls = calls + size_t(double(room - total) / perCall * 0.5);
        if (total <= room && !m_retention.maxCalls && !m_retention.maxAgeNs) return false;
    }
    StallProbe whole("retention: the whole pass");
    std::optional<StallProbe> step(std::in_place, "retention: plan");
    const std::vector<size_t> evicted = m_store.planEviction(storePolicy, storeBytes);
    const std::int64_t ageCut = m_store.planAgeCut(storePolicy, evicted, storeBytes);
    step.emplace("retention: announce");
    if (evicted.empty() && ageCut == INT64_MIN) return false;
    // Announced as row removals, not a reset: a view keeps its place, its selection and its caches. Runs of
    // consecutive evicted rows go from the last one up, so the rows above a run keep their numbers; the store
    // evicts once they are all announced.
    if (!m_replaying) emit aboutToEvictCalls(evicted);
    std::vector<std::pair<size_t, size_t>> runs;
    for (size_t i : evicted) {
        if (!runs.empty() && runs.back().first + runs.back().second == i)
            ++runs.back().second;
        else
            runs.emplace_back(i, 1);
    }
    for (auto run = runs.rbegin(); run != runs.rend() && !m_replaying; ++run) {
        beginRemoveRows({}, int(run->first), int(run->first + run->second - 1));
        m_publishedAttempts.erase(m_publishedAttempts.begin() + std::ptrdiff_t(run->first),
                                  m_publishedAttempts.begin() + std::ptrdiff_t(run->first + run->second));
        m_removedRuns.insert(m_removedRuns.begin(), *run);
        endRemoveRows();
    }
    TimelineStore::Evicted gone;
    step.emplace("retention: store");
    m_stats.forget(m_store, evicted);
    m_store.evict(evicted, &gone, ageCut);
    m_stats.afterEviction(m_store);
    m_removedRuns.clear();
    step.emplace("retention: log");
    const size_t logBytes = m_log.memoryBytes();
    m_log.evict(gone.streams, gone.keys, gone.keepFromNs, std::max(m_store.retentionCutNs(), gone.untilNs),
                gone.pinnedKept, gone.framesBeforeNs);
    if (ageCut != INT64_MIN)
        m_store.addRetentionLossBytes(logBytes - std::min(logBytes, m_log.memoryBytes()));
    m_callsAtLastCheck = m_store.calls().size();
    m_cheapBytesAtLastCheck = cheapBytes();
    m_nextCheckCalls = 0;
    if (m_retention.maxBytes) {
        // Small steps leave little room: check again after half the calls that would fill it.
        const size_t limit = m_retention.maxBytes / 20 * 19, total = memoryBytes();
        const double perCall = double(total) / double(std::max<size_t>(1, m_store.calls().size()));
        m_nextCheckCalls =
            m_callsAtLastCheck + (total < limit ? size_t(double(limit - total) / perCall * 0.5) : 0);
    }
    step.emplace("retention: callsEvicted");
    if (!m_replaying) emit callsEvicted(evicted);
    return true;
}

size_t TimelineModel::callBytes() const
{
    const size_t published = m_publishedAttempts.capacity() * sizeof(int);
    // As glibc's malloc counts a block: an 8-byte header, 16-byte steps.
    return m_stats.callRecordBytes() +
           (published ? std::max<size_t>(32, (published + 8 + 15) & ~size_t(15)) : 0);
}

void TimelineModel::setPinned(int callRow, bool pinned)
{
    if (callRow < 0 || size_t(callRow) >= m_store.calls().size()) return;
    m_store.setPinned(size_t(callRow), pinned);
    emit dataChanged(index(callRow, 0), index(callRow, ColumnCount - 1));
    emit timelineChanged();
}

void TimelineModel::replay(const CaptureData &data)
{
    beginResetModel();
    m_store.clear();
    m_log.clear();
    if (m_headers) m_headers->clear();
    m_store.setRecordFrames(data.info.recordFrames);
    if (data.info.hasOrigin) m_store.setOrigin(data.info.originNs, data.info.originWallNs);
    for (const EventBatch &batch : data.batches) {
        if (m_headers) m_headers->record(batch);
        m_store.apply(batch);
        m_log.append(batch);
    }
    m_stats.rebuild(m_store);
    m_publishedAttempts.clear();
    for (const Call &call : m_store.calls())
        m_publishedAttempts.push_back(int(call.attempts.size()));
    endResetModel();
    emit timelineChanged();
}

void TimelineModel::beginReplay(const CaptureInfo &info)
{
    beginResetModel();
    m_replaying = true;
    m_store.clear();
    m_log.clear();
    m_stats.clear();
    if (m_headers) m_headers->clear();
    m_publishedAttempts.clear();
    m_store.setRecordFrames(info.recordFrames);
    if (info.hasOrigin) m_store.setOrigin(info.originNs, info.originWallNs);
    m_lastRetentionCheckMs = QDateTime::currentMSecsSinceEpoch();
    m_callsAtLastCheck = 0;
    m_cheapBytesAtLastCheck = 0;
    m_nextCheckCalls = 0;
}

void TimelineModel::replayBatch(const EventBatch &batch)
{
    // Statistics kept up as live (evicted calls stay counted); rebuilt at the end when nothing was evicted.
    take(batch);
    checkRetention();
}

void TimelineModel::endReplay()
{
    if (m_store.evictedCalls() == 0) m_stats.rebuild(m_store);
    m_replaying = false;
    for (const Call &call : m_store.calls())
        m_publishedAttempts.push_back(int(call.attempts.size()));
    endResetModel();
    emit timelineChanged();
    std::vector<EventBatch> held;
    held.swap(m_heldDuringReplay);
    for (const EventBatch &batch : held)
        applyBatch(batch);
}

void TimelineModel::clear()
{
    beginResetModel();
    m_store.clear();
    m_log.clear();
    m_stats.clear();
    if (m_headers) m_headers->clear();
    m_publishedAttempts.clear();
    endResetModel();
    emit timelineChanged();
}

} // namespace rpcscope
