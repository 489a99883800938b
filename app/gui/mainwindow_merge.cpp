// MainWindow: several captures on one timeline (File > Add capture to timeline…, Shift+drop, the "Merged
// captures" dock with an offset per file). model/capturemerge.h says how files are aligned.

#include "captureio.h"
#include "mainwindow.h"
#include "mergepanel.h"
#include "mergeset.h"
#include "swimlaneview.h"
#include "timelinemodel.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QProgressDialog>
#include <QStatusBar>
#include <QTimer>

namespace rpcscope {

namespace {
// An offset edit re-merges this long after the last change, so holding an arrow key does not queue a merge
// per step.
constexpr int kRemergeDelayMs = 150;
} // namespace

void MainWindow::buildMerge(QMenu *fileMenu)
{
    m_merge = std::make_shared<MergeSet>();
    QAction *add = fileMenu->addAction(QStringLiteral("Add capture to timeline…"), this,
                                       &MainWindow::addToTimelineInteractive);
    add->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+O")));
    addAction(add);

    m_mergePanel = new MergePanel(this);
    m_mergeDock = new QDockWidget(QStringLiteral("Merged captures"), this);
    m_mergeDock->setObjectName(QStringLiteral("merge"));
    m_mergeDock->setWidget(m_mergePanel);
    addDockWidget(Qt::LeftDockWidgetArea, m_mergeDock);
    if (auto *capture = findChild<QDockWidget *>(QStringLiteral("capture")))
        tabifyDockWidget(capture, m_mergeDock);
    m_mergeDock->hide();
    QAction *toggle = m_mergeDock->toggleViewAction();
    toggle->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+M")));
    fileMenu->addAction(toggle);
    addAction(toggle);

    m_remergeTimer = new QTimer(this);
    m_remergeTimer->setSingleShot(true);
    m_remergeTimer->setInterval(kRemergeDelayMs);
    connect(m_remergeTimer, &QTimer::timeout, this, [this] {
        if (m_merging) {
            m_remergeTimer->start(); // a merge is running; this edit comes after it
            return;
        }
        QString error;
        if (!remerge(&error, false, false) && error != QLatin1String("cancelled"))
            QMessageBox::warning(this, QStringLiteral("Cannot merge"), error);
    });
    connect(m_mergePanel, &MergePanel::offsetChanged, this, [this](int row, qint64 ns) {
        m_merge->setOffset(size_t(row), ns);
        m_remergeTimer->start();
    });
    connect(m_mergePanel, &MergePanel::labelEdited, this, [this](int row, const QString &label) {
        std::string why;
        if (m_merging) return;
        if (!m_merge->setLabel(size_t(row), label.trimmed().toStdString(), &why))
            statusBar()->showMessage(QString::fromStdString(why), 5000);
        QString error;
        remerge(&error, false, true);
    });
    connect(m_mergePanel, &MergePanel::removeRequested, this, [this](int row) {
        if (m_merging || m_merge->size() < 2) return;
        m_merge->remove(size_t(row));
        QString error;
        remerge(&error, false, true);
    });
    connect(m_mergePanel, &MergePanel::resetOffsetsRequested, this, [this] {
        if (m_merging) return;
        for (size_t i = 0; i < m_merge->size(); ++i)
            m_merge->setOffset(i, 0);
        QString error;
        remerge(&error, false, true);
    });
    connect(m_mergePanel, &MergePanel::addRequested, this, &MainWindow::addToTimelineInteractive);
    // Anything else that changes the timeline (a lab run, a live capture, Clear, Open) leaves the merge.
    connect(m_model, &TimelineModel::timelineChanged, this, [this] {
        if (m_merging || m_merge->empty() || m_model->eventLog().generation() == m_mergedGeneration) return;
        m_merge->clear();
        m_mergePanel->setSources(m_merge.get(), 0, {});
    });
}

void MainWindow::addToTimelineInteractive()
{
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, QStringLiteral("Add captures to the timeline"), dialogStart(),
        QStringLiteral("Captures (*.rpcscope *.pcapng *.pcap *.cap);;All files (*)"));
    if (paths.isEmpty()) return;
    rememberDialogDirectory(paths.front());
    addToTimeline(paths);
}

