#pragma once

#include "events.h"
#include "redaction.h"
#include "relay.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace rpcscope {

class CaptureFileStream;
class ConnectProxy;
class IngestServer;
class ModelFeed;
class TimelineModel;

// One hop of a live capture: a proxy listening on `listen` that relays to `target`, named `label` on the
// timeline (for example "front->api").
struct HopSpec
{
    QString label;
    QString listen; // HOST:PORT; port 0 picks a free one
    QString target; // HOST:PORT of the real server
    // An HTTP CONNECT proxy instead (target unused): each CONNECT target becomes a hop labelled by its
    // authority, made when a client first asks for it.
    bool proxy = false;
    // TLS interception on this hop; off unless enabled.
    TlsInterceptOptions tls = {};
};

// What is wrong with a hop before it starts; empty strings when that field is fine.
struct HopCheck
{
    QString listenError;
    QString targetError;
    bool ok() const { return listenError.isEmpty() && targetError.isEmpty(); }
};

// What start() failed at, for a caller that answers each differently (rpcscope-cli's exit codes).
struct CaptureStartError
{
    enum Stage
    {
        None,
        Hops,
        Recording,
        Hop,
        Ingest
    };
    Stage stage = None;
    QString reason; // the cause alone, without the hop's label or "recording:" in front
};

// A live capture of the user's own services: one relay per hop, all feeding one timeline, plus the ingestion
// endpoint (ingest.proto, JSON lines) their resilience libraries report to. Lives on the model's thread (the
// GUI's, or the CLI's main thread): `rpcscope-cli capture` is one session of one hop without the endpoint.
class CaptureSession : public QObject
{
    Q_OBJECT
public:
    // `toModel` hands batches to the model's thread (default: queued straight into `model`).
    using Sink = std::function<void(std::vector<WireEvent> &&)>;
    explicit CaptureSession(TimelineModel *model, QObject *parent = nullptr, Sink toModel = {});
    ~CaptureSession() override;

    // Syntax, loopback-only binding unless allowRemote, port in use, target reachable (a TCP connect).
    static HopCheck check(const HopSpec &hop, bool allowRemote, int probeTimeoutMs = 700);
    // "127.0.0.1:PORT" with a port that is free right now.
    static QString freeLoopbackAddress();
    // `rpcscope --capture [LABEL@]LISTEN=TARGET`: false with a one-line reason when malformed. Without a
    // label the hop is named after its target.
    static bool parseHopSpec(const QString &text, HopSpec *out, QString *error);

    // Starts every hop, then the ingestion endpoint; on any failure nothing is left running.
    bool start(const std::vector<HopSpec> &hops, bool allowRemote, QString *error,
               CaptureStartError *failure = nullptr);
    void stop();
    // Stops as stop() does, but hands the recording over unfinished instead of finishing it, for a caller
    // that finishes it itself (the CLI saves it elsewhere when it cannot be put in place). Null without one.
    std::unique_ptr<CaptureFileStream> stopAndTakeRecording();

    // For the relays the next start() makes (the CLI's --max-header-list and --max-message-keep).
    void setDecoderLimits(const DecoderLimits &limits) { m_limits = limits; }
    // Fault rules for the relays the next start() makes (null: none); each hop's relay takes those for its
    // label. The caller keeps the set to read its hit counters.
    void setFaults(std::shared_ptr<FaultSet> faults) { m_faults = std::move(faults); }
    // On by default; the CLI captures without the ingestion endpoint.
    void setIngestEnabled(bool on) { m_ingestEnabled = on; }

    // Recording: the next start() also writes everything it records to this .rpcscope file as it comes, in
    // the order the model gets it (header values masked as in a saved file), through `path`.partial until
    // stop(). It keeps what retention evicts, and a crash leaves the .partial file, which opens as a
    // truncated capture. Empty: no recording; ".rpcscope" is added when the name lacks it. start() fails if
    // the file cannot be opened.
    void setRecordTo(const QString &path);
    // As setRecordTo(), but to `path` as given whatever its suffix, masking header values with `redaction`
    // and naming `writer` in the file's header (rpcscope-cli's --out, --redact).
    void setRecordTo(const QString &path, const Redaction &redaction, const std::string &writer);
    QString recordTo() const { return m_recordPath; }
    bool isRecording() const { return m_recording != nullptr; }
    QString recordingPartialPath() const;
    // Empty while fine; else why writing failed (recording stopped there, the capture goes on).
    QString recordingError() const;
    // Whole records written so far.
    std::int64_t recordingBytesWritten() const;
    // After stop(): where the recording went, or what went wrong; empty when there was none.
    QString lastRecordingResult() const { return m_recordingResult; }
    bool isRunning() const { return !m_relays.empty() || !m_proxies.empty(); }

