#include "statstablemodel.h"

#include "timeformat.h"

#include <QFont>
#include <QStringList>

namespace rpcscope {

namespace {

struct ColumnInfo
{
    const char *title;
    const char *tip;
};

// Indexed by StatsTableModel::Column.
constexpr ColumnInfo kColumns[] = {
    {"", "Total, then one row per method (or per hop). Click a row to show only its calls on the timeline "
         "and in the Calls table; click it again to show every call."},
    {"calls", "Calls, every outcome (failed fast included)"},
    {"attempts", "Attempts on the wire (HTTP/2 streams), transparent retries included"},
    {"ampl.", "Amplification: attempts per call on the wire, the load retries added (1.00× = none)"},
    {"OK 1st", "OK on the first attempt"},
    {"OK retry", "OK after more than one attempt (transparent retries included)"},
    {"fail retried", "Failed after more than one attempt"},
    {"fail 1", "Failed on its only attempt: a code the policy does not retry, or no retry policy"},
    {"fail fast", "Failed without a request on the wire (a client policy refused it: circuit breaker, "
                  "bulkhead); these calls have no lane"},
    {"deadline", "The client got DEADLINE_EXCEEDED, whatever the attempts"},
    {"in flight", "Not ended yet (or between attempts)"},
    {"call p50", "Call latency, median: first attempt's start to the client's outcome (ended calls)"},
    {"call p90", "Call latency, 90th percentile (nearest rank, within 0.4 %)"},
    {"call p99", "Call latency, 99th percentile (nearest rank, within 0.4 %)"},
    {"call p99.9", "Call latency, 99.9th percentile (nearest rank, within 0.4 %)"},
    {"call max", "Call latency, the slowest call"},
    {"att. p50", "Attempt latency, median: each ended attempt's start to its end"},
    {"att. p99", "Attempt latency, 99th percentile (nearest rank, within 0.4 %)"},
    {"att. max", "Attempt latency, the slowest attempt"},
    {"attempts/call", "Calls by their number of attempts on the wire: \"1:12 2:5\" is 12 calls with one "
                      "attempt and 5 with two"},
    {"gaps ok", "Backoff gaps (between a call's attempts) within the range its retry policy allows"},
    {"gaps early", "Backoff gaps shorter than the policy allows"},
    {"gaps late", "Backoff gaps longer than the policy allows"},
    {"gaps ?", "Backoff gaps of calls that did not say their policy: no range to measure against"},
    {"gaps transp.", "Transparent retries: a stream the transport refused, repeated at once (no backoff)"},
};
static_assert(std::size(kColumns) == StatsTableModel::ColumnCount);

constexpr std::int64_t kNoValue = -1;

} // namespace

StatsTableModel::StatsTableModel(QObject *parent) : QAbstractTableModel(parent) {}

void StatsTableModel::setStats(const CallStats *stats)
{
    m_stats = stats;
    resetRows();
}

void StatsTableModel::setKind(StatsRow::Kind kind)
{
    if (kind == m_kind) return;
    m_kind = kind;
    resetRows();
}

void StatsTableModel::resetRows()
{
    beginResetModel();
    m_rows = currentRows();
    endResetModel();
}

std::vector<StatsTableModel::RowRef> StatsTableModel::currentRows() const
{
    std::vector<RowRef> rows;
    if (!m_stats) return rows;
    rows.push_back({StatsRow::Kind::Total, {}});
    const auto &keyed = m_kind == StatsRow::Kind::Hop ? m_stats->hops() : m_stats->methods();
    for (const auto &[key, row] : keyed)
        rows.push_back({m_kind, key});
    return rows;
}

void StatsTableModel::refresh()
{
    if (!m_stats) return;
    const auto &keyed = m_kind == StatsRow::Kind::Hop ? m_stats->hops() : m_stats->methods();
    // Rows only ever come (a call counts once its method is known); fewer means a clear or another run.
    size_t known = 0;
    for (size_t r = 1; r < m_rows.size(); ++r)
        known += keyed.count(m_rows[r].key);
    if (m_rows.empty() || known + 1 != m_rows.size()) {
        resetRows();
        return;
    }
    if (!m_rows.empty()) emit dataChanged(index(0, 0), index(int(m_rows.size()) - 1, ColumnCount - 1));
    if (keyed.size() + 1 == m_rows.size()) return;
    std::vector<RowRef> fresh;
    for (const auto &[key, row] : keyed) {
        bool have = false;
        for (size_t r = 1; r < m_rows.size() && !have; ++r)
            have = m_rows[r].key == key;
        if (!have) fresh.push_back({m_kind, key});
    }
    beginInsertRows({}, int(m_rows.size()), int(m_rows.size() + fresh.size()) - 1);
    m_rows.insert(m_rows.end(), fresh.begin(), fresh.end());
    endInsertRows();
}

StatsRow::Kind StatsTableModel::rowKind(int r) const
{
    return r >= 0 && size_t(r) < m_rows.size() ? m_rows[size_t(r)].kind : StatsRow::Kind::Total;
}

std::string StatsTableModel::rowKey(int r) const
{
    return r >= 0 && size_t(r) < m_rows.size() ? m_rows[size_t(r)].key : std::string();
}

const StatsRow *StatsTableModel::statsRow(int r) const
{
    if (!m_stats || r < 0 || size_t(r) >= m_rows.size()) return nullptr;
    return m_stats->find(m_rows[size_t(r)].kind, m_rows[size_t(r)].key);
}

bool StatsTableModel::isOtherRow(StatsRow::Kind kind, const std::string &key)
{
    return (kind == StatsRow::Kind::Method && key == CallStats::kOtherMethods) ||
           (kind == StatsRow::Kind::Hop && key == CallStats::kOtherHops);
}

QString StatsTableModel::rowLabel(StatsRow::Kind kind, const std::string &key)
{
    switch (kind) {
    case StatsRow::Kind::Total:
        return QStringLiteral("Total");
    case StatsRow::Kind::Method:
        return key.empty() ? QStringLiteral("(never sent)") : QString::fromStdString(key);
    case StatsRow::Kind::Hop:
        return key.empty() ? QStringLiteral("(main proxy)") : QString::fromStdString(key);
    }
    return {};
}

QString StatsTableModel::filterTerms(int r) const
{
    if (r < 0 || size_t(r) >= m_rows.size()) return {};
    const RowRef &row = m_rows[size_t(r)];
    if (row.kind == StatsRow::Kind::Total) return {};
    // Calls that never reached the wire have no method: the outcome is what sets them apart.
    if (row.kind == StatsRow::Kind::Method && row.key.empty()) return QStringLiteral("outcome:failed-fast");
    // The calls of every method (hop) past the row limit: no one term names them.
    if (isOtherRow(row.kind, row.key)) return {};
    const QString key = QString::fromStdString(row.key);
    bool ambiguous = row.key.empty() || key.contains(QLatin1Char(' '));
    for (size_t i = 1; i < m_rows.size() && !ambiguous; ++i)
        ambiguous =
            i != size_t(r) && QString::fromStdString(m_rows[i].key).contains(key, Qt::CaseInsensitive);
    const QString name =
        row.kind == StatsRow::Kind::Method ? QStringLiteral("method:") : QStringLiteral("hop:");
    return name + (ambiguous ? QStringLiteral("=") : QString()) + key;
}

QString StatsTableModel::attemptsText(const StatsRow &row)
{
    QStringList parts;
    for (size_t n = 1; n < row.attemptsPerCall.size(); ++n)
        if (row.attemptsPerCall[n]) parts << QStringLiteral("%1:%2").arg(n).arg(row.attemptsPerCall[n]);
    return parts.join(QLatin1Char(' '));
}

int StatsTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int StatsTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant StatsTableModel::value(const StatsRow &row, int column) const
{
    auto ns = [](const std::optional<std::int64_t> &v) {
        return QVariant::fromValue<qint64>(v.value_or(kNoValue));
    };
    switch (column) {
    case Calls:
        return QVariant::fromValue<qulonglong>(row.calls);
    case Attempts:
        return QVariant::fromValue<qulonglong>(row.attempts);
    case Amplification:
        return row.amplification();
    case CallP50:
        return ns(row.callLatency.percentile(0.5));
    case CallP90:
        return ns(row.callLatency.percentile(0.9));
    case CallP99:
        return ns(row.callLatency.percentile(0.99));
    case CallP999:
        return ns(row.callLatency.percentile(0.999));
    case CallMax:
        return ns(row.callLatency.max());
    case AttemptP50:
        return ns(row.attemptLatency.percentile(0.5));
    case AttemptP99:
        return ns(row.attemptLatency.percentile(0.99));
    case AttemptMax:
        return ns(row.attemptLatency.max());
    case AttemptsPerCall: {
        // Sorted by the mean attempts of a call on the wire.
        std::uint64_t calls = 0, attempts = 0;
        for (size_t n = 1; n < row.attemptsPerCall.size(); ++n) {
            calls += row.attemptsPerCall[n];
            attempts += n * row.attemptsPerCall[n];
        }
        return calls ? double(attempts) / double(calls) : 0.0;
    }
    case GapsWithin:
        return QVariant::fromValue<qulonglong>(row.gaps.within);
    case GapsEarly:
        return QVariant::fromValue<qulonglong>(row.gaps.early);
    case GapsLate:
        return QVariant::fromValue<qulonglong>(row.gaps.late);
    case GapsNoPolicy:
        return QVariant::fromValue<qulonglong>(row.gaps.noPolicy);
    case GapsTransparent:
        return QVariant::fromValue<qulonglong>(row.gaps.transparent);
    default:
        if (column >= OkFirstTry && column < OkFirstTry + kCallCategories)
            return QVariant::fromValue<qulonglong>(row.outcomes[size_t(column - OkFirstTry)]);
    }
    return {};
}

QVariant StatsTableModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || size_t(index.row()) >= m_rows.size()) return {};
    const RowRef &ref = m_rows[size_t(index.row())];
    const int column = index.column();
    if (column == Name) {
        if (role == Qt::DisplayRole) return rowLabel(ref.kind, ref.key);
        if (role == SortRole) return rowLabel(ref.kind, ref.key);
        if (role == Qt::ToolTipRole) {
            if (ref.kind == StatsRow::Kind::Method && ref.key.empty())
                return QStringLiteral(
                    "Calls a client policy failed without sending a request (circuit breaker, "
                    "bulkhead): no method on the wire, no lane");
            if (ref.kind == StatsRow::Kind::Hop && ref.key.empty())
                return QStringLiteral("Calls through the main capture proxy (no hop label)");
            if (isOtherRow(ref.kind, ref.key) && m_stats)
                return QStringLiteral("Calls of the %1 seen after the first %2: the table keeps at most %2 "
                                      "rows, so that a peer naming a new one on every call cannot grow it "
                                      "without bound (%3 calls counted here)")
                    .arg(ref.kind == StatsRow::Kind::Hop ? QStringLiteral("hops") : QStringLiteral("methods"))
                    .arg(m_stats->maxKeyedRows())
                    .arg(ref.kind == StatsRow::Kind::Hop ? m_stats->foldedHopCalls()
                                                         : m_stats->foldedMethodCalls());
            return rowLabel(ref.kind, ref.key);
        }
        if (role == Qt::FontRole && ref.kind == StatsRow::Kind::Total) {
            QFont f;
            f.setBold(true);
            return f;
        }
        return {};
    }
    const StatsRow *row = m_stats ? m_stats->find(ref.kind, ref.key) : nullptr;
    if (!row) return {};
    if (role == Qt::TextAlignmentRole)
        return column == AttemptsPerCall ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                         : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::FontRole && ref.kind == StatsRow::Kind::Total) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == SortRole) return value(*row, column);
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    const bool latency = column >= CallP50 && column <= AttemptMax;
    if (latency) {
        const qint64 v = value(*row, column).toLongLong();
        if (v == kNoValue)
            return role == Qt::ToolTipRole
                       ? QVariant(QStringLiteral("No ended %1 yet")
                                      .arg(column >= AttemptP50 ? QStringLiteral("attempts")
                                                                : QStringLiteral("calls")))
                       : QVariant(QStringLiteral("–"));
        if (role == Qt::ToolTipRole)
            return QStringLiteral("%1 (%2 ns) over %3 %4")
                .arg(formatDuration(v))
                .arg(v)
                .arg(column >= AttemptP50 ? row->attemptLatency.count() : row->callLatency.count())
                .arg(column >= AttemptP50 ? QStringLiteral("ended attempts") : QStringLiteral("ended calls"));
        return formatDuration(v);
    }
    if (column == Amplification) {
        if (row->calls == row->count(CallCategory::FailedFast)) return QStringLiteral("–");
        const QString text = QString::number(row->amplification(), 'f', 2) + QStringLiteral("×");
        if (role == Qt::ToolTipRole)
            return QStringLiteral("%1 attempts for %2 calls on the wire (%3 transparent retries)")
                .arg(row->attempts)
                .arg(row->calls - row->count(CallCategory::FailedFast))
                .arg(row->transparentRetries);
        return text;
    }
    if (column == AttemptsPerCall) return attemptsText(*row);
    if (role == Qt::ToolTipRole) return QString::fromLatin1(kColumns[column].tip);
    return QString::number(value(*row, column).toULongLong());
}

QVariant StatsTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
    if (role == Qt::DisplayRole)
        return section == Name
                   ? (m_kind == StatsRow::Kind::Hop ? QStringLiteral("hop") : QStringLiteral("method"))
                   : QString::fromUtf8(kColumns[section].title);
    if (role == Qt::ToolTipRole) return QString::fromUtf8(kColumns[section].tip);
    return {};
}

} // namespace rpcscope
