#include "retryserviceconfig.h"

#include "events.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <cmath>

namespace rpcscope {

namespace {

// Exact name first, then any case (grpc-go decodes with encoding/json, which matches case-insensitively).
QJsonValue field(const QJsonObject &o, const char *name)
{
    const QString key = QString::fromLatin1(name);
    if (o.contains(key)) return o.value(key);
    for (auto it = o.begin(); it != o.end(); ++it)
        if (it.key().compare(key, Qt::CaseInsensitive) == 0) return it.value();
    return QJsonValue(QJsonValue::Undefined);
}

std::string quoted(const QJsonValue &v)
{
    if (v.isString()) return "\"" + v.toString().toStdString() + "\"";
    if (v.isDouble()) {
        QString s = QString::number(v.toDouble(), 'g', 12);
        return s.toStdString();
    }
    if (v.isBool()) return v.toBool() ? "true" : "false";
    if (v.isNull()) return "null";
    if (v.isArray()) return "an array";
    if (v.isObject()) return "an object";
    return "nothing";
}

// A number, or a string holding one (protobuf JSON allows both for integers).
std::optional<double> number(const QJsonValue &v)
{
    if (v.isDouble()) return v.toDouble();
    if (v.isString()) {
        bool ok = false;
        const double d = v.toString().toDouble(&ok);
        if (ok && std::isfinite(d)) return d;
    }
    return std::nullopt;
}

class Parser
{
public:
    std::string error;

    bool fail(const std::string &where, const std::string &what)
    {
        error = where + ": " + what;
        return false;
    }

    bool duration(const QJsonObject &o, const char *name, const std::string &where, bool required,
                  std::optional<double> *out, bool positive)
    {
        const QJsonValue v = field(o, name);
        const std::string at = where + "." + name;
        if (v.isUndefined()) return required ? fail(at, "missing") : true;
        const std::optional<double> ms =
            v.isString() ? RetryServiceConfig::durationMs(v.toString().toStdString()) : std::nullopt;
        if (!ms) return fail(at, quoted(v) + " is not a duration (seconds with an \"s\", e.g. \"0.1s\")");
        if (positive && *ms <= 0) return fail(at, quoted(v) + " must be greater than 0");
        *out = ms;
        return true;
    }

    bool retryPolicy(const QJsonValue &v, const std::string &at, MethodRetryPolicy *p)
    {
        if (!v.isObject()) return fail(at, "must be an object, got " + quoted(v));
        const QJsonObject o = v.toObject();
        const QJsonValue attempts = field(o, "maxAttempts");
        if (attempts.isUndefined()) return fail(at + ".maxAttempts", "missing");
        const std::optional<double> n = number(attempts);
        if (!n || *n != std::floor(*n))
            return fail(at + ".maxAttempts", quoted(attempts) + " is not an integer");
        // C-core refuses the whole config (the channel fails); grpc-go drops the policy. Either way the
        // user's expectation is not what the client does: refuse it here.
        if (*n < 2) return fail(at + ".maxAttempts", quoted(attempts) + " must be 2 or more");
        p->maxAttempts = *n > 1e6 ? 1'000'000 : int(*n);
        std::optional<double> initial, max;
        if (!duration(o, "initialBackoff", at, true, &initial, true)) return false;
        if (!duration(o, "maxBackoff", at, true, &max, true)) return false;
        p->initialBackoffMs = *initial;
        p->maxBackoffMs = *max;
        const QJsonValue mult = field(o, "backoffMultiplier");
        if (mult.isUndefined()) return fail(at + ".backoffMultiplier", "missing");
        const std::optional<double> m = number(mult);
        if (!m || *m <= 0) return fail(at + ".backoffMultiplier", quoted(mult) + " must be a number above 0");
        p->backoffMultiplier = *m;
        const QJsonValue codes = field(o, "retryableStatusCodes");
        if (codes.isUndefined()) return fail(at + ".retryableStatusCodes", "missing");
        if (!codes.isArray() || codes.toArray().isEmpty())
            return fail(at + ".retryableStatusCodes", "must be a non-empty array, got " + quoted(codes));
        const QJsonArray list = codes.toArray();
        for (int i = 0; i < list.size(); ++i) {
            const QJsonValue c = list.at(i);
            int code = -1;
            if (c.isString())
                code = RetryServiceConfig::statusCode(c.toString().toStdString());
            else if (c.isDouble() && c.toDouble() == std::floor(c.toDouble()))
                code = RetryServiceConfig::statusCode(std::to_string(std::int64_t(c.toDouble())));
            if (code < 0)
                return fail(at + ".retryableStatusCodes[" + std::to_string(i) + "]",
                            quoted(c) +
                                " is not a gRPC status code (a name such as \"UNAVAILABLE\", or 0-16)");
            p->retryableCodes.insert(code);
        }
        p->hasRetry = true;
        return true;
    }
};

} // namespace

int RetryServiceConfig::statusCode(const std::string &text)
{
    if (text.empty()) return -1;
    if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        if (text.size() > 2) return -1;
        const int n = std::stoi(text);
        return n <= 16 ? n : -1;
    }
    const QString upper = QString::fromStdString(text).toUpper();
    for (int c = 0; c <= 16; ++c)
        if (upper == QLatin1String(grpcStatusName(c))) return c;
    return -1;
}