    // Paused: bytes keep flowing through the proxies (and are still decoded, so HPACK state stays right) but
    // nothing is recorded.
    void setPaused(bool paused);
    bool isPaused() const;

    struct RunningHop
    {
        QString label;
        QString listen; // the actual address, port resolved
        QString target;
        bool proxy = false; // a CONNECT proxy: its targets are proxyTargets()
    };
    const std::vector<RunningHop> &hops() const { return m_hops; }
    // The CONNECT targets the session's proxies have made hops of so far.
    QStringList proxyTargets() const;
    QString ingestGrpcAddress() const;
    QString ingestJsonAddress() const;

    // For the status bar.
    int openConnections() const;
    // What the relays' decoders hold now (counted in the model's memoryBytes()).
    size_t relayMemoryBytes() const;
    // The most that, and the model's feed queue, may come to hold while running (their bounds from the
    // model's budget, set at start()): what retention must leave room for (TimelineModel::setExternalReserve)
    // so that the capture stays within its budget while they fill. The decoders' per-connection state
    // (HPACK tables, open streams) is not in it: it is counted as it grows.
    size_t mostHeldBytes() const;
    double eventsPerSecond() const { return m_rate; }
    std::uint64_t decodeProblems() const { return m_stats->problems.load(); }
    std::uint32_t lastProblemConnection() const { return m_stats->problemConnection.load(); }
    // Events the ingestion endpoint refused because the model was too far behind (RESOURCE_EXHAUSTED).
    std::uint64_t ingestPushedBack() const;

signals:
    void runningChanged(bool running);
    // start() is about to set the model's origin and feed it: a window puts the capture on a stage of its
    // own. `hops` names them ("label listen → target", comma-separated).
    void starting(const QString &hops);
    void recordingFinished(const QString &result); // emitted by stop() when a recording ends
    void statsChanged();                           // about once a second while running

private:
    struct Stats
    {
        std::atomic<std::uint64_t> events{0};
        std::atomic<std::uint64_t> problems{0};
        std::atomic<std::uint32_t> problemConnection{0};
    };
    void sample();
    void discardRecording();
    bool fail(CaptureStartError *failure, CaptureStartError::Stage stage, const QString &reason,
              QString *error, const QString &message);
    bool stopRunning();

    TimelineModel *m_model;
    ModelFeed *m_feed; // the model's feed, unless batches go elsewhere (`toModel`)
    Sink m_toModel;
    std::vector<std::unique_ptr<Relay>> m_relays;
    std::shared_ptr<FaultSet> m_faults;
    std::vector<std::unique_ptr<ConnectProxy>> m_proxies;
    std::unique_ptr<IngestServer> m_ingest;
    std::vector<RunningHop> m_hops;
    // When recording was paused, as [from, to) on the capture clock; `to` is open while paused. The relays
    // hand events over in batches some ms after they happened, so the sink judges each event by its own time.
    struct Pauses
    {
        std::mutex mu;
        std::vector<std::pair<std::int64_t, std::int64_t>> spans;
        void dropCovered(EventBatch &batch); // the events recorded while paused
    };
    // Shared with the sinks, which run on relay threads and may outlive a stop() by one queued batch.
    std::shared_ptr<Pauses> m_pauses = std::make_shared<Pauses>();
    std::shared_ptr<Stats> m_stats = std::make_shared<Stats>();
    // For the model's memory count, which may outlive this session: null once it is gone.
    std::shared_ptr<CaptureSession *> m_self = std::make_shared<CaptureSession *>(this);
    // The sinks write to it on relay threads, under its lock, and hand the batch to the model under the same
    // lock: the file's order is the model's.
    struct Recording;
    std::shared_ptr<Recording> m_recording;
    QString m_recordPath;
    Redaction m_recordRedaction;
    std::string m_recordWriter; // empty: the file's default
    DecoderLimits m_limits;
    DecoderLimits m_runningLimits; // as start() gave them to the hops, from the budget
    bool m_ingestEnabled = true;
    QString m_recordingResult;
    std::uint64_t m_lastEvents = 0;
    qint64 m_lastSampleMs = 0;
    double m_rate = 0;
    int m_timer = 0;

protected:
    void timerEvent(QTimerEvent *) override;
};

} // namespace rpcscope
