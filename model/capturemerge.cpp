#include "capturemerge.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace rpcscope {

namespace {

// Merged events are handed out in batches of this size: a saved merge has records of a sane size, and a
// replay publishes rows in steps as large as a busy live session's.
constexpr size_t kMergeBatch = 4096;
// Progress is reported this often (events): ~1 ms of merging, so a callback costs nothing measurable.
constexpr std::int64_t kProgressStep = 16384;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();

template <typename Input> std::string nameOf(const Input &in, size_t index)
{
    return in.label.empty() ? "capture " + std::to_string(index + 1) : in.label;
}

// A capture in memory as a source.
class DataSource : public MergeSource
{
public:
    explicit DataSource(const CaptureData &data) : m_batches(data.batches) {}
    const WireEvent *head() override
    {
        while (m_batch < m_batches.size() && m_event >= m_batches[m_batch].size()) {
            ++m_batch;
            m_event = 0;
        }
        return m_batch < m_batches.size() ? &m_batches[m_batch][m_event] : nullptr;
    }
    void pop() override { ++m_event; }

private:
    const std::vector<EventBatch> &m_batches;
    size_t m_batch = 0, m_event = 0;
};

// What one file's events go through on their way into the merge.
struct Transform
{
    std::int64_t shift = 0;
    std::uint32_t connectionBase = 0;
    std::string label;
    std::unordered_map<std::string, std::string> renamedCalls;

    WireEvent apply(const WireEvent &in) const
    {
        WireEvent e = in;
        e.tNs += shift;
        if (e.connection != 0) e.connection += connectionBase;
        if (!renamedCalls.empty() && !e.grpc.callId.empty())
            if (auto it = renamedCalls.find(e.grpc.callId); it != renamedCalls.end())
                e.grpc.callId = it->second;
        if (e.kind == EventKind::ConnectionOpened && !label.empty())
            e.label = e.label.empty() ? label : label + ": " + e.label;
        return e;
    }
};

} // namespace

void MergeFacts::add(const EventBatch &batch)
{
    for (const WireEvent &e : batch) {
        if (!events) firstT = e.tNs;
        ++events;
        minT = std::min(minT, e.tNs);
        maxT = std::max(maxT, e.tNs);
        maxConnection = std::max(maxConnection, e.connection);
        if (!e.grpc.callId.empty()) callIds.insert(e.grpc.callId);
    }
}

MergeResult mergeCaptures(const std::vector<MergeInput> &inputs, CaptureData *out,
                          const MergeProgress &progress)
{
    *out = CaptureData{};
    if (inputs.empty()) return mergeCaptureStreams({}, &out->info, {}, progress);
    for (size_t i = 0; i < inputs.size(); ++i)
        if (!inputs[i].data) {
            MergeResult r;
            r.error = "nothing to merge for " + nameOf(inputs[i], i) + ": no capture data";
            return r;
        }
    std::vector<MergeFacts> facts(inputs.size());
    std::vector<std::unique_ptr<DataSource>> sources;
    std::vector<MergeStreamInput> streams;
    for (size_t i = 0; i < inputs.size(); ++i) {
        facts[i].info = inputs[i].data->info;
        for (const EventBatch &b : inputs[i].data->batches)
            facts[i].add(b);
        sources.push_back(std::make_unique<DataSource>(*inputs[i].data));
        streams.push_back({&facts[i], sources.back().get(), inputs[i].label, inputs[i].offsetNs});
    }
    size_t total = 0;
    for (const MergeFacts &f : facts)
        total += f.events;
    out->batches.reserve(total / kMergeBatch + 1);
    MergeResult r = mergeCaptureStreams(
        streams, &out->info, [out](EventBatch &&batch) { out->batches.push_back(std::move(batch)); },
        progress);
    if (!r.ok) *out = CaptureData{};
    return r;
}

