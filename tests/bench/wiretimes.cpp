#include "wiretimes.h"

#include "benchtext.h"
#include "pcapimport.h"
#include "stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace rpcscope::bench {

std::int64_t wallMinusSteady()
{
    std::int64_t best = -1, offset = 0;
    for (int i = 0; i < 20; ++i) {
        timespec a{}, r{}, b{};
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        const std::int64_t sa = a.tv_sec * 1'000'000'000LL + a.tv_nsec,
                           sb = b.tv_sec * 1'000'000'000LL + b.tv_nsec,
                           rr = r.tv_sec * 1'000'000'000LL + r.tv_nsec;
        if (best < 0 || sb - sa < best) {
            best = sb - sa;
            offset = rr - (sa + (sb - sa) / 2);
        }
    }
    return offset;
}

Relay::Sink EventSink::sink()
{
    return [this](EventBatch &&b) {
        std::lock_guard lk(mu);
        for (WireEvent &e : b)
            all.push_back(std::move(e));
    };
}

std::vector<ConnFrames> byConnection(const EventBatch &events)
{
    std::map<std::uint32_t, ConnFrames> conns;
    std::map<std::tuple<std::uint32_t, int, std::uint32_t, int, int, std::uint64_t>, int> seen;
    // Per connection and direction: the last call stream's frame, and the connection frames since.
    std::map<std::pair<std::uint32_t, int>, std::pair<FrameKey, int>> anchors;
    for (const WireEvent &e : events) {
        if (e.kind == EventKind::ConnectionOpened) {
            conns[e.connection].openedNs = e.tNs;
            if (const PeerNames *p = e.peers()) conns[e.connection].client = p->client;
        } else if (e.kind == EventKind::Frame) {
            const std::uint64_t what = e.frameType == FramePing           ? e.pingData
                                       : e.frameType == FrameWindowUpdate ? e.windowIncrement
                                                                          : 0;
            ConnFrames &c = conns[e.connection];
            auto &[anchor, since] = anchors
                                        .try_emplace({e.connection, int(e.dir)},
                                                     std::pair{FrameKey{int(e.dir), 0, -1, 0, 0, 0}, 0})
                                        .first->second;
            if (e.stream == 0) {
                c.control[{anchor, since++, int(e.frameType), int(e.flags), what}] = e.tNs;
            } else {
                const int n =
                    seen[{e.connection, int(e.dir), e.stream, int(e.frameType), int(e.flags), what}]++;
                anchor = {int(e.dir), e.stream, int(e.frameType), int(e.flags), what, n};
                since = 0;
                c.frames[anchor] = e.tNs;
            }
            if (!c.openedNs) c.openedNs = e.tNs;
        }
    }
    std::vector<ConnFrames> out;
    for (auto &[id, c] : conns)
        out.push_back(std::move(c));
    std::sort(out.begin(), out.end(),
              [](const ConnFrames &a, const ConnFrames &b) { return a.openedNs < b.openedNs; });
    return out;
}

