#include "faultrule.h"

#include "events.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace rpcscope {

namespace {

struct ActionName
{
    FaultAction action;
    const char *name;
};
constexpr ActionName kActions[] = {
    {FaultAction::Abort, "abort"},          {FaultAction::Delay, "delay"},
    {FaultAction::Reset, "reset"},          {FaultAction::Goaway, "goaway"},
    {FaultAction::Blackhole, "blackhole"},  {FaultAction::Close, "close"},
    {FaultAction::TcpReset, "tcp-reset"},   {FaultAction::Bandwidth, "bandwidth"},
    {FaultAction::SlowClose, "slow-close"},
};

std::string knownActions()
{
    std::string s;
    for (const ActionName &a : kActions)
        s += (s.empty() ? "" : ", ") + std::string(a.name);
    return s;
}

// The settings each action takes beyond the common ones (hop, nth, percent, window).
std::set<std::string> keysOf(FaultAction action)
{
    std::set<std::string> keys{"hop", "nth", "percent", "window"};
    if (isConnectionAction(action))
        keys.insert("after");
    else
        keys.insert({"method", "attempt"});
    switch (action) {
    case FaultAction::Abort:
        keys.insert({"status", "message", "pushback", "when"});
        break;
    case FaultAction::Delay:
        keys.insert({"on", "by", "jitter"});
        break;
    case FaultAction::Reset:
        keys.insert("code");
        break;
    case FaultAction::Goaway:
        keys.insert("last-stream");
        break;
    case FaultAction::Bandwidth:
        keys.insert({"rate", "dir"});
        break;
    case FaultAction::SlowClose:
        keys.insert("by");
        break;
    case FaultAction::Blackhole:
    case FaultAction::Close:
    case FaultAction::TcpReset:
        break;
    }
    return keys;
}

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

bool parseUnsigned(std::string_view s, std::uint64_t *out)
{
    if (s.empty()) return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end == s.data() + s.size();
}

bool parseDouble(std::string_view s, double *out)
{
    if (s.empty() || s.front() == '+' || s.front() == '-') return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end == s.data() + s.size() && std::isfinite(*out);
}

// "250ms", "2s", "1.5s", "1m", "800us"; a bare number is milliseconds. At most a day: a longer one is a
// mistake, and it keeps every sum of times far from overflow.
bool parseDuration(std::string_view s, std::int64_t *ns)
{
    struct Unit
    {
        const char *suffix;
        double ns;
    };
    static constexpr Unit kUnits[] = {{"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}};
    double scale = 1e6;
    for (const Unit &u : kUnits) {
        const std::string_view suffix(u.suffix);
        if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix &&
            (s[s.size() - suffix.size() - 1] >= '0' && s[s.size() - suffix.size() - 1] <= '9')) {
            scale = u.ns;
            s.remove_suffix(suffix.size());
            break;
        }
    }
    double v = 0;
    if (!parseDouble(s, &v)) return false;
    const double total = v * scale;
    if (total > 86400e9) return false;
    *ns = std::int64_t(std::llround(total));
    return true;
}

// "3", "2-4", "2-".
bool parseCount(std::string_view s, FaultCount *out)
{
    const size_t dash = s.find('-');
    FaultCount c;
    if (dash == std::string_view::npos) {
        if (!parseUnsigned(s, &c.from)) return false;
        c.to = c.from;
    } else {
        if (!parseUnsigned(s.substr(0, dash), &c.from)) return false;
        const std::string_view rest = s.substr(dash + 1);
        if (!rest.empty() && !parseUnsigned(rest, &c.to)) return false;
    }
    if (c.from == 0 || c.to < c.from) return false;
    *out = c;
    return true;
}

// "10000", "64k", "1.5m" bytes a second (k and m: times 1024).
bool parseRate(std::string_view s, std::uint64_t *out)
{
    double scale = 1;
    if (!s.empty() && (s.back() == 'k' || s.back() == 'K')) scale = 1024;
    if (!s.empty() && (s.back() == 'm' || s.back() == 'M')) scale = 1024 * 1024;
    if (scale != 1) s.remove_suffix(1);
    double v = 0;
    if (!parseDouble(s, &v)) return false;
    const double rate = std::floor(v * scale);
    if (rate < 1 || rate > 1e12) return false;
    *out = std::uint64_t(rate);
    return true;
}

bool parseStatus(std::string_view s, int *out, std::string *error)
{
    std::uint64_t n = 0;
    if (parseUnsigned(s, &n)) {
        if (n == 0 || n > 16) {
            *error = "status " + std::string(s) + " is out of range: a failing gRPC status is 1-16";
            return false;
        }
        *out = int(n);
        return true;
    }
    const std::string upper = [&] {
        std::string u(s);
        std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return char(std::toupper(c)); });
        return u;
    }();
    for (int code = 1; code <= 16; ++code)
        if (upper == grpcStatusName(code)) {
            *out = code;
            return true;
        }
    *error = upper == "OK"
                 ? "status OK is no failure: an abort needs a failing status (1-16 or its name)"
                 : "unknown status '" + std::string(s) + "' (a number 1-16 or a name such as UNAVAILABLE)";
    return false;
}