MergeResult mergeCaptureStreams(const std::vector<MergeStreamInput> &inputs, CaptureInfo *outInfo,
                                const MergeBatchSink &sink, const MergeProgress &progress)
{
    MergeResult r;
    *outInfo = CaptureInfo{};
    if (inputs.empty()) {
        r.error = "nothing to merge: no captures given";
        return r;
    }
    for (size_t i = 0; i < inputs.size(); ++i)
        if (!inputs[i].facts || !inputs[i].source) {
            r.error = "nothing to merge for " + nameOf(inputs[i], i) + ": no capture data";
            return r;
        }

    // What the plan below reads of each input: its header, and its events' facts.
    struct FileFacts
    {
        size_t events = 0;
        std::int64_t minT = kInt64Max, maxT = kInt64Min;
        std::uint32_t maxConnection = 0;
        bool hasWall = false;
        std::int64_t steadyOrigin = 0; // the header's, or the first event's time as the store would take it
        const std::unordered_set<std::string> *callIds = nullptr;
        const CaptureInfo *info = nullptr;
    };
    std::vector<FileFacts> facts;
    facts.reserve(inputs.size());
    std::int64_t total = 0;
    for (const MergeStreamInput &in : inputs) {
        const MergeFacts &m = *in.facts;
        FileFacts f;
        f.events = m.events;
        f.minT = m.minT;
        f.maxT = m.maxT;
        f.maxConnection = m.maxConnection;
        f.steadyOrigin = m.info.hasOrigin ? m.info.originNs : m.events ? m.firstT : 0;
        f.hasWall = m.info.hasOrigin && m.info.originWallNs != 0;
        f.callIds = &m.callIds;
        f.info = &m.info;
        facts.push_back(f);
        total += std::int64_t(f.events);
    }
    // The reference: the earliest wall-clock origin among the files that have events.
    std::optional<size_t> ref;
    auto better = [&](size_t i) {
        return !ref || (facts[i].hasWall && !facts[*ref].hasWall) ||
               (facts[i].hasWall == facts[*ref].hasWall && facts[i].hasWall &&
                facts[i].info->originWallNs < facts[*ref].info->originWallNs);
    };
    for (size_t i = 0; i < inputs.size(); ++i)
        if (facts[i].events && better(i)) ref = i;
    if (!ref) // nothing has events: the origin still says when the (empty) captures were taken
        for (size_t i = 0; i < inputs.size(); ++i)
            if (facts[i].info->hasOrigin && better(i)) ref = i;
    r.reference = ref.value_or(0);
    const CaptureInfo &refInfo = *facts[r.reference].info;
    const FileFacts &refFacts = facts[r.reference];
    const std::int64_t refSteady = refFacts.steadyOrigin;
    const bool refHasWall = refFacts.hasWall;
    if (refSteady < -kMaxOriginNs || refSteady > kMaxOriginNs || refInfo.originWallNs < -kMaxOriginNs ||
        refInfo.originWallNs > kMaxOriginNs) {
        r.error = "cannot merge: " + nameOf(inputs[r.reference], r.reference) + " has an origin out of range";
        return r;
    }

    CaptureInfo info;
    info.hasOrigin = refInfo.hasOrigin || refFacts.events;
    info.originNs = refSteady;
    info.originWallNs = refHasWall ? refInfo.originWallNs : 0;
    info.recordFrames = false;
    info.writer = "rpcscope merge";
    for (const FileFacts &f : facts) {
        info.recordFrames |= f.info->recordFrames;
        for (const std::string &h : f.info->redactedHeaders)
            if (std::find(info.redactedHeaders.begin(), info.redactedHeaders.end(), h) ==
                info.redactedHeaders.end())
                info.redactedHeaders.push_back(h);
    }

    std::vector<Transform> transforms(inputs.size());
    std::set<std::string> labels;
    std::unordered_set<std::string> usedCallIds;
    std::uint64_t nextBase = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const MergeStreamInput &in = inputs[i];
        const FileFacts &f = facts[i];
        Transform &t = transforms[i];
        const std::string name = nameOf(in, i);
        if (!in.label.empty() && !labels.insert(in.label).second) {
            r.error = "two captures are labelled '" + in.label + "': each needs a label of its own";
            return r;
        }
        if (!f.events)
            r.notes.push_back(name + " holds no events");
        else if (!f.hasWall && i != r.reference)
            r.notes.push_back(name + " has no wall-clock origin: its start is placed at " +
                              nameOf(inputs[r.reference], r.reference) + "'s; adjust its offset");

        // In 128 bits: damaged or hostile origins must give an error, never an overflow.
        __int128 shift = __int128(refSteady) - f.steadyOrigin + in.offsetNs;
        if (f.hasWall && refHasWall) shift += __int128(f.info->originWallNs) - refInfo.originWallNs;
        // Placed, every event stays within what one capture can span from its origin (events.h), so the model
        // never overflows on the merge.
        if (f.events && (__int128(f.minT) + shift - refSteady < -kMaxSpanNs ||
                         __int128(f.maxT) + shift - refSteady > kMaxSpanNs)) {
            r.error = "cannot place " + name + " on the common time base: its clock lies too far from " +
                      nameOf(inputs[r.reference], r.reference) + "'s";
            return r;
        }
        if (shift < kInt64Min || shift > kInt64Max) // only possible without events: nothing moves
            shift = 0;
        t.shift = std::int64_t(shift);
        r.shiftNs.push_back(t.shift);

        // The first file keeps its ids; the others follow the highest id used before them.
        if (nextBase + f.maxConnection > std::numeric_limits<std::uint32_t>::max()) {
            r.error = "cannot merge " + name + ": connection ids run out (it uses id " +
                      std::to_string(f.maxConnection) + " after " + std::to_string(nextBase) + " before it)";
            return r;
        }
        t.connectionBase = std::uint32_t(nextBase);
        r.connectionBase.push_back(t.connectionBase);
        nextBase += f.maxConnection;

        t.label = in.label;
        // Sorted, so the renaming does not depend on hash order.
        std::vector<std::string> ids(f.callIds->begin(), f.callIds->end());
        std::sort(ids.begin(), ids.end());
        std::vector<std::string> mine;
        for (const std::string &id : ids) {
            std::string key = id;
            if (usedCallIds.count(id)) {
                const std::string prefix = in.label.empty() ? "capture" + std::to_string(i + 1) : in.label;
                key = prefix + "/" + id;
                for (int n = 2; usedCallIds.count(key) || f.callIds->count(key); ++n)
                    key = prefix + " (" + std::to_string(n) + ")/" + id;
                t.renamedCalls.emplace(id, key);
            }
            mine.push_back(std::move(key));
        }
        usedCallIds.insert(mine.begin(), mine.end());
    }

    // Complete before the first batch.
    *outInfo = info;

    // k-way merge by time; each file's own order is kept as it is (relays flush independently, so a file is
    // not sorted by time, and its order within one connection is what the store relies on).
    auto head = [&](size_t i) { return inputs[i].source->head(); };
    using Entry = std::pair<std::int64_t, size_t>; // (shifted time, file); ties go to the earlier file
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
    for (size_t i = 0; i < inputs.size(); ++i)
        if (const WireEvent *e = head(i)) queue.push({e->tNs + transforms[i].shift, i});

    EventBatch batch;
    batch.reserve(std::min<size_t>(kMergeBatch, size_t(total)));
    std::int64_t done = 0;
    while (!queue.empty()) {
        const size_t i = queue.top().second;
        queue.pop();
        batch.push_back(transforms[i].apply(*head(i)));
        inputs[i].source->pop();
        if (const WireEvent *e = head(i)) queue.push({e->tNs + transforms[i].shift, i});
        if (batch.size() == kMergeBatch) {
            sink(std::move(batch));
            batch = EventBatch();
            batch.reserve(kMergeBatch);
        }
        if (++done % kProgressStep == 0 && progress && !progress(done, total)) {
            r.error = "cancelled";
            return r;
        }
    }
    if (!batch.empty()) sink(std::move(batch));
    if (progress) progress(total, total);
    r.ok = true;
    return r;
}

