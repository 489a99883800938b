// libFuzzer target for the .rpcscope capture-file reader (model/capturereader.cpp), and for what opening a
// file leads to: replaying it into a TimelineStore (call assembly, nesting, gaps, deadlines), merging it
// (model/capturemerge.cpp) and the exports `rpcscope-cli convert` writes from it (JSON, Chrome trace, OTLP).
// Input format in captureinput.h.
//
// Besides what ASan/UBSan/LSan catch, it aborts when one of these does not hold:
//  - the result is one of the documented statuses; its message is one line, empty exactly when Ok;
//  - Failed loads nothing;
//  - a usable capture (Ok or Truncated) written again by captureToBytes reads back Ok, equal to it;
//  - merged with itself (mode 0x02), the merge either fails with a message or holds every event twice, each
//    copy moved by exactly its shift.
//
// Every read gets its own exactly-sized heap copy, so ASan reports a read past the end of the file.
//
// The same file builds two ways: with clang and -fsanitize=fuzzer (scripts/fuzz.sh), which adds a mutator
// that changes one record's body and re-frames it (length and CRC), and with the normal compiler plus
// replay_main.cpp, which runs the committed corpus as a ctest.

#include "callstats.h"
#include "capturefile.h"
#include "captureinput.h"
#include "capturemerge.h"
#include "chrometrace.h"
#include "jsonexport.h"
#include "otlpexport.h"
#include "otlpmetrics.h"
#include "timelinestore.h"

#include <cstdio>
#include <cstdlib>
#include <google/protobuf/stubs/logging.h>
#include <string>
#include <vector>

using namespace rpcscope;