bool parseRstCode(std::string_view s, std::uint32_t *out)
{
    std::string upper(s);
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return char(std::toupper(c)); });
    for (std::uint32_t code = 0; code <= 13; ++code)
        if (upper == h2ErrorName(code)) {
            *out = code;
            return true;
        }
    return false;
}

bool bad(std::string *error, std::string message)
{
    *error = std::move(message);
    return false;
}

bool quoteNeeded(const std::string &v)
{
    return v.empty() || v.find_first_of(" \t,'\"") != std::string::npos;
}

} // namespace

const char *faultActionName(FaultAction action)
{
    for (const ActionName &a : kActions)
        if (a.action == action) return a.name;
    return "?";
}

bool isConnectionAction(FaultAction action)
{
    return action >= FaultAction::Blackhole;
}

bool checkFaultGlob(std::string_view glob, std::string *error)
{
    if (glob.empty()) return bad(error, "the method glob is empty");
    for (size_t i = 0; i < glob.size(); ++i) {
        const char c = glob[i];
        if (c == '\\') {
            if (++i >= glob.size())
                return bad(error, "the method glob '" + std::string(glob) + "' ends in a lone \\");
        } else if (c == '[') {
            size_t j = i + 1;
            if (j < glob.size() && glob[j] == '!') ++j;
            const size_t first = j;
            while (j < glob.size() && (glob[j] != ']' || j == first))
                ++j;
            if (j >= glob.size())
                return bad(error, "the method glob '" + std::string(glob) + "' has a [ without its ]");
            i = j;
        } else if (c == ']') {
            return bad(error, "the method glob '" + std::string(glob) + "' has a ] without its [");
        }
    }
    if (glob.front() != '/' && glob.front() != '*' && glob.front() != '?' && glob.front() != '[')
        return bad(error,
                   "the method glob '" + std::string(glob) +
                       "' cannot match a method path, which starts with / (as in /pkg.Service/Method)");
    return true;
}

bool faultGlobMatch(std::string_view glob, std::string_view text)
{
    // Iterative with one backtrack point (the last *): linear in practice, never exponential.
    size_t g = 0, t = 0;
    size_t starG = std::string_view::npos, starT = 0;
    auto one = [&](size_t gi, char ch, size_t *next) {
        const char c = glob[gi];
        if (c == '?') {
            *next = gi + 1;
            return true;
        }
        if (c == '\\' && gi + 1 < glob.size()) {
            *next = gi + 2;
            return glob[gi + 1] == ch;
        }
        if (c == '[') {
            size_t j = gi + 1;
            const bool negate = j < glob.size() && glob[j] == '!';
            if (negate) ++j;
            const size_t first = j;
            bool in = false;
            for (; j < glob.size() && (glob[j] != ']' || j == first); ++j) {
                if (j + 2 < glob.size() && glob[j + 1] == '-' && glob[j + 2] != ']') {
                    if (ch >= glob[j] && ch <= glob[j + 2]) in = true;
                    j += 2;
                } else if (glob[j] == ch) {
                    in = true;
                }
            }
            *next = j + 1;
            return in != negate;
        }
        *next = gi + 1;
        return c == ch;
    };
    while (t < text.size()) {
        size_t next = 0;
        if (g < glob.size() && glob[g] == '*') {
            starG = g++;
            starT = t;
        } else if (g < glob.size() && one(g, text[t], &next)) {
            g = next;
            ++t;
        } else if (starG != std::string_view::npos) {
            g = starG + 1;
            t = ++starT;
        } else {
            return false;
        }
    }
    while (g < glob.size() && glob[g] == '*')
        ++g;
    return g == glob.size();
}