std::optional<double> RetryServiceConfig::durationMs(const std::string &text)
{
    // Seconds, an optional fraction of up to 9 digits, then "s" (protobuf's JSON mapping of Duration);
    // ".01s" too, which grpc-go's own example uses.
    if (text.size() < 2 || text.back() != 's') return std::nullopt;
    const std::string num = text.substr(0, text.size() - 1);
    size_t digits = 0, dots = 0, fraction = 0;
    for (char c : num) {
        if (c == '.') {
            ++dots;
        } else if (c >= '0' && c <= '9') {
            ++digits;
            fraction += dots;
        } else {
            return std::nullopt;
        }
    }
    if (digits == 0 || dots > 1 || fraction > 9 || num.size() > 21) return std::nullopt;
    return std::stod(num) * 1000.0;
}

std::optional<RetryServiceConfig> RetryServiceConfig::parse(const QByteArray &json, std::string *error)
{
    auto failed = [&](const std::string &message) -> std::optional<RetryServiceConfig> {
        if (error) *error = message;
        return std::nullopt;
    };
    QJsonParseError perr{};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &perr);
    if (perr.error != QJsonParseError::NoError)
        return failed("not JSON: " + perr.errorString().toStdString() + " at offset " +
                      std::to_string(perr.offset));
    if (!doc.isObject()) return failed("the service config must be a JSON object");
    const QJsonObject root = doc.object();
    RetryServiceConfig config;
    Parser p;
    const QJsonValue mcs = field(root, "methodConfig");
    if (!mcs.isUndefined() && !mcs.isArray())
        return failed("methodConfig: must be an array, got " + quoted(mcs));
    const QJsonArray list = mcs.toArray();
    for (int i = 0; i < list.size(); ++i) {
        const std::string at = "methodConfig[" + std::to_string(i) + "]";
        if (!list.at(i).isObject()) return failed(at + ": must be an object, got " + quoted(list.at(i)));
        const QJsonObject mc = list.at(i).toObject();
        MethodRetryPolicy policy;
        const QJsonValue rp = field(mc, "retryPolicy");
        if (!rp.isUndefined() && !p.retryPolicy(rp, at + ".retryPolicy", &policy)) return failed(p.error);
        std::optional<double> timeout;
        if (!p.duration(mc, "timeout", at, false, &timeout, false)) return failed(p.error);
        policy.timeoutMs = timeout;
        const QJsonValue names = field(mc, "name");
        if (!names.isUndefined() && !names.isArray())
            return failed(at + ".name: must be an array, got " + quoted(names));
        const size_t index = config.m_policies.size();
        const QJsonArray nameList = names.toArray();
        for (int k = 0; k < nameList.size(); ++k) {
            const std::string nat = at + ".name[" + std::to_string(k) + "]";
            if (!nameList.at(k).isObject())
                return failed(nat + ": must be an object, got " + quoted(nameList.at(k)));
            const QJsonObject n = nameList.at(k).toObject();
            const QJsonValue sv = field(n, "service"), mv = field(n, "method");
            if ((!sv.isUndefined() && !sv.isString()) || (!mv.isUndefined() && !mv.isString()))
                return failed(nat + ": service and method must be strings");
            const std::string service = sv.toString().toStdString(), method = mv.toString().toStdString();
            if (service.empty() && !method.empty())
                return failed(nat + ".method: \"" + method + "\" names a method without a service");
            const std::string key = service.empty()  ? std::string()
                                    : method.empty() ? service + "/"
                                                     : "/" + service + "/" + method;
            for (const Entry &e : config.m_names)
                if (e.key == key)
                    return failed(nat + ": duplicate name " +
                                  (key.empty() ? std::string("(the default)")
                                               : "\"" + (method.empty() ? service : key) + "\""));
            config.m_names.push_back({key, index});
        }
        config.m_policies.push_back(std::move(policy));
    }
    const QJsonValue rt = field(root, "retryThrottling");
    if (!rt.isUndefined()) {
        if (!rt.isObject()) return failed("retryThrottling: must be an object, got " + quoted(rt));
        const QJsonObject o = rt.toObject();
        const QJsonValue mt = field(o, "maxTokens"), tr = field(o, "tokenRatio");
        const std::optional<double> maxTokens = number(mt), ratio = number(tr);
        if (!maxTokens || *maxTokens <= 0 || *maxTokens > 1000)
            return failed("retryThrottling.maxTokens: " + quoted(mt) + " must be a number in (0, 1000]");
        if (!ratio || *ratio <= 0)
            return failed("retryThrottling.tokenRatio: " + quoted(tr) + " must be a number above 0");
        config.m_throttling = RetryThrottling{*maxTokens, *ratio};
    }
    return config;
}

std::optional<MethodRetryPolicy> RetryServiceConfig::forMethod(const std::string &path) const
{
    // path is "/service/method".
    const size_t slash = path.size() > 1 ? path.find('/', 1) : std::string::npos;
    const std::string service =
        slash == std::string::npos ? path.substr(path.empty() ? 0 : 1) : path.substr(1, slash - 1);
    const std::string keys[] = {path, service + "/", std::string()};
    for (const std::string &key : keys)
        for (const Entry &e : m_names)
            if (e.key == key) {
                MethodRetryPolicy p = m_policies[e.policy];
                p.matchedBy = key.empty()         ? "default"
                              : key.back() == '/' ? key.substr(0, key.size() - 1)
                                                  : key;
                return p;
            }
    return std::nullopt;
}

} // namespace rpcscope