std::string defaultMergeLabel(const std::string &path, const std::vector<std::string> &taken)
{
    std::string name = path.substr(path.find_last_of('/') + 1);
    static const char *const kExtensions[] = {".rpcscope", ".pcapng", ".pcap", ".cap"};
    bool stripped = false;
    for (const char *ext : kExtensions) {
        const std::string e(ext);
        if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
            name.resize(name.size() - e.size());
            stripped = true;
            break;
        }
    }
    if (!stripped)
        if (const size_t dot = name.find_last_of('.'); dot != std::string::npos && dot > 0) name.resize(dot);
    if (name.empty()) name = "capture";
    std::string label = name;
    for (int n = 2; std::find(taken.begin(), taken.end(), label) != taken.end(); ++n)
        label = name + " (" + std::to_string(n) + ")";
    return label;
}

bool parseMergeOffset(const std::string &text, std::int64_t *ns, std::string *error)
{
    auto fail = [&](const std::string &why) {
        *error = "bad offset '" + text + "': " + why;
        return false;
    };
    size_t i = 0;
    bool negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    const size_t numberStart = i;
    size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
        ++i, ++digits;
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9')
            ++i, ++digits;
    }
    if (digits == 0) return fail("expected a number with a unit, for example +12.5ms or -3us");
    const std::string number = text.substr(numberStart, i - numberStart);
    const std::string unit = text.substr(i);
    std::int64_t scale = 0;
    if (unit == "ns")
        scale = 1;
    else if (unit == "us" || unit == "\xC2\xB5s")
        scale = 1'000;
    else if (unit == "ms")
        scale = 1'000'000;
    else if (unit == "s")
        scale = 1'000'000'000;
    else if (unit.empty())
        return fail("give a unit: ns, us, ms or s (for example +12.5ms)");
    else
        return fail("unknown unit '" + unit + "' (ns, us, ms or s)");
    double value = 0;
    if (number.size() > 32 ||
        std::from_chars(number.data(), number.data() + number.size(), value).ec != std::errc())
        return fail("not a number");
    constexpr double kDayNs = 86'400e9;
    const double v = value * double(scale);
    if (!(v <= kDayNs)) return fail("more than a day");
    *ns = std::llround(v) * (negative ? -1 : 1);
    return true;
}

} // namespace rpcscope
