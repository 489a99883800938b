#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rpcscope {

// What a fault rule does. The first four act on one stream (a call's attempt), the others on a whole TCP
// connection, as a TCP-level fault proxy's would.
enum class FaultAction : std::uint8_t
{
    Abort,     // answer with a gRPC status as Trailers-Only, before the server sees it or after it answered
    Delay,     // hold the request, or the response headers, for a while
    Reset,     // RST_STREAM with a chosen code
    Goaway,    // GOAWAY on the client connection, its last-stream-id below or above the stream
    Blackhole, // stop forwarding in both directions; the connection stays open
    Close,     // close both sides cleanly (FIN)
    TcpReset,  // reset both sides (RST)
    Bandwidth, // forward at most so many bytes a second
    SlowClose, // pass a side's close on only after a delay
};

const char *faultActionName(FaultAction action);
bool isConnectionAction(FaultAction action);

// A closed range of counts, 1-based: "3", "2-4", "2-" (to no end).
struct FaultCount
{
    std::uint64_t from = 1;
    std::uint64_t to = UINT64_MAX;
    bool contains(std::uint64_t n) const { return n >= from && n <= to; }
    bool operator==(const FaultCount &) const = default;
};

// One rule: what it matches and what it does. Built only by parseFaultRule() or faultRuleFromFields(), which
// refuse anything malformed, so a rule in hand is always valid.
struct FaultRule
{
    FaultAction action = FaultAction::Abort;
    std::string text; // the rule as one line in the compact syntax, for notes and tooltips

    // Matching. Each absent field matches everything.
    std::string hop;                   // a hop's label, exactly
    std::string method;                // a glob on :path ("/shop.Cart/*"); stream actions only
    std::optional<FaultCount> attempt; // 1 + grpc-previous-rpc-attempts; stream actions only
    std::optional<FaultCount> nth;     // the n-th call (or connection) the rest of the rule matches
    double percent = 100;              // of those, at random
    std::int64_t windowFromNs = 0;     // since the capture started
    std::optional<std::int64_t> windowToNs;
    std::int64_t afterNs = 0; // connection actions: how long after the connection opened they start

    // abort
    int status = 14; // UNAVAILABLE
    std::string message;
    std::optional<std::int64_t> pushbackMs; // negative: "do not retry"
    bool beforeServer = true;               // false: after the server answered, replacing its response
    // delay (by, jitter) and slow-close (by)
    bool delayResponse = false; // false: the request
    std::int64_t byNs = 0;
    std::int64_t jitterNs = 0;
    // reset
    std::uint32_t rstCode = 8; // CANCEL
    // goaway
    bool goawayBelow = true; // last-stream-id below the stream: the client may retry it transparently
    // bandwidth
    std::uint64_t bytesPerSecond = 0;
    bool limitUp = true;   // client -> server
    bool limitDown = true; // server -> client

    // The time window, on the capture's clock relative to its start.
    bool inWindow(std::int64_t sinceStartNs) const
    {
        return sinceStartNs >= windowFromNs && (!windowToNs || sinceStartNs < *windowToNs);
    }
};

// The compact one-line syntax of `capture --fault RULE`: an action, then KEY=VALUE settings, separated by
// spaces or commas; a value with spaces or commas is quoted with ' or ". For example
//   "abort status=UNAVAILABLE method=/shop.Cart/* attempt=1 percent=30"
//   "blackhole nth=2 after=500ms"
// False, with one line saying what is wrong, for anything malformed.
bool parseFaultRule(std::string_view text, FaultRule *out, std::string *error);

// The same rule from its settings as pairs (the JSON form: each member of a rule object, "action" among
// them, values as text).
bool faultRuleFromFields(const std::vector<std::pair<std::string, std::string>> &fields, FaultRule *out,
                         std::string *error);

// Globs on a method path: * any run of characters, ? one, [abc] [a-z] [!a] a set, \ quotes the next.
bool checkFaultGlob(std::string_view glob, std::string *error);
bool faultGlobMatch(std::string_view glob, std::string_view text);

// What the syntax accepts, as the lines of `capture --help` and the README show it.
const char *faultRuleSyntaxHelp();

} // namespace rpcscope
