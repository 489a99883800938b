#pragma once

#include "callstats.h"
#include "capturedata.h"
#include "clock.h"
#include "eventlog.h"
#include "headerlog.h"
#include "timelinestore.h"

#include <QAbstractItemModel>
#include <functional>
#include <optional>

namespace rpcscope {

// A two-level tree over the TimelineStore: calls at the top, their attempts below. Rows are published in
// batches: the store is updated first, then the rows it grew are announced with one beginInsertRows per
// parent, the way Wireshark's packet list publishes its visible rows.
class TimelineModel : public QAbstractItemModel
{
    Q_OBJECT
public:
    enum Column
    {
        ColName,
        ColMethod,
        ColStatus,
        ColStart,
        ColDuration,
        ColumnCount
    };
    enum Role
    {
        StartNsRole = Qt::UserRole + 1,
        EndNsRole,
        StatusCodeRole,
        // Chains, on call rows only. The nesting is not the tree's: a call's parent can change when a relay's
        // events arrive late (see TimelineStore), which a tree could only follow with row moves.
        ParentCallRole,     // row of the call it was made while serving; invalid for a root
        NestingDepthRole,   // 0 for a root
        TraceIdRole,        // W3C trace-id, empty outside a trace
        HopRole,            // the capturing relay's label, empty for the main proxy
        DeadlineFlagsRole,  // QStringList: "reset", "dropped"
        ParentBudgetNsRole, // the parent's deadline minus this call's start; invalid without one
        // What the client got (clientoutcome.h), on call rows: its status code (invalid when unknown or in
        // flight) and, when the wire only implies it, why.
        ClientStatusCodeRole,
        ClientOutcomeWhyRole,
    };

    explicit TimelineModel(QObject *parent = nullptr);

    const TimelineStore &store() const { return m_store; }
    // Statistics of every call applied since the last clear() or replay(), evicted ones included
    // (callstats.h); updated with each batch.
    const CallStats &stats() const { return m_stats; }
    // Every batch applied since the last clear(), for saving the session as a capture file (capturefile.h).
    const EventLog &eventLog() const { return m_log; }
    // Replaces everything with an opened capture file (one model reset, however large), keeping its batches
    // in the event log so it can be saved again.
    void replay(const CaptureData &data);
    // The same, batch by batch as a file is read, under the retention policy: the oldest calls are evicted
    // as the store fills, so memory follows the budget, not the file. One model reset from beginReplay to
    // endReplay; in between no row is announced, and the store holds the batches replayed so far.
    void beginReplay(const CaptureInfo &info);
    void replayBatch(const rpcscope::EventBatch &batch);
    void endReplay();
    bool isReplaying() const { return m_replaying; }
    void setOrigin(qint64 steadyNs, qint64 wallNs);
    void setOrigin(const ClockPair &at) { setOrigin(at.steadyNs, at.wallNs); }
    // The decoded header blocks and kept messages the inspector shows (headerlog.h), fed every batch appended
    // or replayed and emptied with the rest: stream ids start again after a reset. Off by default, since a
    // headless capture never shows them and they may hold tens of MB; turn it on before handing headerLog()
    // to a view. Retention does not evict from it (it is bounded by itself).
    void setKeepHeaders(bool keep);
    // How many bytes of the messages' kept first bytes the event log holds (EventLog::setPayloadBudget); past
    // it, a message keeps its length and loses its bytes. A capture that records to a file as it goes has
    // them there, and sets 0 while the file is written.
    void setEventPayloadBudget(size_t bytes) { m_log.setPayloadBudget(bytes); }
    // Null unless headers are kept.
    const HeaderLog *headerLog() const { return m_headers ? &*m_headers : nullptr; }