namespace {

// Merging doubles the work; past this many events an input teaches the merge nothing new.
constexpr size_t kMaxMergeEvents = 4096;

[[noreturn]] void violation(const std::string &what)
{
    std::fprintf(stderr, "fuzz_capturefile: %s\n", what.c_str());
    std::abort();
}

// What the GUI does with a capture once it is read, and with `exports` what `convert` does (more than half
// the time of a run, hence a mode bit).
void use(const CaptureData &data, bool exports)
{
    TimelineStore store;
    replayCapture(data, store);
    for (size_t i = 0; i < store.calls().size(); ++i) {
        const Call &c = store.calls()[i];
        (void)store.nestingDepth(i);
        (void)c.deadlineNs();
        (void)c.gapsNs();
        for (size_t k = 0; k < c.attempts.size(); ++k) {
            (void)c.expectedGapNs(k);
            (void)c.transparentRetry(k);
            (void)store.attemptAt(i, c.attempts[k].startNs);
        }
    }
    // The statistics (rpcscope-cli stats): every count adds up, whatever the file holds.
    CallStats stats;
    stats.rebuild(store);
    const StatsRow &t = stats.total();
    std::uint64_t outcomes = 0;
    for (auto n : t.outcomes)
        outcomes += n;
    if (outcomes != t.calls) violation("statistics: the outcome counts do not add up to the calls");
    for (double q : {0.5, 0.9, 0.99, 0.999, 1.0})
        if (t.callLatency.percentile(q).value_or(0) < 0)
            violation("statistics: a negative latency percentile");
    if (!exports) return;
    (void)timelineToJsonBytes(store, true);
    (void)timelineToChromeTraceBytes(store);
    (void)timelineToOtlpBytes(store);
    (void)timelineToOtlpMetricsBytes(store);
}

// Where two captures' events first differ, and in which fields, for triage.
std::string firstDifference(const CaptureData &a, const CaptureData &b)
{
    std::vector<const WireEvent *> ea, eb;
    for (const CaptureData *d : {&a, &b})
        for (const EventBatch &batch : d->batches)
            for (const WireEvent &e : batch)
                (d == &a ? ea : eb).push_back(&e);
    if (a.batches.size() != b.batches.size() || ea.size() != eb.size())
        return std::to_string(a.batches.size()) + " batches of " + std::to_string(ea.size()) +
               " events, then " + std::to_string(b.batches.size()) + " of " + std::to_string(eb.size());
    for (size_t i = 0; i < ea.size(); ++i) {
        const WireEvent &x = *ea[i], &y = *eb[i];
        if (x == y) continue;
        std::string fields;
        auto diff = [&](const char *name, bool same) {
            if (!same) fields += std::string(" ") + name;
        };
        diff("kind", x.kind == y.kind);
        diff("time", x.tNs == y.tNs);
        diff("headers", x.headers == y.headers);
        diff("grpc", x.grpc == y.grpc);
        diff("grpc.retry", x.grpc.retryInitialMs == y.grpc.retryInitialMs &&
                               x.grpc.retryMultiplier == y.grpc.retryMultiplier &&
                               x.grpc.retryMaxMs == y.grpc.retryMaxMs);
        diff("settings", x.settings == y.settings);
        diff("text", x.reason == y.reason && x.about == y.about && x.label == y.label);
        diff("payload", x.payload == y.payload);
        return "event " + std::to_string(i) + " (kind " + std::to_string(int(x.kind)) + ") differs in" +
               fields;
    }
    return "the batches are cut differently";
}

bool sameInfo(const CaptureInfo &a, const CaptureInfo &b)
{
    return a.hasOrigin == b.hasOrigin && a.originNs == b.originNs && a.originWallNs == b.originWallNs &&
           a.recordFrames == b.recordFrames && a.redactedHeaders == b.redactedHeaders &&
           (a.writer.empty() ? std::string("rpcscope") : a.writer) == b.writer;
}

void checkMerge(const CaptureData &data, std::int64_t offset, bool exports)
{
    const std::vector<MergeInput> inputs = {{&data, "a", 0}, {&data, "b", offset}};
    CaptureData merged;
    const MergeResult m = mergeCaptures(inputs, &merged);
    if (!m.ok) {
        if (m.error.empty() || m.error.find('\n') != std::string::npos)
            violation("merge failed without a one-line error");
        return;
    }
    const size_t n = data.eventCount();
    if (merged.eventCount() != 2 * n || m.shiftNs.size() != 2)
        violation("merge of " + std::to_string(n) + " events with itself holds " +
                  std::to_string(merged.eventCount()));
    // Each copy keeps its own order: the i-th event of copy k on a connection is the i-th such event of the
    // file, shifted and renumbered. Copy b's connections come after copy a's; connection 0 (lab events) is
    // shared, so those are only counted.
    std::vector<const WireEvent *> onConnections;
    size_t labEvents = 0;
    for (const EventBatch &b : data.batches)
        for (const WireEvent &e : b) {
            if (e.connection)
                onConnections.push_back(&e);
            else
                ++labEvents;
        }
    const std::uint32_t base = m.connectionBase[1];
    size_t next[2] = {0, 0}, mergedLab = 0;
    for (const EventBatch &b : merged.batches)
        for (const WireEvent &e : b) {
            if (!e.connection) {
                ++mergedLab;
                continue;
            }
            const size_t k = e.connection > base ? 1 : 0;
            if (next[k] >= onConnections.size())
                violation("merge: copy " + std::to_string(k) + " has more events than the file");
            const WireEvent &o = *onConnections[next[k]++];
            if (o.tNs + m.shiftNs[k] != e.tNs || o.kind != e.kind ||
                o.connection + (k ? base : 0) != e.connection)
                violation("merge: event " + std::to_string(next[k] - 1) + " of copy " + std::to_string(k) +
                          " moved by " + std::to_string(e.tNs - o.tNs) + " instead of " +
                          std::to_string(m.shiftNs[k]) + ", connection " + std::to_string(o.connection) +
                          " became " + std::to_string(e.connection));
        }
    if (mergedLab != 2 * labEvents)
        violation("merge: " + std::to_string(mergedLab) + " events on connection 0, expected twice " +
                  std::to_string(labEvents));
    use(merged, exports);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, size_t size)
{
    // A damaged string field makes protobuf log an error per parse; the reader's own message says enough.
    static const bool quiet = [] {
        google::protobuf::SetLogHandler(nullptr);
        return true;
    }();
    (void)quiet;
    if (size == 0) return 0;
    const std::uint8_t mode = data[0];
    std::vector<std::uint8_t> file(data + 1, data + size);
    if (mode & fuzz::kModeFixChecksums) fuzz::fixChecksums(file.data(), file.size());
    // No copy: the reader sees exactly the file's bytes, and ASan sees a read past them.
    const QByteArray bytes =
        QByteArray::fromRawData(reinterpret_cast<const char *>(file.data()), qsizetype(file.size()));
    CaptureData capture;
    const CaptureReadResult r = readCaptureBytes(bytes, QStringLiteral("fuzz.rpcscope"), &capture);
    switch (r.status) {
    case CaptureReadResult::Ok:
    case CaptureReadResult::Truncated:
    case CaptureReadResult::Corrupt:
    case CaptureReadResult::Failed:
        break;
    default:
        violation("status " + std::to_string(int(r.status)) + " without a cancel");
    }
    if ((r.status == CaptureReadResult::Ok) != r.message.empty())
        violation("status " + std::to_string(int(r.status)) + " with message \"" + r.message + "\"");
    if (r.message.find('\n') != std::string::npos) violation("message of more than one line: " + r.message);
    if (r.status == CaptureReadResult::Failed && !capture.batches.empty())
        violation("Failed, yet " + std::to_string(capture.batches.size()) + " batches loaded: " + r.message);
    if (!r.usable()) return 0;

    // Written again, it reads back the same.
    Redaction none;
    none.enabled = false;
    const QByteArray again = captureToBytes(capture, none);
    CaptureData reread;
    const CaptureReadResult r2 = readCaptureBytes(again, QStringLiteral("again.rpcscope"), &reread);
    if (r2.status != CaptureReadResult::Ok)
        violation("a usable capture written again does not read back: " + r2.message);
    if (!sameInfo(capture.info, reread.info)) violation("the header changed when written again");
    if (reread.batches != capture.batches)
        violation("the events changed when written again: " + firstDifference(capture, reread));

    const bool exports = mode & fuzz::kModeExports;
    use(capture, exports);
    if ((mode & fuzz::kModeMergeWithItself) && capture.eventCount() <= kMaxMergeEvents)
        checkMerge(capture, fuzz::kMergeOffsets[(mode >> 2) & 7], exports);
    return 0;
}

#ifdef RPCSCOPE_LIBFUZZER
#include "capture.pb.h"

#include <cmath>
#include <limits>
#include <random>

extern "C" size_t LLVMFuzzerMutate(std::uint8_t *data, size_t size, size_t maxSize);

namespace {

// A field of some (sub)message of a record, found by reflection.
struct FieldRef
{
    google::protobuf::Message *message;
    const google::protobuf::FieldDescriptor *field;
};

void collectFields(google::protobuf::Message *m, std::vector<FieldRef> &out, int depth = 0)
{
    const google::protobuf::Descriptor *d = m->GetDescriptor();
    const google::protobuf::Reflection *r = m->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
        const google::protobuf::FieldDescriptor *f = d->field(i);
        out.push_back({m, f});
        if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE || depth > 4) continue;
        if (f->is_repeated()) {
            for (int k = 0; k < r->FieldSize(*m, f); ++k)
                collectFields(r->MutableRepeatedMessage(m, f, k), out, depth + 1);
        } else if (r->HasField(*m, f)) {
            collectFields(r->MutableMessage(m, f), out, depth + 1);
        }
    }
}

