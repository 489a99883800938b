#include "capturesession.h"

#include "capturefile.h"
#include "clock.h"
#include "connectproxy.h"
#include "heapbytes.h"
#include "ingestserver.h"
#include "modelsink.h"
#include "relay.h"

#include <QDateTime>
#include <QStringList>
#include <QTimerEvent>
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <netinet/in.h>
#include <span>
#include <sys/socket.h>
#include <unistd.h>

namespace rpcscope {

namespace {
// However small the budget, a relay's decoder may fall this far behind before it sheds decoding: about what
// an ordinary connection sends while the model's feed makes it wait its longest (a second) on a loaded
// machine. At 1 MiB, 4,000 plain unary calls under --keep 1 lost their decoding, and with it their place in
// the .rpcscope file, which promises every call.
constexpr size_t kMinDecoderHeldBytes = 4 << 20;
// A recorded batch is encoded in parts of about this many bytes of events, each a record of the file: the
// encoder's message and the encoded copy beside the batch are then at most twice that (counted while they
// live, relayMemoryBytes()) instead of twice a batch of a megabyte or more.
constexpr size_t kEncodeSliceBytes = 256 << 10;
// However small the budget, a relay may queue this much for slow peers (a few reads' worth).
constexpr size_t kMinRelayQueuedBytes = 1 << 20;
// Beyond its limit a decoder may hold one read the relay pushed before it looked (256 KiB), and a batch may
// be one decoded piece past its flush size with its array's spare capacity (decoderthread.cpp): together
// under this.
constexpr size_t kDecoderSlackBytes = 2 << 20;
// A relay's read buffer and one read queued beyond its limit.
constexpr size_t kRelaySlackBytes = 512 << 10;
} // namespace

CaptureSession::CaptureSession(TimelineModel *model, QObject *parent, Sink toModel)
    : QObject(parent), m_model(model), m_feed(toModel ? nullptr : ModelFeed::of(model)),
      m_toModel(toModel ? std::move(toModel) : Sink(m_feed->sink()))
{
    // What the relays' decoders hold (bytes to decode, HPACK tables, per-stream state, a batch waiting for
    // the model) is memory of this capture too: the model's budget counts it. Asked on the model's thread,
    // which is this session's, so the relay list is read as it stands.
    model->addExternalBytes([self = m_self] { return *self ? (*self)->relayMemoryBytes() : 0; });
}

CaptureSession::~CaptureSession()
{
    stop();
    *m_self = nullptr;
}

HopCheck CaptureSession::check(const HopSpec &hop, bool allowRemote, int probeTimeoutMs)
{
    HopCheck c;
    std::string error;
    HostPort listen, target;
    if (hop.listen.trimmed().isEmpty())
        c.listenError = QStringLiteral("give HOST:PORT to listen on, for example 127.0.0.1:0");
    else if (!parseHostPort(hop.listen.trimmed().toStdString(), &listen, &error))
        c.listenError = QString::fromStdString(error);
    else if (!allowRemote && !isLoopbackHost(listen.host))
        c.listenError =
            QStringLiteral("%1 is reachable from other machines: tick \"Allow remote clients\" to "
                           "listen there")
                .arg(QString::fromStdString(listen.host));
    else if (listen.port != 0 && !canListen(listen, &error))
        c.listenError = QString::fromStdString(error);

    if (hop.proxy) return c; // its targets come from the clients' CONNECT requests
    if (hop.target.trimmed().isEmpty())
        c.targetError = QStringLiteral("give the HOST:PORT of the server to capture");
    else if (!parseHostPort(hop.target.trimmed().toStdString(), &target, &error))
        c.targetError = QString::fromStdString(error);
    else if (target.port == 0)
        c.targetError = QStringLiteral("the target needs a port other than 0");
    else if (!probeTarget(target, probeTimeoutMs, &error))
        c.targetError = QString::fromStdString(error);
    return c;
}

QString CaptureSession::freeLoopbackAddress()
{
    // Binding port 0 and letting go is the portable way to find a free port.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    std::uint16_t port = 0;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) ::close(fd);
    return QStringLiteral("127.0.0.1:%1").arg(port);
}

bool CaptureSession::parseHopSpec(const QString &text, HopSpec *out, QString *error)
{
    const qsizetype at = text.indexOf(QLatin1Char('@'));
    const QString rest = at < 0 ? text : text.mid(at + 1);
    const qsizetype eq = rest.indexOf(QLatin1Char('='));
    if (eq <= 0 || eq == rest.size() - 1) {
        *error = QStringLiteral("--capture expects [LABEL@]LISTEN=TARGET, for example front@127.0.0.1:7000="
                                "127.0.0.1:50051; got '%1'")
                     .arg(text);
        return false;
    }
    HopSpec h{at < 0 ? QString() : text.left(at).trimmed(), rest.left(eq).trimmed(),
              rest.mid(eq + 1).trimmed()};
    for (const QString *part : {&h.listen, &h.target}) {
        HostPort hp;
        std::string why;
        if (!parseHostPort(part->toStdString(), &hp, &why)) {
            *error = QStringLiteral("--capture %1: %2").arg(text, QString::fromStdString(why));
            return false;
        }
    }
    if (h.label.isEmpty()) h.label = h.target;
    *out = h;
    return true;
}

struct CaptureSession::Recording
{
    std::mutex mu; // one append at a time, in the model's order; held while the model sink waits (up to 2 s)
    std::unique_ptr<CaptureFileStream> file = std::make_unique<CaptureFileStream>();
    // What the polls read (the CLI's every 20 ms, on the thread the model sink may be waiting for), so they
    // never take mu: the sink keeps them up to date after each append. `error` is set once, before `failed`.
    std::atomic<std::int64_t> bytes{0};
    std::atomic<bool> failed{false};
    std::string error;
    // While a part of a batch is encoded and written: the encoder's message and the encoded copies beside
    // the batch, counted at twice what the part's events own (the message copies them; the encoded record
    // and its framing are smaller each). The budget counts it (relayMemoryBytes).
    std::atomic<size_t> encoding{0};
};

size_t CaptureSession::relayMemoryBytes() const
{
    size_t n = m_recording ? m_recording->encoding.load(std::memory_order_relaxed) : 0;
    for (const auto &r : m_relays)
        n += r->memoryBytes();
    // A CONNECT proxy's tunnels are relays too, one a target, and its unfinished handshakes hold their heads.
    for (const auto &p : m_proxies)
        n += p->memoryBytes();
    return n;
}

size_t CaptureSession::mostHeldBytes() const
{
    size_t n = m_feed ? m_feed->byteLimit() : 0;
    if (m_recording) n += 2 * kEncodeSliceBytes + kEncodeSliceBytes / 4; // one event past a slice, about
    const size_t hops = m_relays.size() + m_proxies.size();
    const auto &l = m_runningLimits;
    const size_t queued = l.maxRelayQueuedBytes == SIZE_MAX ? 0 : l.maxRelayQueuedBytes;
    return n + hops * (l.maxDecoderHeldBytes + kDecoderSlackBytes + queued + kRelaySlackBytes);
}

void CaptureSession::setRecordTo(const QString &path)
{
    m_recordPath = path.trimmed();
    if (!m_recordPath.isEmpty() && !m_recordPath.endsWith(QLatin1String(".rpcscope"), Qt::CaseInsensitive))
        m_recordPath += QLatin1String(".rpcscope");
    m_recordRedaction = Redaction{};
    m_recordWriter.clear();
}

void CaptureSession::setRecordTo(const QString &path, const Redaction &redaction, const std::string &writer)
{
    m_recordPath = path;
    m_recordRedaction = redaction;
    m_recordWriter = writer;
}

QString CaptureSession::recordingPartialPath() const
{
    return m_recording ? m_recording->file->partialPath() : QString();
}

QString CaptureSession::recordingError() const
{
    if (!m_recording || !m_recording->failed.load(std::memory_order_acquire)) return {};
    return QString::fromStdString(m_recording->error);
}

std::int64_t CaptureSession::recordingBytesWritten() const
{
    return m_recording ? m_recording->bytes.load(std::memory_order_relaxed) : 0;
}

// A start that failed part way: its recording holds nothing worth keeping.
void CaptureSession::discardRecording()
{
    if (m_recording) m_recording->file->discard();
    m_recording.reset();
}

bool CaptureSession::fail(CaptureStartError *failure, CaptureStartError::Stage stage, const QString &reason,
                          QString *error, const QString &message)
{
    if (failure) *failure = {stage, reason};
    *error = message;
    return false;
}

bool CaptureSession::start(const std::vector<HopSpec> &hops, bool allowRemote, QString *error,
                           CaptureStartError *failure)
{
    stop();
    if (failure) *failure = {};
    if (hops.empty()) {
        const QString why = QStringLiteral("add at least one hop");
        return fail(failure, CaptureStartError::Hops, why, error, why);
    }
    QStringList names;
    for (const HopSpec &h : hops)
        names << QStringLiteral("%1 %2 → %3")
                     .arg(h.label, h.listen.trimmed(),
                          h.proxy ? QStringLiteral("CONNECT") : h.target.trimmed())
                     .trimmed();
    emit starting(names.join(QStringLiteral(", ")));
    auto stats = m_stats = std::make_shared<Stats>();
    auto pauses = m_pauses = std::make_shared<Pauses>();
    auto forward = m_toModel;
    m_model->setOrigin(clockPairNow());
    m_recordingResult.clear();
    if (!m_recordPath.isEmpty()) {
        auto recording = std::make_shared<Recording>();
        std::string err;
        CaptureInfo info = captureInfoOf(m_model->store());
        if (!m_recordWriter.empty()) info.writer = m_recordWriter;
        if (!recording->file->open(m_recordPath, info, m_recordRedaction, &err)) {
            const QString why = QString::fromStdString(err);
            return fail(failure, CaptureStartError::Recording, why, error,
                        QStringLiteral("recording: %1").arg(why));
        }
        m_recording = recording;
        forward = [forward, recording](EventBatch &&batch) {
            std::lock_guard lk(recording->mu);
            // In records of up to kEncodeSliceBytes of events each, so that the encoder's copies beside the
            // batch stay that small however large the batch (after a failure the file drops them;
            // recordingError() says why).
            for (size_t from = 0; from < batch.size();) {
                size_t to = from, bytes = 0;
                while (to < batch.size() && (to == from || bytes < kEncodeSliceBytes))
                    bytes += heapbytes::event(batch[to++]);
                recording->encoding.store(2 * bytes, std::memory_order_relaxed);
                recording->file->appendPart(std::span<const WireEvent>(batch.data() + from, to - from));
                from = to;
            }
            recording->encoding.store(0, std::memory_order_relaxed);
            recording->bytes.store(recording->file->bytesWritten(), std::memory_order_relaxed);
            if (recording->file->failed() && !recording->failed.load(std::memory_order_relaxed)) {
                recording->error = recording->file->error();
                recording->failed.store(true, std::memory_order_release);
            }
            forward(std::move(batch));
        };
    }
    auto sink = [forward, stats, pauses](EventBatch &&batch) {
        // Connection opens and closes are kept, so a paused stretch never leaves a connection dangling.
        pauses->dropCovered(batch);
        if (batch.empty()) return;
        stats->events += batch.size();
        for (const WireEvent &e : batch)
            if (e.kind == EventKind::DecodeError) {
                ++stats->problems;
                stats->problemConnection = e.connection;
            }
        forward(std::move(batch));
    };
    // What the decoders hold and nothing can evict (bytes waiting to be decoded, a batch waiting for the
    // model) counts against the model's budget: together they may take a quarter of it, past which a relay
    // stops decoding the connection it reads, with a note. Without a budget each keeps its own limit.
    // So may the relays' queues for slow peers: a sixteenth of it, past which a relay stops reading a side
    // whose bytes wait for the other (TCP flow control holds the sender back).
    DecoderLimits limits = m_limits;
    if (const size_t budget = m_model->retention().maxBytes) {
        limits.maxDecoderHeldBytes =
            std::min(limits.maxDecoderHeldBytes, std::max(kMinDecoderHeldBytes, budget / 4 / hops.size()));
        limits.maxRelayQueuedBytes =
            std::min(limits.maxRelayQueuedBytes, std::max(kMinRelayQueuedBytes, budget / 16 / hops.size()));
    }
    m_runningLimits = limits;
    for (const HopSpec &h : hops) {
        HostPort listen, target;
        std::string err;
        const bool parsed = parseHostPort(h.listen.trimmed().toStdString(), &listen, &err) &&
                            (h.proxy || parseHostPort(h.target.trimmed().toStdString(), &target, &err));
        if (parsed && !allowRemote && !isLoopbackHost(listen.host))
            err = "listening on " + listen.toString() + " needs remote clients allowed";
        if (err.empty() && h.proxy) {
            auto proxy = std::make_unique<ConnectProxy>();
            if (!h.label.isEmpty()) proxy->setLabel(h.label.toStdString());
            proxy->setDecoderLimits(limits);
            proxy->setFaults(m_faults);
            proxy->setTlsIntercept(h.tls);
            if (proxy->start(listen, sink, &err)) {
                RunningHop running{h.label, QString::fromStdString(proxy->listenAddress().toString()),
                                   QStringLiteral("CONNECT")};
                running.proxy = true;
                m_hops.push_back(running);
                m_proxies.push_back(std::move(proxy));
                continue;
            }
        } else if (err.empty()) {
            auto relay = std::make_unique<Relay>();
            relay->setLabel(h.label.toStdString());
            relay->setDecoderLimits(limits);
            relay->setFaults(m_faults);
            relay->setTlsIntercept(h.tls);
            if (relay->start(listen, target, sink, &err)) {
                m_hops.push_back(
                    {h.label, QString::fromStdString(relay->listenAddress().toString()), h.target.trimmed()});
                m_relays.push_back(std::move(relay));
                continue;
            }
        }
        discardRecording();
        stop();
        const QString why = QString::fromStdString(err);
        return fail(failure, CaptureStartError::Hop, why, error, QStringLiteral("%1: %2").arg(h.label, why));
    }
    if (m_ingestEnabled) {
        m_ingest = std::make_unique<IngestServer>();
        if (m_feed) m_ingest->setRoomProbe(m_feed->roomProbe()); // pushes back while the model is behind
        std::string err;
        if (!m_ingest->start(0, 0, sink, &err)) {
            discardRecording();
            stop();
            const QString why = QString::fromStdString(err);
            return fail(failure, CaptureStartError::Ingest, why, error,
                        QStringLiteral("event ingestion endpoint: %1").arg(why));
        }
    }
    // The decoders may hold a quarter of the budget and the feed's queue another, the relays' queues for slow
    // peers a sixteenth, beside a batch being written: the calls get the rest, so the capture stays within
    // its budget while those fill under a flood (the window's retention as the CLI's --keep). At most three
    // quarters: below about 16 MB the decoders' and the queues' floors (4 MB and 1 MB) are more than the
    // budget, and the calls still get a quarter of it.
    if (const size_t budget = m_model->retention().maxBytes)
        m_model->setExternalReserve(std::min(mostHeldBytes(), budget / 4 * 3));
    m_lastEvents = 0;
    m_lastSampleMs = QDateTime::currentMSecsSinceEpoch();
    m_rate = 0;
    m_timer = startTimer(1000);
    emit runningChanged(true);
    return true;
}

// Everything but the recording; true when it was running.
bool CaptureSession::stopRunning()
{
    const bool wasRunning = isRunning();
    // Stopping a relay joins its decoder thread, which may be waiting for room in the feed this thread
    // drains.
    const ModelFeed::Stopping stopping(m_feed);
    if (m_timer) killTimer(std::exchange(m_timer, 0));
    if (m_ingest) m_ingest->stop();
    m_ingest.reset();
    for (auto &p : m_proxies)
        p->stop(); // its tunnels' relays too
    m_proxies.clear();
    for (auto &r : m_relays)
        r->stop(); // closes connections, so their close events reach the timeline
    m_relays.clear();
    m_hops.clear();
    m_rate = 0;
    if (wasRunning) m_model->setExternalReserve(0); // nothing is held for a capture any more
    return wasRunning;
}

void CaptureSession::stop()
{
    const bool wasRunning = stopRunning();
    if (m_recording) {
        // Every sink has returned: the relays and the ingestion endpoint are stopped.
        std::string err;
        CaptureFileStream &file = *m_recording->file;
        if (file.failed())
            m_recordingResult = QStringLiteral("Recording stopped early: %1. What was written is in %2")
                                    .arg(QString::fromStdString(file.error()), file.partialPath());
        else if (!file.finish(&err))
            m_recordingResult =
                QStringLiteral("Could not finish the recording: %1. What was written is in %2")
                    .arg(QString::fromStdString(err), file.partialPath());
        else
            m_recordingResult =
                QStringLiteral("Recorded %1 events to %2").arg(file.events()).arg(m_recordPath);
        m_recording.reset();
        emit recordingFinished(m_recordingResult);
    }
    if (wasRunning) emit runningChanged(false);
}

std::unique_ptr<CaptureFileStream> CaptureSession::stopAndTakeRecording()
{
    const bool wasRunning = stopRunning();
    std::unique_ptr<CaptureFileStream> file;
    if (m_recording) file = std::move(m_recording->file); // every sink has returned
    m_recording.reset();
    if (wasRunning) emit runningChanged(false);
    return file;
}

void CaptureSession::Pauses::dropCovered(EventBatch &batch)
{
    // One lock a batch, and nothing to do for a session never paused (the CLI's).
    std::lock_guard lk(mu);
    if (spans.empty()) return;
    // Connection opens and closes are kept, so a paused stretch never leaves a connection dangling.
    std::erase_if(batch, [&](const WireEvent &e) {
        if (e.kind == EventKind::ConnectionOpened || e.kind == EventKind::ConnectionClosed) return false;
        for (const auto &[from, to] : spans)
            if (e.tNs >= from && e.tNs < to) return true;
        return false;
    });
}

void CaptureSession::setPaused(bool paused)
{
    if (paused == isPaused()) return;
    std::lock_guard lk(m_pauses->mu);
    if (paused)
        m_pauses->spans.emplace_back(steadyNowNs(), INT64_MAX);
    else
        m_pauses->spans.back().second = steadyNowNs();
}

bool CaptureSession::isPaused() const
{
    std::lock_guard lk(m_pauses->mu);
    return !m_pauses->spans.empty() && m_pauses->spans.back().second == INT64_MAX;
}

QString CaptureSession::ingestGrpcAddress() const
{
    return m_ingest ? QStringLiteral("127.0.0.1:%1").arg(m_ingest->grpcPort()) : QString();
}

QString CaptureSession::ingestJsonAddress() const
{
    return m_ingest ? QStringLiteral("127.0.0.1:%1").arg(m_ingest->jsonPort()) : QString();
}

std::uint64_t CaptureSession::ingestPushedBack() const
{
    return m_ingest ? m_ingest->pushedBack() : 0;
}

int CaptureSession::openConnections() const
{
    int n = 0;
    for (const auto &r : m_relays)
        n += r->openConnections();
    for (const auto &p : m_proxies)
        n += p->openConnections();
    return n;
}

QStringList CaptureSession::proxyTargets() const
{
    QStringList targets;
    for (const auto &p : m_proxies)
        for (const std::string &t : p->targets())
            targets << QString::fromStdString(t);
    return targets;
}

void CaptureSession::timerEvent(QTimerEvent *e)
{
    if (e->timerId() != m_timer) return QObject::timerEvent(e);
    sample();
}

void CaptureSession::sample()
{
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const std::uint64_t events = m_stats->events.load();
    if (now > m_lastSampleMs) m_rate = double(events - m_lastEvents) * 1000.0 / double(now - m_lastSampleMs);
    m_lastEvents = events;
    m_lastSampleMs = now;
    emit statsChanged();
}

} // namespace rpcscope
