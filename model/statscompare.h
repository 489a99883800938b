#pragma once

// Two runs' statistics side by side (issue 20, "Compare two runs"): for the Total row and every method and
// hop either run has, each measure on both sides with the difference (B - A) and the ratio (B / A). The
// same code prints one run's statistics (`rpcscope-cli stats`), with one side only.

#include "callstats.h"

#include <QJsonObject>
#include <optional>
#include <string>
#include <vector>

namespace rpcscope {

// One measure of one row on both sides.
struct CompareValue
{
    enum class Unit : std::uint8_t
    {
        Count,
        Factor,     // amplification: attempts per call
        Nanoseconds // a latency
    };
    const char *key = "";   // JSON key: "calls", "amplification", "call_p99_ns", ...
    const char *label = ""; // table label: "calls", "amplification", "call p99", ...
    Unit unit = Unit::Count;
    // Empty when that side has no value: the row is not in that run, or it has no ended calls to measure.
    std::optional<double> a, b;

    std::optional<double> difference() const;
    // B / A; empty when A is 0 or either side has no value.
    std::optional<double> ratio() const;
};

struct CompareRow
{
    StatsRow::Kind kind = StatsRow::Kind::Total;
    std::string key;
    bool inA = false, inB = false;
    std::vector<CompareValue> values;
    // The latency histograms (LatencyBuckets) of each side; all zero for a side without the row.
    using Buckets = std::array<std::uint64_t, LatencyBuckets::kCount>;
    Buckets callBuckets[2]{}, attemptBuckets[2]{};

    // "Total", "method /lab.Lab/Call", "hop gateway", "hop (main proxy)".
    std::string title() const;
    const CompareValue *value(const std::string &key) const;
};

struct StatsComparison
{
    std::string labelA, labelB;
    bool oneSided = false; // B is absent: one run's statistics
    // Total first, then the methods, then the hops, each by key.
    std::vector<CompareRow> rows;

    const CompareRow *find(StatsRow::Kind kind, const std::string &key) const;
};

// A against B. Rows present in only one run are kept, with the other side empty.
StatsComparison compareStats(const CallStats &a, const CallStats &b, const std::string &labelA,
                             const std::string &labelB);
// One run, as side A only.
StatsComparison singleStats(const CallStats &stats, const std::string &label);

// The measures of one row, in table order, as CompareValues with only side A set.
std::vector<CompareValue> rowValues(const StatsRow &row);

// {"a": {"label"}, "b": {"label"}, "bucket_edges_ns": [...], "rows": [{"kind", "key", "in_a", "in_b",
// "values": {KEY: {"a", "b", "difference", "ratio"}}, "call_latency_buckets": {"a": [...], "b": [...]},
// "attempt_latency_buckets": {...}}]}; a missing value is null. One-sided: {"label", "bucket_edges_ns",
// "rows": [{"kind", "key", "values": {KEY: value}, "call_latency_buckets": [...], ...}]}. Latencies are in
// ns; bucket i counts [edge i-1, edge i), the last one everything from the last edge on.
QJsonObject comparisonToJson(const StatsComparison &comparison);
// For the terminal: a legend naming A and B, then per row a block of aligned columns
// (measure, A, B, B-A, B/A; one-sided: measure and value).
std::string comparisonTable(const StatsComparison &comparison);

// How the table writes one value: counts as integers, amplification with two decimals, latencies in ns, µs,
// ms or s with three significant digits; "—" for none. `signedValue` writes a difference (with + or −).
std::string formatCompareValue(CompareValue::Unit unit, std::optional<double> v, bool signedValue = false);
std::string formatRatio(std::optional<double> ratio);

} // namespace rpcscope