    // Retention for live sessions: checked after batches, at most once a second (or when the calls grew by a
    // tenth, or may have filled the budget); maxBytes counts the store and the event log together. Evicted
    // calls are announced as removed rows, in small chunks, between aboutToEvictCalls and callsEvicted.
    // Default: no limit.
    void setRetention(const RetentionPolicy &policy);
    const RetentionPolicy &retention() const { return m_retention; }
    // Applies the policy now; true when anything was evicted.
    bool enforceRetention();
    // Everything the session holds, as the allocator counts it: the store, the event log, the statistics'
    // record of each call kept and their rows, the inspector's kept messages, and what setExternalBytes()
    // reports. Retention (maxBytes) budgets all of it. The statistics' rows keep evicted calls counted, so no
    // eviction makes them smaller: like the inspector's messages they are bounded by themselves (at most
    // CallStats::maxKeyedRows() of each kind, which setRetention() sizes from the budget), and retention
    // leaves them room.
    size_t memoryBytes() const
    {
        return m_store.approxBytes() + m_log.memoryBytes() + callBytes() + otherBytes(externalBytes());
    }
    // The statistics' method and hop rows a budget of `maxBytes` allows (0: no budget): about an eighth of it
    // at a few KiB a row, between 64 and CallStats::kDefaultMaxKeyedRows.
    static size_t statsRowsFor(size_t maxBytes);
    // Another limit than that, until the next setRetention().
    void setStatsRowLimit(size_t rows) { m_stats.setMaxKeyedRows(rows); }
    // What others hold for this session and count against its budget: the batches queued on their way to the
    // model (app/core's sink), say. Retention cannot evict those, so it leaves the store and the log less
    // room. Called on the model's thread whenever memory is checked; an empty function counts nothing.
    void setExternalBytes(std::function<size_t()> bytes) { m_externalBytes = std::move(bytes); }
    // One more holder beside those already counted (a capture's decoders beside the feed's queue).
    void addExternalBytes(std::function<size_t()> bytes)
    {
        if (m_externalBytes)
            m_externalBytes = [a = std::move(m_externalBytes), b = std::move(bytes)] { return a() + b(); };
        else
            m_externalBytes = std::move(bytes);
    }
    // The most those others may come to hold between two checks (a queue's and the decoders' limits, say):
    // retention leaves the store and the log room for that much, not only for what they hold now, so that the
    // session stays within its budget while they fill. 0 by default.
    void setExternalReserve(size_t bytes) { m_externalReserve = bytes; }
    size_t externalReserve() const { return m_externalReserve; }
    // Keeps a call from eviction (and shows it as pinned).
    void setPinned(int callRow, bool pinned);

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // Batches of a run that is no longer on stage (still being recorded while another run is shown): when
    // `divert` returns true for a batch handed to appendBatch, the model leaves it to whoever took it. An
    // empty function applies every batch. A replay of the run on stage uses applyBatch, never diverted.
    void setDivert(std::function<bool(const rpcscope::EventBatch &)> divert) { m_divert = std::move(divert); }
    bool isDiverting() const { return bool(m_divert); }
    // A batch into the headers, the store, the event log and the statistics (live and replayed alike).
    StoreChanges take(EventSpan batch);
    void applyBatch(EventSpan batch);
    // As appendBatch, for events the caller keeps (a slice of a larger batch, which need not be moved out).
    void appendEvents(EventSpan events);

public slots:
    void appendBatch(const rpcscope::EventBatch &batch);
    void clear();

signals:
    // Emitted once per applied batch, after the rows are published.
    void timelineChanged();
    // Retention: before the store evicts these calls (store indices, ascending; the store is still whole),
    // and after (the remaining calls moved up; a call's new index is its old one minus the evicted ones
    // before it). The rows are removed in between.
    void aboutToEvictCalls(const std::vector<size_t> &calls);
    void callsEvicted(const std::vector<size_t> &calls);

private:
    TimelineStore m_store;
    CallStats m_stats;
    EventLog m_log;
    std::optional<HeaderLog> m_headers;
    std::function<bool(const rpcscope::EventBatch &)> m_divert;
    std::function<size_t()> m_externalBytes;
    size_t m_externalReserve = 0;
    // What others hold now (setExternalBytes()).
    size_t externalBytes() const { return m_externalBytes ? m_externalBytes() : 0; }
    // What the session holds that retention cannot evict: the inspector's kept messages, what others hold
    // (`external`: what they hold now, or for retention the most they may come to hold) and the statistics'
    // rows. O(1): memoryBytes() and retention both count it so, each asking the others once.
    size_t otherBytes(size_t external) const
    {
        return (m_headers ? m_headers->messageBytes() : 0) + external + m_stats.rowBytes();
    }
    std::vector<int> m_publishedAttempts; // per published call
    // What the model keeps per call beside the store (its statistics record, its published row), freed with
    // the call: retention counts it as the store's.
    size_t callBytes() const;
    // Runs (first store index, count) of evicted rows already announced while the store still holds them.
    std::vector<std::pair<size_t, size_t>> m_removedRuns;
    size_t storeRow(int row) const;
    int modelRow(size_t storeRow) const;
    RetentionPolicy m_retention;
    bool m_replaying = false; // between beginReplay and endReplay
    std::vector<rpcscope::EventBatch> m_heldDuringReplay;
    // An appended batch that was not diverted: applied, or held while a file is replayed.
    void deliver(EventSpan events);
    void checkRetention(); // enforceRetention when a cheap check says it may be due
    qint64 m_lastRetentionCheckMs = 0;
    size_t m_callsAtLastCheck = 0;
    size_t m_nextCheckCalls = 0; // 0: none predicted
    // The memory that grows without calls, in O(1): the log, the frames, the pings, the lab events (an
    // ingestion burst is nothing else), what others hold and the statistics' rows.
    size_t cheapBytes() const
    {
        return m_log.memoryBytes() + m_store.frames().size() * sizeof(FrameRecord) +
               m_store.pings().size() * sizeof(PingRecord) +
               m_store.labEvents().size() * sizeof(LabEventRecord) + m_store.keptLabEventHeapBytes() +
               otherBytes(externalBytes());
    }
    size_t m_cheapBytesAtLastCheck = 0;
};

} // namespace rpcscope
