#pragma once

// Several captures on one timeline: files from rpcscope-cli agents on several hosts merged into one event
// stream, so that a chain that crosses machines nests as one.
//
// Time base. Each capture counts its events on its own steady clock, with one wall-clock origin. The merged
// capture keeps the steady clock of the file whose wall-clock origin is the earliest (the reference), and
// places every other file by the difference of wall-clock origins:
//     merged t = t - origin_k + (originWall_k - originWall_ref) + origin_ref + offset_k
// The per-file offset corrects what the wall clocks get wrong (hosts' clocks drift by ms). The common origin
// depends on the files' origins only, never on the offsets, so changing one file's offset by X moves exactly
// that file's events by X. Files without events take no part in choosing the reference; a file without a
// wall-clock origin is placed with its origin at the reference's (and a note says so). A file whose events
// would land beyond what one capture can span from the merged origin (events.h: 9.5 years; only a damaged
// clock does that) is an error, as a file reader would refuse it.
//
// Identity. Connection ids and call ids of different files must not collide: every file's connections are
// renumbered after the previous files' (the first file keeps its own), and a call id (rpcscope-call-id) that
// an earlier file already used is prefixed with the file's label ("LABEL/id"), in its lab events too. Call
// grouping by traceparent is untouched: that is what nests a hop on one host under its caller on another.
// With a label, every connection of that file is labelled "LABEL: HOP" (or "LABEL" when the relay had no hop
// name), so every lane says which file it came from.
//
// Merging one file, offset 0, no label, gives exactly its events.

#include "capturedata.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <unordered_set>
#include <vector>

namespace rpcscope {

struct MergeInput
{
    const CaptureData *data = nullptr; // not owned; must outlive mergeCaptures()
    std::string label;                 // the host or agent, unique among the inputs; empty: labels untouched
    std::int64_t offsetNs = 0;         // added to every event time of this file after alignment
};

struct MergeResult
{
    bool ok = false;
    std::string error; // one line when !ok
    // Worth saying, one line each: a file with no events, a file without a wall-clock origin.
    std::vector<std::string> notes;
    // Per input: what was added to its event times (alignment plus offset), and how its connection ids
    // became the merged ones (merged id = id + connectionBase; 0 stays 0, as lab events use it).
    std::vector<std::int64_t> shiftNs;
    std::vector<std::uint32_t> connectionBase;
    size_t reference = 0; // the input whose steady clock the merged capture keeps
};

// Called with events done and the total; returning false cancels (the result then says "cancelled").
using MergeProgress = std::function<bool(std::int64_t done, std::int64_t total)>;

// Merges `inputs` into `out` (replaced). Events of one file keep their order; files interleave by time.
MergeResult mergeCaptures(const std::vector<MergeInput> &inputs, CaptureData *out,
                          const MergeProgress &progress = {});

// What the merge needs to know of one input before placing it, gathered in one pass over its events: an
// input read twice (once for these, once to merge) never has to be held.
struct MergeFacts
{
    CaptureInfo info; // its header (complete before its first event)
    size_t events = 0;
    std::int64_t minT = std::numeric_limits<std::int64_t>::max();
    std::int64_t maxT = std::numeric_limits<std::int64_t>::min();
    std::int64_t firstT = 0; // the first event's time
    std::uint32_t maxConnection = 0;
    std::unordered_set<std::string> callIds;

    void add(const EventBatch &batch);
};

// One input's events in their order, one at a time.
class MergeSource
{
public:
    virtual ~MergeSource() = default;
    virtual const WireEvent *head() = 0; // nullptr at the end; valid until pop()
    virtual void pop() = 0;
};

struct MergeStreamInput
{
    const MergeFacts *facts = nullptr; // not owned, as `source`
    MergeSource *source = nullptr;     // the same events `facts` was gathered from
    std::string label;
    std::int64_t offsetNs = 0;
};

using MergeBatchSink = std::function<void(EventBatch &&batch)>;

// The same merge, streamed: events pulled from the sources, merged batches handed to `sink` as they are made
// (the same batches mergeCaptures() gives). `info` is complete before the first batch. Only the inputs'
// current events and one batch are held. Nothing reaches `sink` unless the plan succeeds.
MergeResult mergeCaptureStreams(const std::vector<MergeStreamInput> &inputs, CaptureInfo *info,
                                const MergeBatchSink &sink, const MergeProgress &progress = {});

// The label a file gets by default: its name without directory and extension ("edge" for
// "agents/edge.rpcscope"), made unique against `taken` by appending " (2)", " (3)"...
std::string defaultMergeLabel(const std::string &path, const std::vector<std::string> &taken);

// Parses an offset as the CLI takes it: an optional sign, a decimal number and a unit (ns, us, ms, s), for
// example "+12.5ms", "-3us", "0.25s". At most a day either way. False with a one-line reason.
bool parseMergeOffset(const std::string &text, std::int64_t *ns, std::string *error);

} // namespace rpcscope