template <typename T> T pick(std::minstd_rand &rng, std::initializer_list<T> values)
{
    return values.begin()[rng() % values.size()];
}

// Sets one field of the record to a value a writer never produces, or reorders, duplicates or drops an
// element of a repeated field (events out of order, a close before an open, a response without a request).
// Growing a varint in place is what byte mutations cannot do: the lengths of the messages around it change.
void mutateField(capture::Record &record, std::minstd_rand &rng)
{
    using FD = google::protobuf::FieldDescriptor;
    std::vector<FieldRef> fields;
    collectFields(&record, fields);
    const FieldRef ref = fields[rng() % fields.size()];
    google::protobuf::Message *m = ref.message;
    const FD *f = ref.field;
    const google::protobuf::Reflection *r = m->GetReflection();
    constexpr std::int64_t i64max = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t i64min = std::numeric_limits<std::int64_t>::min();
    if (f->is_repeated()) {
        const int n = r->FieldSize(*m, f);
        switch (n == 0 ? 0 : rng() % 3) {
        case 0: // add one: a copy of an existing element, or a new one
            if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
                google::protobuf::Message *added = r->AddMessage(m, f);
                if (n) added->CopyFrom(r->GetRepeatedMessage(*m, f, int(rng() % unsigned(n))));
            } else if (f->cpp_type() == FD::CPPTYPE_STRING) {
                r->AddString(
                    m, f, pick<std::string>(rng, {"", "authorization", "\xff\xfe", std::string(300, 'x')}));
            }
            return;
        case 1: // swap two
            r->SwapElements(m, f, int(rng() % unsigned(n)), int(rng() % unsigned(n)));
            return;
        default: // drop one (the last, after moving it there)
            r->SwapElements(m, f, int(rng() % unsigned(n)), n - 1);
            r->RemoveLast(m, f);
            return;
        }
    }
    switch (f->cpp_type()) {
    case FD::CPPTYPE_INT64: {
        // Wrapping, not overflowing: the mutator's own arithmetic must not be what UBSan reports.
        const std::uint64_t now = std::uint64_t(r->GetInt64(*m, f));
        r->SetInt64(m, f,
                    pick<std::int64_t>(rng, {i64max, i64min, -1, 0, kMaxOriginNs, kMaxOriginNs + 1,
                                             -kMaxOriginNs - 1, kMaxSpanNs, kMaxTimeoutNs + 1,
                                             std::int64_t(now + 1), std::int64_t(now - 1),
                                             std::int64_t(now) / 2, std::int64_t(std::uint64_t(i64max) - now),
                                             std::int64_t(std::uint64_t(rng()) << 20)}));
        break;
    }
    case FD::CPPTYPE_INT32:
        r->SetInt32(m, f,
                    pick<std::int32_t>(rng, {std::numeric_limits<std::int32_t>::max(),
                                             std::numeric_limits<std::int32_t>::min(), -1, 0, 1, 17}));
        break;
    case FD::CPPTYPE_UINT32:
        r->SetUInt32(m, f,
                     pick<std::uint32_t>(rng, {std::numeric_limits<std::uint32_t>::max(), 0, 1, 2, 9, 10, 255,
                                               256, 65535, 65536, 0x80000000u}));
        break;
    case FD::CPPTYPE_UINT64:
        r->SetUInt64(m, f, pick<std::uint64_t>(rng, {std::numeric_limits<std::uint64_t>::max(), 0, 1}));
        break;
    case FD::CPPTYPE_DOUBLE:
        r->SetDouble(m, f,
                     pick<double>(rng, {std::nan(""), INFINITY, -INFINITY, 1e308, -1.0, 0.0, 1e-300, 1e12}));
        break;
    case FD::CPPTYPE_BOOL:
        r->SetBool(m, f, !r->GetBool(*m, f));
        break;
    case FD::CPPTYPE_STRING:
        r->SetString(
            m, f,
            pick<std::string>(rng, {"", "\xff\xfe\xfd", std::string(1000, 'a'), "/pkg.Svc/Do", "order-1",
                                    "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "traceparent",
                                    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}));
        break;
    case FD::CPPTYPE_MESSAGE:
        if (r->HasField(*m, f) && rng() % 2)
            r->ClearField(m, f);
        else
            r->MutableMessage(m, f);
        break;
    default:
        break; // capture.proto has no float or enum fields
    }
}

} // namespace

