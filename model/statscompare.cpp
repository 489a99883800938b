#include "statscompare.h"

#include <QJsonArray>
#include <QJsonValue>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace rpcscope {

namespace {

const char kNone[] = "—";

struct Percentile
{
    double q;
    const char *callKey, *callLabel, *attemptKey, *attemptLabel;
};
constexpr Percentile kPercentiles[] = {
    {0.5, "call_p50_ns", "call p50", "attempt_p50_ns", "attempt p50"},
    {0.9, "call_p90_ns", "call p90", "attempt_p90_ns", "attempt p90"},
    {0.99, "call_p99_ns", "call p99", "attempt_p99_ns", "attempt p99"},
    {0.999, "call_p99_9_ns", "call p99.9", "attempt_p99_9_ns", "attempt p99.9"},
    {1.0, "call_max_ns", "call max", "attempt_max_ns", "attempt max"},
};

CompareValue count(const char *key, const char *label, std::uint64_t v)
{
    return {key, label, CompareValue::Unit::Count, double(v), std::nullopt};
}

CompareValue latency(const char *key, const char *label, std::optional<std::int64_t> v)
{
    CompareValue c{key, label, CompareValue::Unit::Nanoseconds, std::nullopt, std::nullopt};
    if (v) c.a = double(*v);
    return c;
}

const char *kindKey(StatsRow::Kind kind)
{
    switch (kind) {
    case StatsRow::Kind::Total:
        return "total";
    case StatsRow::Kind::Method:
        return "method";
    case StatsRow::Kind::Hop:
        return "hop";
    }
    return "total";
}

// Terminal columns of UTF-8 text: every code point counts one ("—", "µ" and "−" are narrow).
size_t width(const std::string &s)
{
    return size_t(std::count_if(s.begin(), s.end(),
                                [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad(const std::string &s, size_t w, bool right)
{
    const size_t have = width(s);
    if (have >= w) return s;
    const std::string spaces(w - have, ' ');
    return right ? spaces + s : s + spaces;
}

std::string printf1(const char *format, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// Three significant digits in the largest unit that keeps the value at least 1.
std::string duration(double ns)
{
    const double a = std::fabs(ns);
    const char *unit = "ns";
    double v = ns;
    if (a >= 1e9) {
        unit = "s";
        v = ns / 1e9;
    } else if (a >= 1e6) {
        unit = "ms";
        v = ns / 1e6;
    } else if (a >= 1e3) {
        unit = "µs";
        v = ns / 1e3;
    } else {
        return printf1("%.0f", v) + " ns";
    }
    const double av = std::fabs(v);
    const char *format = av >= 100 ? "%.0f" : av >= 10 ? "%.1f" : "%.2f";
    return printf1(format, v) + " " + unit;
}

QJsonValue jsonNumber(std::optional<double> v, CompareValue::Unit unit)
{
    if (!v) return QJsonValue(QJsonValue::Null);
    if (unit == CompareValue::Unit::Factor) return *v;
    return qint64(std::llround(*v)); // counts and ns are whole numbers
}

QJsonValue jsonRatio(std::optional<double> v)
{
    return v ? QJsonValue(*v) : QJsonValue(QJsonValue::Null);
}

QJsonArray jsonBuckets(const CompareRow::Buckets &b)
{
    QJsonArray out;
    for (std::uint64_t n : b)
        out.append(qint64(n));
    return out;
}

} // namespace

std::optional<double> CompareValue::difference() const
{
    if (!a || !b) return std::nullopt;
    return *b - *a;
}

std::optional<double> CompareValue::ratio() const
{
    if (!a || !b || *a == 0) return std::nullopt;
    return *b / *a;
}

std::string CompareRow::title() const
{
    switch (kind) {
    case StatsRow::Kind::Total:
        return "Total";
    case StatsRow::Kind::Method:
        return "method " + key;
    case StatsRow::Kind::Hop:
        return key.empty() ? std::string("hop (main proxy)") : "hop " + key;
    }
    return key;
}

const CompareValue *CompareRow::value(const std::string &k) const
{
    for (const CompareValue &v : values)
        if (k == v.key) return &v;
    return nullptr;
}

const CompareRow *StatsComparison::find(StatsRow::Kind kind, const std::string &key) const
{
    for (const CompareRow &r : rows)
        if (r.kind == kind && r.key == key) return &r;
    return nullptr;
}

std::vector<CompareValue> rowValues(const StatsRow &row)
{
    std::vector<CompareValue> v;
    v.push_back(count("calls", "calls", row.calls));
    v.push_back(count("attempts", "attempts", row.attempts));
    // A row with no call on the wire has no amplification to speak of (CallStats says 0).
    CompareValue amp{"amplification", "amplification", CompareValue::Unit::Factor, std::nullopt,
                     std::nullopt};
    if (row.calls > row.count(CallCategory::FailedFast)) amp.a = row.amplification();
    v.push_back(amp);
    v.push_back(count("transparent_retries", "transparent retries", row.transparentRetries));
    for (int c = 0; c < kCallCategories; ++c)
        v.push_back(
            count(categoryKey(CallCategory(c)), categoryLabel(CallCategory(c)), row.outcomes[size_t(c)]));
    for (const Percentile &p : kPercentiles)
        v.push_back(latency(p.callKey, p.callLabel, row.callLatency.percentile(p.q)));
    for (const Percentile &p : kPercentiles)
        v.push_back(latency(p.attemptKey, p.attemptLabel, row.attemptLatency.percentile(p.q)));
    // The attempts-per-call distribution: C-core clamps maxAttempts to 5, so more are transparent retries.
    static const char *const kPerCallKeys[] = {"calls_1_attempt",  "calls_2_attempts",
                                               "calls_3_attempts", "calls_4_attempts",
                                               "calls_5_attempts", "calls_6_or_more_attempts"};
    static const char *const kPerCallLabels[] = {"calls with 1 attempt",  "calls with 2 attempts",
                                                 "calls with 3 attempts", "calls with 4 attempts",
                                                 "calls with 5 attempts", "calls with 6+ attempts"};
    for (size_t n = 1; n <= 6; ++n) {
        std::uint64_t calls = 0;
        for (size_t k = n; k < row.attemptsPerCall.size() && (k == n || n == 6); ++k)
            calls += row.attemptsPerCall[k];
        v.push_back(count(kPerCallKeys[n - 1], kPerCallLabels[n - 1], calls));
    }
    v.push_back(count("gaps_within", "gaps within range", row.gaps.within));
    v.push_back(count("gaps_early", "gaps early", row.gaps.early));
    v.push_back(count("gaps_late", "gaps late", row.gaps.late));
    v.push_back(count("gaps_no_policy", "gaps without policy", row.gaps.noPolicy));
    v.push_back(count("gaps_transparent", "gaps transparent", row.gaps.transparent));
    return v;
}

namespace {

CompareRow makeRow(StatsRow::Kind kind, const std::string &key, const StatsRow *a, const StatsRow *b)
{
    CompareRow row;
    row.kind = kind;
    row.key = key;
    row.inA = a != nullptr;
    row.inB = b != nullptr;
    // The measure list is the same for every row, so an absent side still names every measure.
    static const StatsRow kEmpty;
    row.values = rowValues(a ? *a : kEmpty);
    const std::vector<CompareValue> bv = rowValues(b ? *b : kEmpty);
    for (size_t i = 0; i < row.values.size(); ++i) {
        if (!a) row.values[i].a.reset();
        if (b) row.values[i].b = bv[i].a;
    }
    const StatsRow *sides[2] = {a, b};
    for (int side = 0; side < 2; ++side) {
        if (!sides[side]) continue;
        row.callBuckets[side] = sides[side]->callLatency.buckets();
        row.attemptBuckets[side] = sides[side]->attemptLatency.buckets();
    }
    return row;
}

void addRows(StatsComparison &out, StatsRow::Kind kind, const std::map<std::string, StatsRow> &a,
             const std::map<std::string, StatsRow> *b)
{
    std::set<std::string> keys;
    for (const auto &[k, _] : a)
        keys.insert(k);
    if (b)
        for (const auto &[k, _] : *b)
            keys.insert(k);
    for (const std::string &k : keys) {
        const auto ia = a.find(k);
        const StatsRow *ra = ia == a.end() ? nullptr : &ia->second;
        const StatsRow *rb = nullptr;
        if (b) {
            const auto ib = b->find(k);
            if (ib != b->end()) rb = &ib->second;
        }
        out.rows.push_back(makeRow(kind, k, ra, rb));
    }
}

} // namespace

StatsComparison compareStats(const CallStats &a, const CallStats &b, const std::string &labelA,
                             const std::string &labelB)
{
    StatsComparison out;
    out.labelA = labelA;
    out.labelB = labelB;
    out.rows.push_back(makeRow(StatsRow::Kind::Total, {}, &a.total(), &b.total()));
    addRows(out, StatsRow::Kind::Method, a.methods(), &b.methods());
    addRows(out, StatsRow::Kind::Hop, a.hops(), &b.hops());
    return out;
}

StatsComparison singleStats(const CallStats &stats, const std::string &label)
{
    StatsComparison out;
    out.labelA = label;
    out.oneSided = true;
    out.rows.push_back(makeRow(StatsRow::Kind::Total, {}, &stats.total(), nullptr));
    addRows(out, StatsRow::Kind::Method, stats.methods(), nullptr);
    addRows(out, StatsRow::Kind::Hop, stats.hops(), nullptr);
    return out;
}

QJsonObject comparisonToJson(const StatsComparison &comparison)
{
    QJsonArray rows;
    for (const CompareRow &r : comparison.rows) {
        QJsonObject values;
        for (const CompareValue &v : r.values) {
            if (comparison.oneSided) {
                values.insert(QLatin1String(v.key), jsonNumber(v.a, v.unit));
                continue;
            }
            const std::optional<double> d = v.difference();
            values.insert(QLatin1String(v.key),
                          QJsonObject{{QStringLiteral("a"), jsonNumber(v.a, v.unit)},
                                      {QStringLiteral("b"), jsonNumber(v.b, v.unit)},
                                      {QStringLiteral("difference"), jsonNumber(d, v.unit)},
                                      {QStringLiteral("ratio"), jsonRatio(v.ratio())}});
        }
        QJsonObject row{{QStringLiteral("kind"), QLatin1String(kindKey(r.kind))},
                        {QStringLiteral("key"), QString::fromStdString(r.key)},
                        {QStringLiteral("values"), values}};
        if (!comparison.oneSided) {
            row.insert(QStringLiteral("in_a"), r.inA);
            row.insert(QStringLiteral("in_b"), r.inB);
        }
        for (const auto &[name, buckets] :
             {std::pair{QStringLiteral("call_latency_buckets"), r.callBuckets},
              std::pair{QStringLiteral("attempt_latency_buckets"), r.attemptBuckets}})
            row.insert(name, comparison.oneSided
                                 ? QJsonValue(jsonBuckets(buckets[0]))
                                 : QJsonValue(QJsonObject{{QStringLiteral("a"), jsonBuckets(buckets[0])},
                                                          {QStringLiteral("b"), jsonBuckets(buckets[1])}}));
        rows.append(row);
    }
    QJsonArray edges;
    for (int i = 0; i < LatencyBuckets::kEdges; ++i)
        edges.append(qint64(LatencyBuckets::edgeNs(i)));
    if (comparison.oneSided)
        return {{QStringLiteral("label"), QString::fromStdString(comparison.labelA)},
                {QStringLiteral("bucket_edges_ns"), edges},
                {QStringLiteral("rows"), rows}};
    return {{QStringLiteral("a"),
             QJsonObject{{QStringLiteral("label"), QString::fromStdString(comparison.labelA)}}},
            {QStringLiteral("b"),
             QJsonObject{{QStringLiteral("label"), QString::fromStdString(comparison.labelB)}}},
            {QStringLiteral("bucket_edges_ns"), edges},
            {QStringLiteral("rows"), rows}};
}

std::string formatCompareValue(CompareValue::Unit unit, std::optional<double> v, bool signedValue)
{
    if (!v) return kNone;
    std::string text;
    switch (unit) {
    case CompareValue::Unit::Count:
        text = printf1("%.0f", std::fabs(*v));
        break;
    case CompareValue::Unit::Factor:
        text = printf1("%.2f", std::fabs(*v));
        break;
    case CompareValue::Unit::Nanoseconds:
        text = duration(std::fabs(*v));
        break;
    }
    if (*v < 0) return (signedValue ? "−" : "-") + text;
    if (signedValue && *v > 0) return "+" + text;
    return text;
}

std::string formatRatio(std::optional<double> ratio)
{
    if (!ratio) return kNone;
    const double r = *ratio;
    if (r > 0 && r < 0.01) return "<0.01"; // not 0.00, which would read as none at all
    return printf1(r >= 100 ? "%.0f" : r >= 10 ? "%.1f" : "%.2f", r);
}

std::string comparisonTable(const StatsComparison &comparison)
{
    const bool two = !comparison.oneSided;
    // Cells first, so every column is as wide as its widest cell over all rows.
    std::vector<std::vector<std::string>> lines; // empty vector: a blank line; one cell: a row title
    const std::vector<std::string> header =
        two ? std::vector<std::string>{"", "A", "B", "B−A", "B/A"} : std::vector<std::string>{"", "value"};
    for (const CompareRow &r : comparison.rows) {
        if (!lines.empty()) lines.push_back({});
        std::string title = r.title();
        if (two && !(r.inA && r.inB)) title += r.inA ? "  (only in A)" : "  (only in B)";
        lines.push_back({title});
        for (const CompareValue &v : r.values) {
            std::vector<std::string> cells{"  " + std::string(v.label), formatCompareValue(v.unit, v.a)};
            if (two) {
                cells.push_back(formatCompareValue(v.unit, v.b));
                cells.push_back(formatCompareValue(v.unit, v.difference(), true));
                cells.push_back(formatRatio(v.ratio()));
            }
            lines.push_back(std::move(cells));
        }
    }
    std::vector<size_t> w(header.size(), 0);
    for (size_t c = 0; c < header.size(); ++c)
        w[c] = width(header[c]);
    for (const auto &cells : lines)
        if (cells.size() == header.size())
            for (size_t c = 0; c < cells.size(); ++c)
                w[c] = std::max(w[c], width(cells[c]));

    std::string out;
    if (two) {
        out += "A  " + comparison.labelA + "\n";
        out += "B  " + comparison.labelB + "\n\n";
    } else {
        out += comparison.labelA + "\n\n";
    }
    auto writeLine = [&](const std::vector<std::string> &cells) {
        std::string line = pad(cells[0], w[0], false);
        for (size_t c = 1; c < cells.size(); ++c)
            line += "  " + pad(cells[c], w[c], true);
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out += line + "\n";
    };
    writeLine(header);
    for (const auto &cells : lines) {
        if (cells.empty())
            out += "\n";
        else if (cells.size() == 1)
            out += cells[0] + "\n";
        else
            writeLine(cells);
    }
    return out;
}

} // namespace rpcscope