bool faultRuleFromFields(const std::vector<std::pair<std::string, std::string>> &fields, FaultRule *out,
                         std::string *error)
{
    FaultRule r;
    for (const auto &[key, value] : fields) {
        // Keeps every message about the rule one line, and its text one that reads back as the same rule.
        if (std::any_of(key.begin(), key.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }) ||
            std::any_of(value.begin(), value.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
            return bad(error, "the rule holds a control character (a line break, a tab in a value...)");
        if (value.find('\'') != std::string::npos && value.find('"') != std::string::npos)
            return bad(error, "the value of '" + key + "' holds both ' and \", so it cannot be quoted");
    }
    const auto actionField =
        std::find_if(fields.begin(), fields.end(), [](const auto &f) { return f.first == "action"; });
    if (actionField == fields.end())
        return bad(error, "the rule has no action (one of " + knownActions() + ")");
    const std::string actionName = lower(actionField->second);
    const auto known = std::find_if(std::begin(kActions), std::end(kActions),
                                    [&](const ActionName &a) { return actionName == a.name; });
    if (known == std::end(kActions))
        return bad(error, "unknown action '" + actionField->second + "' (known: " + knownActions() + ")");
    r.action = known->action;
    const std::set<std::string> keys = keysOf(r.action);
    std::set<std::string> seen;
    std::string text = known->name;
    for (const auto &[key, value] : fields) {
        if (key == "action") {
            if (&key != &actionField->first) return bad(error, "the action is given twice");
            continue;
        }
        if (!keys.count(key)) {
            static const std::set<std::string> anyKeys{
                "hop",   "method", "attempt", "nth",         "percent", "window",
                "after", "status", "message", "pushback",    "when",    "on",
                "by",    "jitter", "code",    "last-stream", "rate",    "dir"};
            if (!anyKeys.count(key)) return bad(error, "unknown key '" + key + "'");
            return bad(error, "key '" + key + "' does not apply to " + known->name +
                                  (isConnectionAction(r.action) && (key == "method" || key == "attempt")
                                       ? " (a connection action matches connections, not calls)"
                                       : ""));
        }
        if (!seen.insert(key).second) return bad(error, "key '" + key + "' is given twice");
        const std::string v = value;
        const std::string &k = key; // clang before 16 cannot capture a structured binding
        auto badValue = [&](const std::string &expected) {
            return bad(error, k + "=" + v + ": " + expected);
        };
        if (key == "hop") {
            if (v.empty()) return badValue("expected a hop's label");
            r.hop = v;
        } else if (key == "method") {
            if (!checkFaultGlob(v, error)) return false;
            r.method = v;
        } else if (key == "attempt" || key == "nth") {
            FaultCount c;
            if (!parseCount(v, &c)) return badValue("expected a count from 1, as 3, 2-4 or 2-");
            (key == "attempt" ? r.attempt : r.nth) = c;
        } else if (key == "percent") {
            double p = 0;
            if (!parseDouble(v, &p) || p > 100) return badValue("expected a percentage from 0 to 100");
            r.percent = p;
        } else if (key == "window") {
            const size_t dash = v.find('-');
            std::int64_t from = 0, to = 0;
            const std::string_view sv(v);
            if (dash == std::string::npos || (dash > 0 && !parseDuration(sv.substr(0, dash), &from)) ||
                (dash + 1 < v.size() && !parseDuration(sv.substr(dash + 1), &to)))
                return badValue("expected FROM-TO since the capture started, as 5s-20s, 5s- or -10s");
            r.windowFromNs = from;
            if (dash + 1 < v.size()) {
                if (to <= from) return badValue("the window ends before it starts");
                r.windowToNs = to;
            }
        } else if (key == "after" || key == "by" || key == "jitter") {
            std::int64_t ns = 0;
            if (!parseDuration(v, &ns))
                return badValue("expected a duration up to a day, as 250ms, 2s or 1m");
            (key == "after" ? r.afterNs : key == "by" ? r.byNs : r.jitterNs) = ns;
        } else if (key == "status") {
            if (!parseStatus(v, &r.status, error)) return false;
        } else if (key == "message") {
            r.message = v;
        } else if (key == "pushback") {
            std::uint64_t ms = 0;
            if (lower(v) == "stop")
                r.pushbackMs = -1;
            else if (parseUnsigned(v, &ms) && ms <= 86'400'000)
                r.pushbackMs = std::int64_t(ms);
            else
                return badValue("expected milliseconds up to a day, or stop (do not retry)");
        } else if (key == "when") {
            if (lower(v) != "before" && lower(v) != "after") return badValue("expected before or after");
            r.beforeServer = lower(v) == "before";
        } else if (key == "on") {
            if (lower(v) != "request" && lower(v) != "response")
                return badValue("expected request or response");
            r.delayResponse = lower(v) == "response";
        } else if (key == "code") {
            if (!parseRstCode(v, &r.rstCode))
                return badValue("expected an HTTP/2 error code by name, as CANCEL, REFUSED_STREAM or "
                                "INTERNAL_ERROR");
        } else if (key == "last-stream") {
            if (lower(v) != "below" && lower(v) != "above") return badValue("expected below or above");
            r.goawayBelow = lower(v) == "below";
        } else if (key == "rate") {
            if (!parseRate(v, &r.bytesPerSecond))
                return badValue("expected bytes a second, at least 1, as 10000, 64k or 1.5m");
        } else if (key == "dir") {
            const std::string d = lower(v);
            if (d != "up" && d != "down" && d != "both") return badValue("expected up, down or both");
            r.limitUp = d != "down";
            r.limitDown = d != "up";
        }
        text += " " + key + "=" +
                (quoteNeeded(v) ? (v.find('\'') == std::string::npos ? "'" + v + "'" : "\"" + v + "\"") : v);
    }
    if ((r.action == FaultAction::Delay || r.action == FaultAction::SlowClose) && !seen.count("by"))
        return bad(error, std::string(known->name) + " needs by=DURATION (as by=500ms)");
    if (r.action == FaultAction::Bandwidth && !seen.count("rate"))
        return bad(error, "bandwidth needs rate=BYTES_PER_SECOND (as rate=64k)");
    r.text = std::move(text);
    *out = std::move(r);
    return true;
}

bool parseFaultRule(std::string_view text, FaultRule *out, std::string *error)
{
    std::vector<std::pair<std::string, std::string>> fields;
    size_t i = 0;
    auto separator = [](char c) { return c == ' ' || c == '\t' || c == ','; };
    if (std::any_of(text.begin(), text.end(),
                    [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }))
        return bad(error, "the rule holds a control character (a line break...)");
    bool first = true;
    while (true) {
        while (i < text.size() && separator(text[i]))
            ++i;
        if (i >= text.size()) break;
        std::string key, value;
        bool hasValue = false;
        while (i < text.size() && !separator(text[i]) && text[i] != '=')
            key += text[i++];
        if (i < text.size() && text[i] == '=') {
            hasValue = true;
            ++i;
            if (i < text.size() && (text[i] == '\'' || text[i] == '"')) {
                const char quote = text[i++];
                const size_t end = text.find(quote, i);
                if (end == std::string_view::npos)
                    return bad(error, "a " + std::string(1, quote) + " is not closed");
                value = text.substr(i, end - i);
                i = end + 1;
                if (i < text.size() && !separator(text[i]))
                    return bad(error, "a quoted value must be followed by a space or a comma");
            } else {
                while (i < text.size() && !separator(text[i]))
                    value += text[i++];
            }
        }
        if (first) {
            if (hasValue) return bad(error, "a rule starts with its action (one of " + knownActions() + ")");
            fields.emplace_back("action", key);
            first = false;
            continue;
        }
        if (key.empty()) return bad(error, "a setting has no key (expected KEY=VALUE)");
        if (!hasValue) {
            if (lower(key) == key && std::any_of(std::begin(kActions), std::end(kActions),
                                                 [&](const ActionName &a) { return key == a.name; }))
                return bad(error, "one action a rule: give '" + key + "' a rule of its own");
            return bad(error, "'" + key + "' is no KEY=VALUE setting");
        }
        fields.emplace_back(std::move(key), std::move(value));
    }
    if (fields.empty()) return bad(error, "the rule is empty (expected an action, as: blackhole nth=1)");
    return faultRuleFromFields(fields, out, error);
}

const char *faultRuleSyntaxHelp()
{
    return "A fault rule is an action, then KEY=VALUE settings, separated by spaces or commas (quote a "
           "value\n"
           "with spaces in ' or \"). Durations: 250ms, 2s, 1m (a bare number is ms). Counts: 3, 2-4, 2-.\n"
           "  Connection actions (applied to a whole TCP connection, noted on its timeline):\n"
           "    blackhole                 stop forwarding both ways; the connection stays open\n"
           "    close                     close both sides (FIN)\n"
           "    tcp-reset                 reset both sides (RST)\n"
           "    bandwidth rate=64k [dir=up|down|both]   at most so many bytes a second (k, m: x1024)\n"
           "    slow-close by=DURATION    pass each side's close on only after DURATION\n"
           "    settings: hop=LABEL nth=COUNT (the n-th connection) percent=P window=FROM-TO (since the\n"
           "    capture started) after=DURATION (since the connection opened)\n"
           "  Stream actions (applied to one attempt of a matching call, noted on the attempt; the hop's\n"
           "  connections are then framed and their headers re-encoded):\n"
           "    abort [status=UNAVAILABLE] [message=TEXT] [pushback=MS|stop] [when=before|after]\n"
           "    delay by=DURATION [jitter=DURATION] [on=request|response]\n"
           "    reset [code=CANCEL]       RST_STREAM with an HTTP/2 error code by name\n"
           "    goaway [last-stream=below|above]\n"
           "    settings: hop=LABEL method=GLOB attempt=COUNT nth=COUNT percent=P window=FROM-TO\n"
           "  Example: --fault \"blackhole nth=2 after=500ms\" --fault \"tcp-reset percent=30\"\n";
}

} // namespace rpcscope
