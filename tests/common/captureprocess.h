#pragma once

// `rpcscope-cli capture --progress` as a child process, the way a user runs it: where it listens, the memory
// its progress lines report, its peak RSS, and how it ended. Shared by the hostile-traffic test and its
// benchmark; plain POSIX, so it needs no event loop.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace hostile {

class CaptureProcess
{
public:
    struct Exit
    {
        bool exited = false; // on its own after SIGINT, not killed
        int code = -1;       // exit code when exited
        int signal = 0;      // the signal that ended it otherwise
        // Its peak RSS: VmHWM, read until it ended. Not wait4's ru_maxrss, which also counts the parent's RSS
        // at the spawn (the child ran on the parent's memory until its exec).
        long peakRssKb = 0;
        bool hung = false; // it did not end within the time given and was killed
        std::string describe() const;
    };

    CaptureProcess() = default;
    ~CaptureProcess();
    CaptureProcess(const CaptureProcess &) = delete;
    CaptureProcess &operator=(const CaptureProcess &) = delete;

    // Runs `cli capture --progress --target 127.0.0.1:targetPort --out out` plus `extra`, and waits (up to
    // 20 s) for its "listening on" line.
    bool start(const std::string &cli, std::uint16_t targetPort, const std::string &out,
               const std::vector<std::string> &extra, std::string *error);
    std::uint16_t listenPort() const { return m_listenPort; }
    pid_t pid() const { return m_pid; }
    bool running() const; // not yet ended

    // "N MB in memory" of the progress lines (one a second), in bytes.
    double lastReported() const;
    double maxReported() const;
    int progressLines() const;
    // Waits until `count` progress lines have come in all (false when the process ends first or after
    // timeoutMs).
    bool waitProgressLines(int count, int timeoutMs) const;
    // VmRSS and VmHWM of /proc/PID/status now, in KiB; 0 when it is gone.
    long rssKb() const;
    long hwmKb() const;
    std::string stdoutText() const;
    std::string stderrText() const;

    // SIGINT, then waits up to timeoutMs for it to write its output and end; SIGKILL after that.
    Exit stop(int timeoutMs);

private:
    void readLoop(int outFd, int errFd);
    void takeLine(bool err, const std::string &line);

    pid_t m_pid = -1;
    std::uint16_t m_listenPort = 0;
    std::thread m_reader;
    mutable std::mutex m_mu;
    mutable std::condition_variable m_cv;
    std::string m_out, m_err;
    bool m_eof = false;
    double m_last = 0, m_max = 0;
    int m_lines = 0;
    bool m_stopped = false;
};

} // namespace hostile