WireErrors compareWireTimes(const std::vector<RelayUnderTest> &relays,
                            const std::vector<ConnFrames> &serverLeg, std::int64_t offsetNs)
{
    // The server leg's connections, in the order they opened, are the relays' in theirs.
    struct Conn
    {
        const ConnFrames *frames;
        const RelayUnderTest *relay;
    };
    std::vector<Conn> conns;
    for (const RelayUnderTest &r : relays)
        for (const ConnFrames &c : r.relay)
            conns.push_back({&c, &r});
    std::sort(conns.begin(), conns.end(),
              [](const Conn &a, const Conn &b) { return a.frames->openedNs < b.frames->openedNs; });
    WireErrors out;
    out.connections = conns.size();
    // The recording's packet times in one direction of a connection (its frames' times), sorted: where a late
    // frame's time may have come from.
    auto packetTimes = [](const ConnFrames *wire, Direction dir) {
        std::vector<std::int64_t> times;
        if (!wire) return times;
        for (const auto &[key, t] : wire->frames)
            if (std::get<0>(key) == int(dir)) times.push_back(t);
        for (const auto &[key, t] : wire->control)
            if (std::get<0>(std::get<0>(key)) == int(dir)) times.push_back(t);
        std::sort(times.begin(), times.end());
        return times;
    };
    auto judge = [&](bool kernel, std::int64_t relayWallNs, std::int64_t wireNs,
                     const std::vector<std::int64_t> &packets) {
        const double us = std::abs(double(relayWallNs - wireNs)) / 1e3;
        out.all[kernel].push_back(us);
        if (us <= WireErrors::kOffUs) return;
        ++out.off[kernel];
        const auto near = std::lower_bound(packets.begin(), packets.end(), relayWallNs - 2'000);
        if (near != packets.end() && *near <= relayWallNs + 2'000 && *near > wireNs + 1'000)
            ++out.offByLaterPacket[kernel];
    };
    for (size_t i = 0; i < conns.size(); ++i) {
        const ConnFrames &rc = *conns[i].frames;
        const bool kernel = conns[i].relay->kernel;
        const ConnFrames *client = nullptr;
        for (const ConnFrames &c : conns[i].relay->clientLeg)
            if (c.client == rc.client) client = &c;
        const ConnFrames *upstream = i < serverLeg.size() ? &serverLeg[i] : nullptr;
        const std::vector<std::int64_t> packets[2] = {packetTimes(client, Direction::ClientToServer),
                                                      packetTimes(upstream, Direction::ServerToClient)};
        // Call streams' frames, each matched on its own stream.
        for (const auto &[key, t] : rc.frames) {
            const bool c2s = std::get<0>(key) == int(Direction::ClientToServer);
            const ConnFrames *wire = c2s ? client : upstream;
            const auto it = wire ? wire->frames.find(key) : decltype(wire->frames.end()){};
            if (!wire || it == wire->frames.end()) {
                ++out.unmatched;
                continue;
            }
            judge(kernel, t + offsetNs, it->second, packets[c2s ? 0 : 1]);
            out.streams[kernel].push_back(out.all[kernel].back());
        }
        // The connection's own frames, by the call stream's frame they follow.
        for (const auto &[key, t] : rc.control) {
            const bool c2s = std::get<0>(std::get<0>(key)) == int(Direction::ClientToServer);
            const ConnFrames *wire = c2s ? client : upstream;
            const auto it = wire ? wire->control.find(key) : decltype(wire->control.end()){};
            if (!wire || it == wire->control.end()) {
                ++out.unmatched;
                continue;
            }
            judge(kernel, t + offsetNs, it->second, packets[c2s ? 0 : 1]);
        }
    }
    return out;
}

bool DumpcapRecording::start(const std::string &filter, const std::string &pcapPath, std::string *error)
{
    const std::string dumpcap = benchtext::inPath("dumpcap");
    if (dumpcap.empty()) {
        *error = "dumpcap not found (install tshark; scripts/setup.sh does)";
        return false;
    }
    m_pid = fork();
    if (m_pid == 0) {
        const int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(dumpcap.c_str(), "dumpcap", "-q", "-i", "lo", "-f", filter.c_str(), "-w", pcapPath.c_str(),
              static_cast<char *>(nullptr));
        _exit(127);
    }
    if (m_pid < 0) {
        *error = "cannot start dumpcap";
        return false;
    }
    // dumpcap writes its file once it captures.
    using namespace std::chrono_literals;
    for (int i = 0; i < 100; ++i) {
        struct stat st
        {
        };
        if (stat(pcapPath.c_str(), &st) == 0 && st.st_size > 0) {
            std::this_thread::sleep_for(300ms);
            return true;
        }
        int status = 0;
        if (waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_pid = -1;
            *error = "dumpcap exited at start (exit status " + std::to_string(WEXITSTATUS(status)) +
                     "; it needs permission to capture on lo)";
            return false;
        }
        std::this_thread::sleep_for(50ms);
    }
    stop();
    *error = "dumpcap wrote nothing to " + pcapPath + " within 5 s";
    return false;
}

void DumpcapRecording::stop()
{
    if (m_pid <= 0) return;
    kill(m_pid, SIGINT);
    waitpid(m_pid, nullptr, 0);
    m_pid = -1;
}

pid_t spin()
{
    const pid_t pid = fork();
    if (pid == 0) {
        for (;;)
            asm volatile("" ::: "memory"); // a loop the compiler keeps
    }
    return pid;
}

bool measureWireTimes(std::uint16_t serverPort, const std::string &pcapPath,
                      const std::function<void(Relay &relay, bool kernel)> &configure,
                      const std::function<void(std::uint16_t readPort, std::uint16_t kernelPort)> &drive,
                      const std::function<std::shared_ptr<const TlsKeyLog>()> &keys, WireTimesRun *run,
                      std::string *error)
{
    EventSink readSink, kernelSink;
    Relay readTimed, kernelTimed;
    if (configure) {
        configure(readTimed, false);
        configure(kernelTimed, true);
    }
    readTimed.setKernelTimestamps(false);
    kernelTimed.setKernelTimestamps(true);
    const HostPort target{"127.0.0.1", serverPort};
    if (!readTimed.start({"127.0.0.1", 0}, target, readSink.sink(), error) ||
        !kernelTimed.start({"127.0.0.1", 0}, target, kernelSink.sink(), error))
        return false;
    const std::uint16_t pr = readTimed.listenAddress().port, pk = kernelTimed.listenAddress().port;
    const std::string filter = "tcp port " + std::to_string(pr) + " or tcp port " + std::to_string(pk) +
                               " or tcp port " + std::to_string(serverPort);
    DumpcapRecording recording;
    if (!recording.start(filter, pcapPath, &run->why)) return true;
    run->recorded = true;
    const pid_t spinners[2] = {spin(), spin()};
    drive(pr, pk);
    for (pid_t p : spinners) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500)); // dumpcap's last packets
    recording.stop();
    readTimed.stop();
    kernelTimed.stop();
    run->kernelStampedReads = kernelTimed.kernelStampedReads();
    run->readTimedReads = kernelTimed.readTimedReads();
    const std::int64_t offset = wallMinusSteady();
    const std::shared_ptr<const TlsKeyLog> keylog = keys ? keys() : nullptr;
    auto imported = [&](std::uint16_t port) {
        PcapImportOptions o;
        o.serverPort = port;
        o.keylog = keylog;
        PcapImportResult res;
        std::string err;
        if (!importPcap(pcapPath, o, &res, &err)) run->importNotes.push_back("pcap import: " + err);
        return byConnection(res.events);
    };
    run->errors = compareWireTimes({{byConnection(readSink.all), imported(pr), false},
                                    {byConnection(kernelSink.all), imported(pk), true}},
                                   imported(serverPort), offset);
    return true;
}

