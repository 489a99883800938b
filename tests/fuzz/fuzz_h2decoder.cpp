// libFuzzer target for the passive HTTP/2 decoder: one ConnectionDecoder fed both directions of one
// connection, in the record format of h2input.h, then finish().
//
// Besides what ASan/UBSan/LSan catch, it checks these properties and aborts when one does not hold:
//  - split invariance: H2Decoder promises that bytes may be split anywhere across feed() calls. A second
//    decoder gets every read again in random smaller pieces (same order, same timestamps), in lockstep, and
//    after each read both must have produced exactly the same events. It also skip()s, at random, bytes
//    that skippable() says it would not look at: that must not change the events either. Not checked in
//    mid-stream mode, where finding the first frame boundary is a heuristic over the bytes at hand.
//  - a decoder that has just become failed() emitted a DecodeError for its direction with error() as text.
//  - every event carries the decoder's connection id.
//  - FlowStallBegin and FlowStallEnd pair up per direction and stream.
//
// Every feed() gets its own exactly-sized heap copy of its bytes, so ASan reports a read past the end of
// one read even when more input follows it.
//
// FUZZ_H2_VERBOSE=1 in the environment prints every event decoded, for triage.
//
// The same file builds two ways: with clang and -fsanitize=fuzzer (scripts/fuzz.sh), and with the normal
// compiler plus replay_main.cpp, which runs the committed corpus as a ctest.

#include "connectiondecoder.h"
#include "h2input.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace rpcscope;

namespace {

constexpr std::uint32_t kConnection = 1;
// Fill records may expand the input; past this many filled bytes they are cut, to keep runs fast.
constexpr size_t kMaxFillBytes = size_t(512) << 10;
// Inputs stop after the read that takes the event count past this: a fill of zeros is an empty DATA frame
// every 9 bytes, and thousands of them teach nothing that a few do not, at a high price per run.
constexpr size_t kMaxEvents = 2048;
// Longer records are fed in reads of this size. The Relay reads up to 256 KiB at once; a smaller bound here
// only caps how many events one read can make before kMaxEvents is looked at.
constexpr size_t kMaxRead = size_t(64) << 10;

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::uint8_t kEmptySettings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};

struct Record
{
    Direction dir;
    const std::uint8_t *data; // literal: into the input; fill: nullptr
    size_t len;
    std::uint8_t fill;
};

std::vector<Record> parse(const std::uint8_t *data, size_t size)
{
    std::vector<Record> records;
    size_t filled = 0;
    size_t i = 1;
    while (i < size) {
        const std::uint8_t h = data[i++];
        const Direction dir = (h & fuzz::kDirS2C) ? Direction::ServerToClient : Direction::ClientToServer;
        size_t n = h & 0x3f;
        if (h & 0x40) {
            n = size_t(h & 0x1f) << 16;
            for (int k = 0; k < 2 && i < size; ++k)
                n |= size_t(data[i++]) << (8 * (1 - k));
        }
        if ((h & 0x60) == 0x60) {
            if (i >= size) break;
            const std::uint8_t b = data[i++];
            n = std::min(n, kMaxFillBytes - filled);
            filled += n;
            records.push_back({dir, nullptr, n, b});
        } else {
            n = std::min(n, size - i);
            records.push_back({dir, data + i, n, 0});
            i += n;
        }
    }
    return records;
}

template <typename D> bool attachMidStream(D &decoder)
{
    if constexpr (requires { decoder.attachMidStream(); }) {
        decoder.attachMidStream();
        return true;
    } else {
        return false;
    }
}

