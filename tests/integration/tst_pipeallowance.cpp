// The relay splices large reads through pipes of 1 MiB. An unprivileged user's pipe buffers are limited
// (fs.pipe-user-pages-soft, by default 64 MiB for all of the user's processes), so on a real desktop the
// relay's pipes can be refused at any moment. Then the relay must fall back to copying, and relay and
// decode everything as before: these tests use up the allowance on purpose and check that it does.
//
// Root is not limited, so this test runs as a user of its own (see main); the allowance is per user, so no
// other process shares it.

#include "labclient.h"
#include "labrig.h"

#include <QtTest>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <grp.h>
#include <unistd.h>

using namespace labrig;

namespace {

constexpr int kPipeSize = 1 << 20; // what the relay asks for

// Set by main when it runs as root and cannot become another user (no CAP_SETUID): root's pipes are not
// limited, so there is nothing to test.
std::string g_stillRoot;

int softLimitPages()
{
    std::ifstream f("/proc/sys/fs/pipe-user-pages-soft");
    int pages = 0;
    f >> pages;
    return pages;
}

// Pipes of kPipeSize that this user holds, taking up its pipe-buffer allowance.
class PipeHog
{
public:
    ~PipeHog() { release(int(pipes.size())); }

    // One more pipe of kPipeSize; false, with nothing kept, when the allowance cannot take it.
    bool take()
    {
        std::array<int, 2> p{};
        if (pipe2(p.data(), O_CLOEXEC) != 0) return false;
        if (fcntl(p[1], F_SETPIPE_SZ, kPipeSize) < kPipeSize) {
            close(p[0]);
            close(p[1]);
            return false;
        }
        pipes.push_back(p);
        return true;
    }
    // Takes pipes until the allowance has less than one pipe of kPipeSize left. Bounded by the allowance.
    int fill(int softPages)
    {
        const int most = softPages / (kPipeSize / 4096) + 2;
        while (int(pipes.size()) < most && take()) {
        }
        return int(pipes.size());
    }
    void release(int n)
    {
        for (; n > 0 && !pipes.empty(); --n) {
            close(pipes.back()[0]);
            close(pipes.back()[1]);
            pipes.pop_back();
        }
    }
    // How many more pipes of kPipeSize the allowance takes now; they are given back at once.
    int room()
    {
        const size_t before = pipes.size();
        while (pipes.size() < before + 64 && take()) {
        }
        const int n = int(pipes.size() - before);
        release(n);
        return n;
    }
    int held() const { return int(pipes.size()); }

private:
    std::vector<std::array<int, 2>> pipes;
};

} // namespace

class TestPipeAllowance : public QObject
{
    Q_OBJECT
private slots:
    void fallsBackToCopyingAndDecodesEverything_data()
    {
        QTest::addColumn<int>("room");     // pipes of 1 MiB left in the allowance; -1: all of it
        QTest::addColumn<bool>("splices"); // whether the relay can still splice
        // No pipe at all: the direction copies from the start.
        QTest::newRow("no room") << 0 << false;
        // The direction's pipe is made, the decoder's copy pipe is refused: it gives the first back and
        // copies.
        QTest::newRow("room for one pipe") << 1 << false;
        // Both pipes are made; the pipes that hand the decoder its copy are refused, so the relay thread
        // reads the copy back itself.
        QTest::newRow("room for two pipes") << 2 << true;
        QTest::newRow("all of it") << -1 << true;
    }
    void fallsBackToCopyingAndDecodesEverything()
    {
        QFETCH(int, room);
        QFETCH(bool, splices);
        if (!g_stillRoot.empty()) QSKIP(g_stillRoot.c_str());
        const int soft = softLimitPages();
        if (soft <= 0) QSKIP("this system sets no pipe-buffer allowance (fs.pipe-user-pages-soft is 0)");

        Rig rig;
        QVERIFY2(rig.start(), rig.error.c_str());
        lab::LabClient client(rig.target(), {});
        lab::StreamRequest warm; // the connection is up before the allowance is used up
        warm.set_call_id("warm");
        warm.set_count(1);
        warm.set_message_size(100);
        QCOMPARE(client.serverStream(warm, 10s).code, 0);

        PipeHog hog;
        QVERIFY2(hog.fill(soft) > 0, "could not take a single pipe of 1 MiB");
        QCOMPARE(hog.room(), 0);
        hog.release(room < 0 ? hog.held() : room);
        if (room >= 0) QCOMPARE(hog.room(), room);

        lab::StreamRequest down;
        down.set_call_id("ss-allowance");
        down.set_count(16);
        down.set_message_size(1 << 20);
        const lab::StreamResult r = client.serverStream(down, 30s);
        QCOMPARE(r.code, 0);
        QCOMPARE(r.messages, 16);

        const EventBatch events = rig.stop(); // after which the relay's counts are final
        const std::uint64_t spliced = rig.relay.bytesSpliced();
        if (splices)
            QVERIFY2(spliced >= (8u << 20), std::to_string(spliced).c_str());
        else
            QCOMPARE(spliced, std::uint64_t(0));
        QVERIFY2(rig.relay.bytesRelayed() >= (16u << 20), std::to_string(rig.relay.bytesRelayed()).c_str());
        const auto stream = streamOf(events, "ss-allowance");
        QVERIFY(stream.second != 0);
        std::string why;
        QCOMPARE(checkServerStreamReplies(events, stream, down, &why), 16);
        QVERIFY2(why.empty(), why.c_str());
        QCOMPARE(grpcStatusOf(events, stream).value_or(-1), 0);
        for (const WireEvent &e : events)
            QVERIFY2(!decodeProblem(e), e.reason.c_str());
    }
};

int main(int argc, char **argv)
{
    if (geteuid() == 0) {
        // An otherwise unused user, so that the allowance is this process's alone.
        constexpr uid_t kUser = 64'321;
        if (setgroups(0, nullptr) != 0 || setresgid(kUser, kUser, kUser) != 0 ||
            setresuid(kUser, kUser, kUser) != 0)
            g_stillRoot =
                std::string("running as root, which pipe allowances do not limit, and cannot switch to "
                            "another user: ") +
                std::strerror(errno);
    }
    QCoreApplication app(argc, argv);
    TestPipeAllowance test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_pipeallowance.moc"