bool MainWindow::addToTimeline(const QStringList &paths, QString *errorOut, bool quiet, bool replace)
{
    QString dummy;
    QString *error = errorOut ? errorOut : &dummy;
    if (m_merging || paths.isEmpty()) return false;
    const std::uint64_t generation = m_model->eventLog().generation();
    const bool continuing = !replace && !m_merge->empty() && generation == m_mergedGeneration;
    const size_t before = continuing ? m_merge->size() : 0;
    if (!continuing) {
        m_merge->clear();
        // What is on screen becomes the first file: the file it was opened from, or the session.
        if (!replace && !m_model->eventLog().isEmpty()) {
            const bool fromFile = !m_openedPath.isEmpty() && generation == m_openedGeneration;
            m_merge->add(captureFromLog(m_model->store(), m_model->eventLog()),
                         fromFile ? defaultMergeLabel(m_openedPath.toStdString(), {})
                                  : std::string("session"),
                         fromFile ? m_openedPath : QString());
        }
    }
    auto rollBack = [&] {
        while (m_merge->size() > before)
            m_merge->remove(m_merge->size() - 1);
    };
    QStringList notes;
    for (const QString &path : paths) {
        QProgressDialog progress(QStringLiteral("Reading %1…").arg(QFileInfo(path).fileName()),
                                 QStringLiteral("Cancel"), 0, 1000, this);
        progress.setWindowModality(Qt::WindowModal);
        progress.setMinimumDuration(400);
        const CaptureReadResult r = m_merge->add(path, [&](std::int64_t done, std::int64_t total) {
            progress.setValue(total > 0 ? int(1000 * done / total) : 0);
            QCoreApplication::processEvents();
            return !progress.wasCanceled();
        });
        progress.reset();
        if (!r.usable()) {
            rollBack();
            *error = r.status == CaptureReadResult::Cancelled ? QStringLiteral("cancelled")
                                                              : QString::fromStdString(r.message);
            if (!quiet && r.status != CaptureReadResult::Cancelled)
                QMessageBox::warning(this, QStringLiteral("Cannot add"), *error);
            return false;
        }
        if (r.status != CaptureReadResult::Ok) notes << QString::fromStdString(r.message);
        for (const std::string &n : r.notes)
            notes << QString::fromStdString(n);
    }
    m_mergeStartsRun = replace;
    const bool merged = remerge(error, true, true);
    m_mergeStartsRun = false;
    if (!merged) {
        rollBack();
        if (!quiet && *error != QLatin1String("cancelled"))
            QMessageBox::warning(this, QStringLiteral("Cannot merge"), *error);
        return false;
    }
    m_mergeDock->show();
    m_mergeDock->raise();
    if (!notes.isEmpty()) {
        *error = notes.join(QLatin1Char('\n'));
        if (!quiet) QMessageBox::information(this, QStringLiteral("Added with notes"), *error);
    }
    return true;
}

bool MainWindow::remerge(QString *error, bool fit, bool refreshPanel)
{
    if (m_merge->empty()) {
        *error = QStringLiteral("nothing to merge");
        return false;
    }
    m_merging = true;
    CaptureData merged;
    MergeResult r;
    {
        QProgressDialog progress(QStringLiteral("Merging %1 captures…").arg(m_merge->size()),
                                 QStringLiteral("Cancel"), 0, 1000, this);
        progress.setWindowModality(Qt::WindowModal);
        progress.setMinimumDuration(400);
        r = m_merge->merge(&merged, [&](std::int64_t done, std::int64_t total) {
            progress.setValue(total > 0 ? int(1000 * done / total) : 0);
            QCoreApplication::processEvents();
            return !progress.wasCanceled();
        });
    }
    if (!r.ok) {
        m_merging = false;
        *error = QString::fromStdString(r.error);
        return false;
    }
    if (m_capture->isRunning()) m_capture->stop();
    if (m_mergeStartsRun) { // replacing what is shown: the merged files are a run of their own
        QStringList names;
        for (const MergeSet::Source &s : m_merge->sources())
            names << QString::fromStdString(s.label);
        if (!beginRun(QStringLiteral("merged: %1").arg(names.join(QStringLiteral(" + "))),
                      RunList::Kind::MergedFiles, names.join(QStringLiteral(", ")), false)) {
            m_merging = false;
            *error = QStringLiteral("a lab scenario is still running: merge when it ends");
            return false;
        }
        m_mergeStartsRun = false;
    }
    m_model->replay(merged);
    m_mergedGeneration = m_model->eventLog().generation();
    m_merging = false;
    if (refreshPanel) m_mergePanel->setSources(m_merge.get(), r.reference, r.notes);
    if (fit) m_view->fitAll();
    refreshRunBar(); // the title names the run
    statusBar()->showMessage(QStringLiteral("Merged %1 captures: %2 calls")
                                 .arg(m_merge->size())
                                 .arg(m_model->store().calls().size()),
                             5000);
    updateStatus();
    return true;
}

} // namespace rpcscope
