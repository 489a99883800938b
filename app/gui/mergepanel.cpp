#include "mergepanel.h"

#include "mergeset.h"
#include "timeformat.h"

#include <QDateTime>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>

namespace rpcscope {

namespace {
// A day either way, as the CLI's --offset allows; µs resolution is far below what wall clocks agree on.
constexpr double kMaxOffsetMs = 86'400'000.0;
} // namespace

MergePanel::MergePanel(QWidget *parent) : QWidget(parent)
{
    auto *v = new QVBoxLayout(this);
    m_hint = new QLabel(QStringLiteral("Aligned by wall clock. An offset moves one file."), this);
    m_hint->setToolTip(
        QStringLiteral("The captures on this timeline, aligned by their wall-clock origins; each "
                       "file's lanes carry its label. When a host's clock was off, move its file "
                       "by an offset until its calls nest under their callers again."));
    m_hint->setWordWrap(true);
    v->addWidget(m_hint);
    m_grid = new QGridLayout;
    m_grid->setColumnStretch(1, 1);
    v->addLayout(m_grid);
    auto *buttons = new QHBoxLayout;
    auto *add = new QPushButton(QStringLiteral("Add capture…"), this);
    add->setObjectName(QStringLiteral("mergeAdd"));
    add->setToolTip(QStringLiteral("Add another capture to this timeline (Ctrl+Shift+O)"));
    connect(add, &QPushButton::clicked, this, &MergePanel::addRequested);
    auto *reset = new QPushButton(QStringLiteral("Reset offsets"), this);
    reset->setObjectName(QStringLiteral("mergeReset"));
    connect(reset, &QPushButton::clicked, this, &MergePanel::resetOffsetsRequested);
    buttons->addWidget(add);
    buttons->addWidget(reset);
    buttons->addStretch(1);
    v->addLayout(buttons);
    m_notes = new QLabel(this);
    m_notes->setObjectName(QStringLiteral("mergeNotes"));
    m_notes->setWordWrap(true);
    v->addWidget(m_notes);
    v->addStretch(1);
}

void MergePanel::setSources(const MergeSet *set, size_t reference, const std::vector<std::string> &notes)
{
    // Later: this may run inside a signal of one of these widgets (a row's remove button).
    for (QWidget *w : m_rowWidgets) {
        w->hide();
        m_grid->removeWidget(w);
        w->deleteLater();
    }
    m_rowWidgets.clear();
    m_offsets.clear();
    m_labels.clear();
    const auto &sources = set ? set->sources() : std::vector<MergeSet::Source>{};
    const std::int64_t refWall = reference < sources.size() ? sources[reference].data.info.originWallNs : 0;
    for (size_t i = 0; i < sources.size(); ++i) {
        const MergeSet::Source &s = sources[i];
        const int row = int(i);
        auto *label = new QLineEdit(QString::fromStdString(s.label), this);
        label->setObjectName(QStringLiteral("mergeLabel%1").arg(row));
        label->setToolTip(QStringLiteral("Shown on every lane of this file (Enter applies)"));
        label->setMinimumWidth(int(label->fontMetrics().horizontalAdvance(label->text())) + 16);
        label->setMaximumWidth(160);
        connect(label, &QLineEdit::editingFinished, this, [this, row, label, old = label->text()] {
            if (label->text() != old) emit labelEdited(row, label->text());
        });

        const QString name =
            s.path.isEmpty() ? QStringLiteral("(session on screen)") : QFileInfo(s.path).fileName();
        QString what = QStringLiteral("%1 · %2 events").arg(name).arg(s.data.eventCount());
        const std::int64_t wall = s.data.info.originWallNs;
        if (i == reference)
            what += QStringLiteral(" · reference clock");
        else if (wall && refWall)
            what += QStringLiteral(" · starts %1 %2")
                        .arg(formatDuration(std::abs(wall - refWall)),
                             wall >= refWall ? QStringLiteral("later") : QStringLiteral("earlier"));
        else
            what += QStringLiteral(" · no wall clock: starts with the reference");
        auto *info = new QLabel(what, this);
        info->setToolTip(QStringLiteral("%1\nwritten by %2\norigin %3")
                             .arg(s.path.isEmpty() ? name : s.path,
                                  QString::fromStdString(s.data.info.writer),
                                  wall ? QDateTime::fromMSecsSinceEpoch(wall / 1'000'000, Qt::UTC)
                                             .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss.zzz 'UTC'"))
                                       : QStringLiteral("unknown")));

        auto *offset = new QDoubleSpinBox(this);
        offset->setObjectName(QStringLiteral("mergeOffset%1").arg(row));
        offset->setRange(-kMaxOffsetMs, kMaxOffsetMs);
        offset->setDecimals(3);
        offset->setSingleStep(1.0);
        offset->setSuffix(QStringLiteral(" ms"));
        offset->setAccelerated(true);
        offset->setKeyboardTracking(false); // typed digits apply on Enter, arrows at once
        offset->setValue(double(s.offsetNs) / 1e6);
        offset->setToolTip(
            QStringLiteral("Moves this file's events (ms, up to µs); arrows ±1 ms, Page Up/Down "
                           "±10 ms"));
        connect(offset, &QDoubleSpinBox::valueChanged, this,
                [this, row](double ms) { emit offsetChanged(row, std::llround(ms * 1e6)); });

        auto *remove = new QToolButton(this);
        remove->setText(QStringLiteral("✕"));
        remove->setToolTip(QStringLiteral("Take this file off the timeline"));
        remove->setEnabled(sources.size() > 1);
        connect(remove, &QToolButton::clicked, this, [this, row] { emit removeRequested(row); });

        m_grid->addWidget(label, row, 0);
        m_grid->addWidget(info, row, 1);
        m_grid->addWidget(offset, row, 2);
        m_grid->addWidget(remove, row, 3);
        m_rowWidgets.insert(m_rowWidgets.end(), {label, info, offset, remove});
        m_offsets.push_back(offset);
        m_labels.push_back(label);
    }
    QStringList lines;
    for (const std::string &n : notes)
        lines << QString::fromStdString(n);
    m_notes->setText(lines.join(QLatin1Char('\n')));
    m_notes->setVisible(!lines.isEmpty());
}

QDoubleSpinBox *MergePanel::offsetBox(int row) const
{
    return row >= 0 && row < rows() ? m_offsets[size_t(row)] : nullptr;
}

QLineEdit *MergePanel::labelEdit(int row) const
{
    return row >= 0 && row < rows() ? m_labels[size_t(row)] : nullptr;
}

} // namespace rpcscope
