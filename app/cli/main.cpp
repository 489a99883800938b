// rpcscope-cli: headless capture and lab runs. Links no QtWidgets.

#include "commands.h"
#include "faultrule.h"
#include "hugepageheap.h"
#include "librarylogs.h"
#include "options.h"

#include <QGuiApplication>
#include <cstdio>
#include <string>
#include <vector>

using namespace rpcscope;

namespace {

const char kUsage[] =
    "usage:\n"
    "  rpcscope-cli list\n"
    "      List the lab scenarios and their parameters.\n"
    "  rpcscope-cli run NAME [--set KEY=VALUE ...] [--json FILE] [--png FILE] [--svg FILE] [--frames]\n"
    "                   [--out FILE [--to FORMAT]] [--comfortable] [--no-rates]\n"
    "      Run a lab scenario headless through the capture proxy, with its parameters changed by --set.\n"
    "      Exits 1 if its expected outcome did not hold. --out also writes the capture in any format below.\n"
    "      Pictures put each call on one row; --comfortable gives every attempt its own row. A strip under\n"
    "      the ruler shows calls/s, failures/s, retries/s and calls in flight; --no-rates leaves it out.\n"
    "  rpcscope-cli capture [--listen HOST:PORT] --target HOST:PORT --out FILE [--to FORMAT] [--duration "
    "SECONDS]\n"
    "                       [--frames] [--allow-remote] [--max-header-list BYTES] [--max-message-keep "
    "BYTES]\n"
    "                       [--keep MB] [--progress] [--proxy [HOST:PORT]] [--fault RULE ...]\n"
    "                       [--faults FILE.json]\n"
    "                       [--tls-intercept [--target-ca FILE | --target-insecure] [--target-cert FILE "
    "--target-key FILE]\n"
    "                        [--keylog FILE]]\n"
    "      Relay and record until the duration ends or SIGINT/SIGTERM/SIGHUP, then write FILE (FILE.json: "
    "the JSON,\n"
    "      FILE.rpcscope: a capture file to reopen or convert later).\n"
    "      --keep bounds the memory of a long capture: the newest calls within MB of timeline are kept\n"
    "      (default 1024; 0 keeps everything), and a warning says how many of the oldest were dropped.\n"
    "      An .rpcscope FILE is written as the capture goes (as FILE.partial until it ends) and gets every\n"
    "      call whatever --keep drops; a kill leaves FILE.partial, which opens as a truncated capture.\n"
    "      Once a second it shows its progress (calls, connections, memory, bytes written) on stderr: on a\n"
    "      terminal as one line rewritten in place, elsewhere only with --progress, as a line each.\n"
    "      --listen defaults to 127.0.0.1:0; port 0 picks a free port, printed as 'listening on HOST:PORT'.\n"
    "      Listening on a non-loopback address needs --allow-remote.\n"
    "      --proxy also (or, without --target, only) serves an HTTP CONNECT proxy, default 127.0.0.1:0,\n"
    "      printed as 'proxy listening on HOST:PORT': clients started with grpc_proxy=http://HOST:PORT "
    "reach\n"
    "      their servers unchanged, and each target becomes a hop named after it.\n"
    "      Decoding limits: --max-header-list (default 16384) cuts longer header lists, --max-message-keep\n"
    "      (default 65536) bounds the bytes of each gRPC message kept for inspection.\n"
    "      --fault RULE (repeatable) and --faults FILE.json make the proxy misbehave on purpose, e.g.\n"
    "      --fault \"blackhole nth=2 after=500ms\"; each fault is noted on its connection and the hits of\n"
    "      each rule are printed at the end. `rpcscope-cli capture --help` lists the rules.\n"
    "      TLS: --tls-intercept terminates the client's TLS with a certificate minted by the rpcscope CA\n"
    "      (see `ca`) and opens TLS to the target, verified against the system's roots or --target-ca FILE\n"
    "      (--target-insecure skips the check); --target-cert FILE --target-key FILE for mTLS; --keylog "
    "FILE\n"
    "      appends both legs' TLS secrets in NSS key-log format. Without it, TLS is relayed undecrypted.\n"
    "      With --proxy it applies to the tunnels too: one whose client starts TLS is intercepted (the\n"
    "      certificate is minted for its SNI, or else the CONNECT target), one that speaks h2c is relayed.\n"
    "  rpcscope-cli ca [--regenerate]\n"
    "      Print the path and PEM of the rpcscope CA certificate (made on first use in\n"
    "      $XDG_CONFIG_HOME/rpcscope or ~/.config/rpcscope); --regenerate replaces it. Trust it per process\n"
    "      (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=PATH), never system-wide.\n"
    "  rpcscope-cli convert IN OUT [--to FORMAT] [--frames] [--no-redact] [--redact NAME ...] [--port PORT]\n"
    "                       [--keylog FILE]\n"
    "      Convert a capture file to OUT. IN is an .rpcscope file, or a pcap/pcapng of h2c (cleartext "
    "HTTP/2)\n"
    "      traffic, whose TCP connections are reassembled and decoded; --port names the HTTP/2 server port\n"
    "      (detected from the client preface otherwise). --keylog FILE (NSS key log, as SSLKEYLOGFILE or\n"
    "      capture --keylog write it) decrypts the pcap's TLS 1.2/1.3 connections (AES-GCM, "
    "ChaCha20-Poly1305)\n"
    "      and decodes them likewise; a connection without its keys gets a note.\n"
    "  rpcscope-cli merge IN1 IN2 ... --out OUT [--to FORMAT] [--offset FILE=OFFSET ...] [--label FILE=NAME "
    "...]\n"
    "                     [--png FILE] [--svg FILE] [--frames] [--no-redact] [--redact NAME ...] [--port "
    "PORT]\n"
    "      Merge captures (from agents on several hosts) onto one timeline, aligned by their wall-clock "
    "origins,\n"
    "      into OUT. Each file's lanes carry its label (its file name, or --label FILE=NAME). --offset moves "
    "one\n"
    "      file's events, e.g. --offset edge.rpcscope=+12.5ms (ns, us, ms, s), to make up for clocks that\n"
    "      disagree. FILE is an input's path, file name or label. A bad argument or unreadable input exits "
    "2.\n"
    "  rpcscope-cli decode IN [--proto FILE ...] [--proto-path DIR ...] [--reflect HOST:PORT ...] [--out "
    "FILE]\n"
    "  rpcscope-cli decode --method /PKG.SERVICE/METHOD [--response] --hex HEX [--proto ...] [--reflect "
    "...]\n"
    "      Decode the gRPC messages kept in capture IN (or one message given in hex) to a JSON document on\n"
    "      stdout or in FILE: JSON with the schemas of --proto files (imports found in the --proto-path\n"
    "      directories, as protoc's -I) or fetched by gRPC server reflection from --reflect; raw protobuf "
    "fields\n"
    "      and hex without one. A .proto that does not load exits 2 naming FILE:LINE:COLUMN; a --reflect "
    "server\n"
    "      that cannot be asked exits 1.\n"
    "  rpcscope-cli stats FILE [--json]\n"
    "      The statistics of a capture: per method and per hop, calls, attempts, amplification, how the "
    "calls\n"
    "      ended, call and attempt latency p50/p90/p99/p99.9/max and backoff gaps; --json as a document.\n"
    "  rpcscope-cli compare A B [--json] [--label-a NAME] [--label-b NAME]\n"
    "  rpcscope-cli compare --lab NAME|SCENARIO,SCENARIO [--json] [--label-a NAME] [--label-b NAME]\n"
    "      Two captures' statistics side by side: both values, the difference B-A and the ratio B/A. --lab\n"
    "      runs two lab scenarios and compares them: storm-vs-throttling (retry-storm against\n"
    "      retry-throttling), bulkhead-shared-vs-isolated, or any two scenarios as A,B. A file that cannot "
    "be\n"
    "      read or holds no calls exits 2.\n"
    "  rpcscope-cli check FILE --service-config CONFIG.json [--json]\n"
    "      Judge every call of a capture against the retry policy in CONFIG.json (the service config the\n"
    "      client was given), the way the client's implementation (from its user-agent: grpc-c++/C-core,\n"
    "      grpc-go, grpc-node-js, grpc-java) retries: attempts against maxAttempts and its clamp of 5,\n"
    "      backoff gaps, retryable codes, pushback, commit and the deadline. Prints per method the calls,\n"
    "      those that conform and each kind of violation, then every call that does not conform and why.\n"
    "      Exits 0 when all conform, 1 when any does not, 2 for an unreadable capture or a bad config.\n"
    "  --frames   also write every HTTP/2 frame into the JSON\n"
    "  --to FORMAT  rpcscope, json (rpcscope-json), chrome (Chrome trace event JSON for Perfetto and\n"
    "             chrome://tracing), otlp (OTLP/JSON spans), pcapng (for Wireshark), otlp-metrics\n"
    "             (OTLP/JSON metrics under gRPC's own names, gRFC A66 and A96); without it the name of\n"
    "             OUT decides: .rpcscope, .json, .chrome.json or .trace.json, .otlp.json, .pcapng,\n"
    "             .metrics.otlp.json\n"
    "  --redact NAME  also mask this header's values (repeatable); authorization, proxy-authorization, "
    "cookie\n"
    "             and set-cookie are always masked in what is written, unless --no-redact\n";

// One command's part of the usage: its "rpcscope-cli CMD" entries and what follows them, then the notes on
// options several commands share. Empty for a command the usage does not know.
std::string commandUsage(const std::string &cmd)
{
    const std::string text = kUsage, entry = "  rpcscope-cli ";
    std::string mine, shared;
    bool inMine = false, inShared = false;
    for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        end = end == std::string::npos ? text.size() : end + 1;
        const std::string line = text.substr(at, end - at);
        at = end;
        if (line.rfind(entry, 0) == 0) {
            const std::string rest = line.substr(entry.size());
            inMine = rest.rfind(cmd, 0) == 0 &&
                     (rest.size() == cmd.size() || rest[cmd.size()] == ' ' || rest[cmd.size()] == '\n');
        } else if (line.rfind("  --", 0) == 0) {
            inMine = false;
            inShared = true;
        }
        if (inMine) mine += line;
        if (inShared) shared += line;
    }
    return mine.empty() ? std::string() : "usage:\n" + mine + shared;
}

