// A lab server in its own process, so a test can kill it mid-call (SIGKILL) the way a crashed server dies.

#include "labserver.h"

#include <cstdio>
#include <thread>

int main()
{
    rpcscope::lab::LabServer server;
    std::string error;
    if (!server.start(&error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    std::printf("port %d\n", server.port());
    std::fflush(stdout);
    for (;;)
        std::this_thread::sleep_for(std::chrono::hours(1)); // until killed
}