void reportWireTimes(const WireTimesRun &run, const std::string &what, const std::string &connections,
                     std::vector<Row> *rows, std::vector<std::string> *notes)
{
    using benchtext::fmt;
    if (!run.recorded) {
        notes->push_back("DUMPCAP: " + run.why + ": the " + what + "wire-time rows are skipped");
        return;
    }
    notes->insert(notes->end(), run.importNotes.begin(), run.importNotes.end());
    const WireErrors &e = run.errors;
    for (int kernel = 0; kernel < 2; ++kernel) {
        const std::vector<double> &all = e.all[kernel];
        if (all.empty()) {
            notes->push_back(what + (kernel ? "kernel" : "read") + "-timed relay: no frame matched");
            continue;
        }
        const double p99 = percentile(all, 99);
        rows->push_back({what + "wire time error vs dumpcap, " +
                             (kernel ? "kernel timestamps" : "read time (old way)") + ", p50 / p99 / max (" +
                             std::to_string(all.size()) + " frames)",
                         fmt("%.1f", median(all)) + " / " + fmt("%.1f", p99) + " / " +
                             fmt("%.1f us", percentile(all, 100)),
                         "", "", "p99 <= 200 us", p99 <= 200 ? "met" : "missed"});
        const std::vector<double> &streams = e.streams[kernel];
        if (!streams.empty())
            rows->push_back({std::string("  of which call streams' frames, p50 / p99 / max (") +
                                 std::to_string(streams.size()) + " frames)",
                             fmt("%.1f", median(streams)) + " / " + fmt("%.1f", percentile(streams, 99)) +
                                 " / " + fmt("%.1f us", percentile(streams, 100)),
                             "", "", "", ""});
        rows->push_back({"  frames over " + fmt("%.0f", WireErrors::kOffUs) +
                             " us off / of them timed as a later packet (segments the kernel merged before "
                             "the read)",
                         std::to_string(e.off[kernel]) + " / " + std::to_string(e.offByLaterPacket[kernel]),
                         "", "", "", ""});
    }
    notes->push_back(what + "wire times: frames of " + std::to_string(e.connections) + " " + connections +
                     " matched with dumpcap's by direction, stream, type, flags, PING data or WINDOW_UPDATE "
                     "increment, and occurrence on their stream (stream 0: by the call stream's frame "
                     "they follow), client leg for requests, server leg for responses; " +
                     std::to_string(e.unmatched) + " unmatched; kernel-timed reads " +
                     std::to_string(run.kernelStampedReads) + ", of which fell back " +
                     std::to_string(run.readTimedReads));
}

} // namespace rpcscope::bench