// Deterministic per input, so a crash reproduces from its file.
struct Rng
{
    std::uint64_t s;
    std::uint64_t next()
    {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
};

void feedCopy(ConnectionDecoder &dec, Direction dir, const std::uint8_t *p, std::uint8_t fill, size_t n,
              std::int64_t t, EventBatch &out)
{
    // Exactly n bytes on the heap: a read past them is an ASan report, not a silent read of the next record.
    std::vector<std::uint8_t> buf =
        p ? std::vector<std::uint8_t>(p, p + n) : std::vector<std::uint8_t>(n, fill);
    // An empty read still comes with a valid pointer, as the Relay's std::string::data() always is.
    static const std::uint8_t kNothing = 0;
    dec.feed(dir, n ? buf.data() : &kNothing, n, t, out);
}

// One ConnectionDecoder and what it has said. Its events are compared and dropped read by read, so a fill of
// zeros (an empty frame every 9 bytes) cannot pile up hundreds of megabytes of events.
struct Side
{
    // The batch outlives the run and keeps its capacity: fresh pages for every run cost more than decoding.
    Side(const char *name, EventBatch &events) : name(name), dec(kConnection), events(events)
    {
        events.clear();
    }
    const char *name;
    ConnectionDecoder dec;
    EventBatch &events;
    size_t total = 0; // events so far
    bool failed[2] = {false, false};
    std::set<std::pair<int, std::uint32_t>> stalled; // (direction, stream) between FlowStallBegin and End
};

std::string describe(const WireEvent &e);
[[noreturn]] void violation(const std::string &what);

// After each read: an event for our connection only, and a decoder that has just failed() said so with a
// DecodeError carrying error().
void checkStep(Side &s)
{
    static const bool verbose = std::getenv("FUZZ_H2_VERBOSE") != nullptr; // triage: print what is decoded
    if (verbose && std::strcmp(s.name, "fed whole") == 0)
        for (const WireEvent &e : s.events)
            std::fprintf(stderr, "%s\n", describe(e).c_str());
    for (const WireEvent &e : s.events) {
        if (e.connection != kConnection)
            violation(std::string(s.name) + ": event for connection " + std::to_string(e.connection) + ": " +
                      describe(e));
        // Stalls nest per direction and stream: an end closes the one begun, a begin never repeats one.
        const std::pair<int, std::uint32_t> key{int(e.dir), e.stream};
        if (e.kind == EventKind::FlowStallBegin && !s.stalled.insert(key).second)
            violation(std::string(s.name) + ": FlowStallBegin while that stall is open: " + describe(e));
        if (e.kind == EventKind::FlowStallEnd && !s.stalled.erase(key))
            violation(std::string(s.name) + ": FlowStallEnd without a FlowStallBegin: " + describe(e));
    }
    for (Direction d : {Direction::ClientToServer, Direction::ServerToClient}) {
        const H2Decoder &h = s.dec.decoder(d);
        if (!h.failed() || s.failed[int(d)]) continue;
        s.failed[int(d)] = true;
        bool reported = false;
        for (const WireEvent &e : s.events)
            reported |= e.kind == EventKind::DecodeError && e.dir == d && e.reason == h.error();
        if (h.error().empty() || !reported)
            violation(std::string(s.name) + ": " + (d == Direction::ClientToServer ? "c2s" : "s2c") +
                      " decoder failed() without a DecodeError event carrying error() \"" + h.error() + "\"");
    }
}

void checkSame(Side &whole, Side &split, const std::string &where)
{
    const EventBatch &a = whole.events;
    const EventBatch &b = split.events;
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i])
        ++i;
    if (i < a.size() || i < b.size())
        violation("events depend on how the bytes were split (" + where + "): " + std::to_string(a.size()) +
                  " events fed whole, " + std::to_string(b.size()) +
                  " fed split; first difference at event " + std::to_string(i) +
                  "\n  whole: " + (i < a.size() ? describe(a[i]) : "<none>") +
                  "\n  split: " + (i < b.size() ? describe(b[i]) : "<none>"));
}

