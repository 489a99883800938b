// Built from the capture libraries alone (tests/CMakeLists.txt, layering_capture_has_no_qt): it uses each of
// them so that the linker takes their code, and ldd then shows what a headless capture agent needs at run
// time.

#include "connectiondecoder.h"
#include "pcapimport.h"
#include "pcapngwriter.h"
#include "relay.h"

#include <cstdio>

int main(int argc, char **argv)
{
    using namespace rpcscope;
    if (argc < 2) {
        std::puts("usage: layering_capture_probe FILE.pcap (nothing is needed to link it)");
        return 0;
    }
    PcapImportResult imported;
    std::string error;
    if (!importPcap(argv[1], {}, &imported, &error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    CaptureData data;
    data.batches.push_back(imported.events);
    ConnectionDecoder decoder(1);
    Relay relay;
    HostPort listen;
    parseHostPort("127.0.0.1:0", &listen, &error);
    std::printf("%zu events, %zu bytes as pcapng, relay on %s\n", imported.events.size(),
                captureToPcapng(data).size(), relay.listenAddress().toString().c_str());
    return 0;
}