// Half the time: change one field of one record through protobuf reflection and frame it again. A quarter:
// byte mutations of one record's body, framed again (length and CRC). A quarter: libFuzzer's own mutations of
// the whole input, which reach the framing and the checksum paths.
extern "C" size_t LLVMFuzzerCustomMutator(std::uint8_t *data, size_t size, size_t maxSize, unsigned int seed)
{
    if (size < 2 || seed % 4 == 0) return LLVMFuzzerMutate(data, size, maxSize);
    const std::vector<fuzz::RecordSpan> recs = fuzz::records(data + 1, size - 1);
    if (recs.empty()) return LLVMFuzzerMutate(data, size, maxSize);
    std::minstd_rand rng(seed);
    const fuzz::RecordSpan &r = recs[rng() % recs.size()];
    const std::uint8_t *file = data + 1;
    std::vector<std::uint8_t> body(file + r.bodyAt, file + r.bodyAt + r.bodyLength);
    capture::Record record;
    if (seed % 4 != 1 && record.ParseFromArray(body.data(), int(body.size()))) {
        const int changes = 1 + int(rng() % 3);
        for (int i = 0; i < changes; ++i)
            mutateField(record, rng);
        const std::string bytes = record.SerializeAsString();
        body.assign(bytes.begin(), bytes.end());
    } else {
        const size_t room = body.size() + 64;
        body.resize(room);
        body.resize(LLVMFuzzerMutate(body.data(), r.bodyLength, room));
    }

    std::vector<std::uint8_t> out(data, data + 1 + r.lengthAt); // mode byte and everything before the record
    fuzz::appendRecord(out, body.data(), body.size());
    const size_t after = r.bodyAt + r.bodyLength + 4;
    out.insert(out.end(), file + after, file + (size - 1));
    if (out.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
    std::memcpy(data, out.data(), out.size());
    return out.size();
}
#endif