// Runs the input through `whole` (one feed() per record, in reads of at most kMaxRead bytes) and, in
// lockstep, through `split` (each of those reads again in random pieces), comparing after every read.
void run(std::uint8_t mode, const std::vector<Record> &records, Side &whole, Side *split, std::uint64_t seed)
{
    auto step = [&](Direction dir, const std::uint8_t *p, std::uint8_t fill, size_t n, std::int64_t t,
                    Rng *rng, const std::string &where) {
        feedCopy(whole.dec, dir, p, fill, n, t, whole.events);
        checkStep(whole);
        if (split) {
            size_t off = 0;
            do {
                size_t want = n;
                if (rng) {
                    // Mostly a few bytes (across frame headers, HPACK strings, gRPC prefixes), sometimes
                    // more; fills in bigger pieces, or a long fill costs a feed() per few bytes.
                    const std::uint64_t x = rng->next();
                    const bool small = p ? (x & 7) != 0 : (x & 1) != 0;
                    want = small ? 1 + (x >> 8) % 10 : 1 + (x >> 8) % 8192;
                }
                const size_t k = std::min(want, n - off);
                // Bytes the decoder says it would not look at are skipped instead of fed (as the Relay
                // leaves them unread), when the random bits say so: the events must not change.
                const size_t skippable = split->dec.skippable(dir);
                if (skippable > 0 && rng && (rng->next() & 1)) {
                    const size_t s = std::min(skippable, n - off);
                    split->dec.skip(dir, s, t, split->events);
                    off += s;
                    continue;
                }
                feedCopy(split->dec, dir, p ? p + off : nullptr, fill, k, t, split->events);
                off += k;
            } while (off < n);
            checkStep(*split);
            checkSame(whole, *split, where);
            split->events.clear();
        }
        whole.total += whole.events.size();
        whole.events.clear();
    };

    if (mode & fuzz::kModeClientPreface)
        step(Direction::ClientToServer, reinterpret_cast<const std::uint8_t *>(kPreface), 0,
             sizeof kPreface - 1, 0, nullptr, "preface");
    if (mode & fuzz::kModeServerSettings)
        step(Direction::ServerToClient, kEmptySettings, 0, sizeof kEmptySettings, 0, nullptr,
             "server SETTINGS");

    Rng rng{seed | 1};
    std::int64_t t = 0;
    for (size_t i = 0; i < records.size() && whole.total < kMaxEvents; ++i) {
        const Record &rec = records[i];
        t += 1'000'000;
        size_t off = 0;
        do {
            const size_t n = std::min(kMaxRead, rec.len - off);
            step(rec.dir, rec.data ? rec.data + off : nullptr, rec.fill, n, t, &rng,
                 "record " + std::to_string(i) + " at " + std::to_string(off));
            off += n;
        } while (off < rec.len && whole.total < kMaxEvents);
    }
    t += 1'000'000;
    whole.dec.finish(t, whole.events);
    checkStep(whole);
    if (split) {
        split->dec.finish(t, split->events);
        checkStep(*split);
        checkSame(whole, *split, "finish");
    }
}

std::string describe(const WireEvent &e)
{
    std::string s = "kind " + std::to_string(int(e.kind)) +
                    (e.dir == Direction::ClientToServer ? " c2s" : " s2c") + " t " + std::to_string(e.tNs) +
                    " stream " + std::to_string(e.stream) + " length " + std::to_string(e.length);
    if (e.kind == EventKind::Frame)
        s += std::string(" ") + frameTypeName(e.frameType) + " flags " + std::to_string(e.flags);
    if (!e.headers.empty()) s += " headers " + std::to_string(e.headers.size());
    if (!e.reason.empty()) s += " text \"" + e.reason.substr(0, 200) + "\"";
    return s;
}

[[noreturn]] void violation(const std::string &what)
{
    std::fprintf(stderr, "fuzz_h2decoder: %s\n", what.c_str());
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const std::uint8_t mode = data[0];
    const std::vector<Record> records = parse(data, size);

    static EventBatch wholeEvents, splitEvents;
    Side whole("fed whole", wholeEvents);
    Side split("fed split", splitEvents);
    // Mid-stream, finding the first frame boundary is a heuristic over the bytes at hand: no split check.
    const bool heuristic =
        (mode & fuzz::kModeMidStream) && attachMidStream(whole.dec) && attachMidStream(split.dec);

    std::uint64_t seed = 1469598103934665603ull; // FNV-1a of the input
    for (size_t i = 0; i < size; ++i)
        seed = (seed ^ data[i]) * 1099511628211ull;
    run(mode, records, whole, heuristic ? nullptr : &split, seed);
    return 0;
}
