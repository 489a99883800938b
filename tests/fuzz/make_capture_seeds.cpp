// rpcscope-capture-seeds OUTDIR: writes the seed corpus of fuzz_capturefile from real lab runs.
//
// Each scenario runs through the lab's capture relays (LabSession, as rpcscope-cli run does) and its events
// are saved as an .rpcscope file, in the input format of captureinput.h. To keep each seed a few KB, the
// DATA, WINDOW_UPDATE, SETTINGS and PING frame events are left out (header blocks, messages, RST_STREAM,
// GOAWAY, connection and lab events stay: they are what the model is built from), and gRPC payload bytes
// are cut to 16. Besides the whole files: one merged with itself, one cut inside its last record, and one
// with a record whose checksum is wrong.
// Regenerate with:  cmake --build build --target rpcscope-capture-seeds &&
//                   build/tests/fuzz/rpcscope-capture-seeds tests/fuzz/capture-corpus

#include "capturefile.h"
#include "captureinput.h"
#include "clock.h"
#include "labsession.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

using namespace rpcscope;

namespace {

bool keep(const WireEvent &e)
{
    if (e.kind != EventKind::Frame) return true;
    return e.frameType == FrameHeaders || e.frameType == FrameRstStream || e.frameType == FrameGoaway ||
           e.frameType == FrameContinuation;
}

bool runScenario(const std::string &name, CaptureData *out, std::string *error)
{
    const lab::Scenario *scenario = lab::findScenario(name);
    if (!scenario) {
        *error = "no scenario " + name;
        return false;
    }
    std::mutex mu;
    std::vector<EventBatch> batches;
    out->info.hasOrigin = true;
    out->info.originNs = steadyNowNs();
    out->info.originWallNs = wallNowNs();
    out->info.recordFrames = true;
    out->info.writer = "rpcscope-capture-seeds";
    lab::LabSession lab;
    if (!lab.start(
            [&](EventBatch &&b) {
                std::lock_guard lk(mu);
                batches.push_back(std::move(b));
            },
            error))
        return false;
    const lab::ScenarioResult result = lab.run(*scenario);
    lab.stop();
    if (!result.expectationHeld) {
        *error = name + ": " + result.summary;
        return false;
    }
    for (EventBatch &b : batches) {
        std::erase_if(b, [](const WireEvent &e) { return !keep(e); });
        for (WireEvent &e : b)
            if (e.payload.size() > 16) e.payload.resize(16);
        if (!b.empty()) out->batches.push_back(std::move(b));
    }
    return true;
}

std::vector<std::uint8_t> input(std::uint8_t mode, const QByteArray &file)
{
    std::vector<std::uint8_t> out(size_t(file.size()) + 1);
    out[0] = mode;
    std::memcpy(out.data() + 1, file.constData(), size_t(file.size()));
    return out;
}

bool writeFile(const std::filesystem::path &path, const std::vector<std::uint8_t> &bytes)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    return bool(f);
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: rpcscope-capture-seeds OUTDIR\n");
        return 2;
    }
    const std::filesystem::path outDir = argv[1];
    std::filesystem::create_directories(outDir);
    // retry-basic: retries grouped by call id, gaps against the policy; pushback; transparent-retry: GOAWAY
    // and a stream retried without grpc-previous-rpc-attempts; breaker-retry: lab events; deadline-chain:
    // four labelled hops nested by traceparent.
    const char *const scenarios[] = {"retry-basic", "pushback", "transparent-retry", "breaker-retry",
                                     "deadline-chain"};
    Redaction redaction; // as every file rpcscope writes
    size_t total = 0;
    auto write = [&](const std::string &file, const std::vector<std::uint8_t> &bytes) {
        if (!writeFile(outDir / file, bytes)) {
            std::fprintf(stderr, "rpcscope-capture-seeds: cannot write %s\n", (outDir / file).c_str());
            std::exit(1);
        }
        std::printf("  wrote %s (%zu bytes)\n", file.c_str(), bytes.size());
        total += bytes.size();
    };
    for (const char *name : scenarios) {
        std::printf("%s\n", name);
        CaptureData data;
        std::string error;
        if (!runScenario(name, &data, &error)) {
            std::fprintf(stderr, "rpcscope-capture-seeds: %s\n", error.c_str());
            return 1;
        }
        const QByteArray file = captureToBytes(data, redaction);
        // The file must read back whole, or it is no seed of a real capture.
        CaptureData check;
        const CaptureReadResult r = readCaptureBytes(file, QString::fromLatin1(name), &check);
        if (r.status != CaptureReadResult::Ok || check.eventCount() != data.eventCount()) {
            std::fprintf(stderr, "rpcscope-capture-seeds: %s does not read back: %s\n", name,
                         r.message.c_str());
            return 1;
        }
        std::printf("  %zu events in %zu batches\n", data.eventCount(), data.batches.size());
        write(std::string(name) + ".rpcscope.in", input(fuzz::kModeFixChecksums | fuzz::kModeExports, file));
        if (std::string(name) == "retry-basic") {
            // Merged with itself, the copy 1 ms later (kMergeOffsets[1]).
            write("retry-basic-merged.rpcscope.in",
                  input(fuzz::kModeFixChecksums | fuzz::kModeMergeWithItself | (1 << 2), file));
            // Cut inside its last record: loads what is intact.
            write("retry-basic-cut.rpcscope.in", input(0, file.left(file.size() - 7)));
            // A byte of the second record flipped, checksums left as they are: corrupt.
            std::vector<std::uint8_t> bad = input(0, file);
            const auto recs = fuzz::records(bad.data() + 1, bad.size() - 1);
            if (recs.size() > 1) bad[1 + recs[1].bodyAt + recs[1].bodyLength / 2] ^= 0x20;
            write("retry-basic-bad-checksum.rpcscope.in", bad);
        }
        if (std::string(name) == "deadline-chain") // merged with itself, the copy 12.5 ms earlier
            write("deadline-chain-merged.rpcscope.in",
                  input(fuzz::kModeFixChecksums | fuzz::kModeMergeWithItself | (2 << 2), file));
    }
    std::printf("%zu bytes of seeds in %s\n", total, outDir.c_str());
    return 0;
}