bool asksForHelp(const std::vector<std::string> &args)
{
    for (const auto &a : args)
        if (a == "--help" || a == "-h") return true;
    return false;
}

QtMessageHandler g_defaultHandler = nullptr;
// The offscreen platform warns about a missing XDG_RUNTIME_DIR on servers; it does not matter to a CLI.
void quietOffscreen(QtMsgType type, const QMessageLogContext &ctx, const QString &msg)
{
    if (msg.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR"))) return;
    g_defaultHandler(type, ctx, msg);
}

} // namespace

int main(int argc, char **argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    // First, before any thread: with RPCSCOPE_HUGEPAGES=1 it starts the program over. Only for the commands
    // that build timelines (page faults in the growing model are what huge pages save); a quick one (list,
    // ca, help) would only pay the second start, a third of its time.
    const bool quick = args.empty() || args[0] == "list" || args[0] == "ca" || args[0] == "help" ||
                       args[0] == "--help" || args[0] == "-h" || asksForHelp(args);
    if (!quick) restartWithHugePageHeap(argv);
    if (args.empty()) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        // "help CMD" is "CMD --help".
        const std::string part = args.size() > 1 ? commandUsage(args[1]) : std::string();
        std::fputs(part.empty() ? kUsage : part.c_str(), stdout);
        if (!part.empty() && args[1] == "capture") std::fputs(rpcscope::faultRuleSyntaxHelp(), stdout);
        return 0;
    }
    if (asksForHelp(args)) {
        // "CMD --help": that command's usage; an unknown command gets the whole of it.
        const std::string part = commandUsage(args[0]);
        std::fputs(part.empty() ? kUsage : part.c_str(), stdout);
        if (args[0] == "capture") std::fputs(rpcscope::faultRuleSyntaxHelp(), stdout);
        return 0;
    }
    rpcscope::routeLibraryLogs(); // stderr carries rpcscope's own one-line messages only
    // Headless by construction: the painter needs a QGuiApplication for fonts, never a display.
    qputenv("QT_QPA_PLATFORM", "offscreen");
    g_defaultHandler = qInstallMessageHandler(quietOffscreen);
    QGuiApplication app(argc, argv);
    const std::string cmd = args[0];
    args.erase(args.begin());
    if (cmd == "list") return args.empty() ? cmdList() : usageError("list takes no options");
    if (cmd == "run") return cmdRun(args);
    if (cmd == "capture") return cmdCapture(args);
    if (cmd == "convert") return cmdConvert(args);
    if (cmd == "merge") return cmdMerge(args);
    if (cmd == "decode") return cmdDecode(args);
    if (cmd == "stats") return cmdStats(args);
    if (cmd == "compare") return cmdCompare(args);
    if (cmd == "check") return cmdCheck(args);
    if (cmd == "ca") return cmdCa(args);
    return usageError("unknown command '" + cmd + "'");
}
