#pragma once

#include "capturesession.h"
#include "runlist.h"

#include <QByteArray>
#include <QMainWindow>
#include <memory>
#include <optional>
#include <vector>

class QAction;
class QActionGroup;
class QComboBox;
class QDockWidget;
class QLabel;
class QMenu;
class QTimer;
class QToolBar;
class QTreeView;
class QLineEdit;

namespace rpcscope {

class AttemptInspector;
class CallsFilterProxy;
class CapturePanel;
class CompareWindow;
class LabPanel;
class MergePanel;
class MergeSet;
class Replayer;
class RunBar;
class SchemaController;
class StatsDock;
class PolicyDock;
class FaultsDock;
class FaultSet;
class SwimlaneView;
class TimelineModel;
class TimelineStore;
class WindowLook;

namespace lab {
class LabSession;
struct ScenarioResult;
} // namespace lab

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    // The inspector shows the model's header log when it keeps one (TimelineModel::setKeepHeaders(), before
    // the window is made).
    MainWindow(TimelineModel *model, lab::LabSession *lab, QString scenario, QWidget *parent = nullptr);
    ~MainWindow() override;

    SwimlaneView *swimlanes() const { return m_view; }
    AttemptInspector *inspector() const { return m_inspector; }
    CaptureSession *captureSession() const { return m_capture; }
    // The status bar's live line: connections, events/s, calls, memory, decode problems.
    QString statusText() const;
    // The Keys and mouse list (F1).
    static QString keysHelp();

public slots:
    void runScenario();
    // False with the system's reason in *why (a full disk, ...) when given.
    bool exportPng(const QString &fileName, std::string *why = nullptr);
    bool exportSvg(const QString &fileName, std::string *why = nullptr);
    void setWorkshop(bool on);
    void setDark(bool on);
    void copyToClipboard();

    // Capture files (mainwindow_files.cpp). Open replaces the timeline; errors are shown in a dialog unless
    // `quiet`, and always returned in *error.
    // `keylog`: an NSS key log that decrypts a pcap's TLS connections (captureio.h LoadOptions).
    bool openFile(const QString &path, QString *error = nullptr, bool quiet = false,
                  const QString &keylog = {});
    bool saveFile(const QString &path, QString *error = nullptr);
    // `rpcscope --capture`: starts a capture session with these hops; false with the reason.
    bool startCapture(const std::vector<HopSpec> &hops, QString *error);
    void togglePinSelected();
    // Merging (mainwindow_merge.cpp): adds capture files to the timeline, aligned by their wall-clock origins
    // with an offset per file (the "Merged captures" dock). `replace` merges these files alone instead of
    // adding them to what is on screen. Errors as openFile().
    bool addToTimeline(const QStringList &paths, QString *error = nullptr, bool quiet = false,
                       bool replace = false);
    MergePanel *mergePanel() const { return m_mergePanel; }
    const MergeSet &mergeSet() const { return *m_merge; }
    // Message schemas (.proto files, server reflection) the inspector decodes with (mainwindow_decode.cpp).
    SchemaController *schemas() const { return m_schemas; }
    // Off for unattended runs (--screenshot): closing never asks about an unsaved session.
    void setPromptOnClose(bool on) { m_promptOnClose = on; }
    // Presenting (mainwindow_present.cpp): the Calls dock's tree (over a proxy that follows the filter), the
    // whole window's workshop and dark look, the timeline alone (F10) and full screen (F11).
    QTreeView *callsTree() const { return m_calls; }
    CallsFilterProxy *callsProxy() const { return m_callsProxy; }
    WindowLook *look() const { return m_look; }
    LabPanel *labPanel() const { return m_labPanel; }
    bool timelineOnly() const { return m_timelineOnlyAction && m_timelineOnlyAction->isChecked(); }
    void setTimelineOnly(bool on);

    // Runs (mainwindow_runs.cpp). Every lab run, live capture and opened file is a run with its own clock
    // from 0, fitted when it starts; the model holds the one shown (the stage), the run list the others.
    RunList *runs() const { return m_runs; }
    RunBar *runBar() const { return m_runBar; }
    Replayer *replayer() const { return m_replayer; }
    // Shows another run (the one shown is archived). False, with a status message, while the one shown is
    // still being recorded.
    bool showRun(int index);
    // Asks first when it is not saved (unless `ask` is false or prompts are off).
    bool closeRun(int index, bool ask = true);
    void renameRun(int index, const QString &name);
    bool saveRun(int index, const QString &path, QString *error = nullptr);
    // Clear (Ctrl+L): drops the calls shown (asking first when they are not saved), restarts the clock at 0
    // and fits.
    bool clearStage(bool ask = true);
    // A lab scenario or a live capture is still feeding a run (the one shown or one in the background).
    bool isRecording() const;
    // The run a lab scenario or live capture is feeding, or -1; it may be archived while another is shown.
    int recordingRun() const;
    // Replay of the run shown: starts (paused at 0 when !play), leaves (the whole run is shown again).
    bool startReplay(bool play = true);
    void stopReplay();
    // Compare runs (mainwindow_compare.cpp, Ctrl+Shift+B): two runs side by side, A and B by run index (-1:
    // the run before the last and the last one). Made on first use; null before.
    CompareWindow *openCompare(int a = -1, int b = -1);
    CompareWindow *compareWindow() const { return m_compare; }
    // The Statistics dock (mainwindow_stats.cpp, Ctrl+Shift+T): shown and raised, taller than the first
    // start's bottom docks when `roomy` (a screenshot of it).
    StatsDock *statsDock() const { return m_stats; }
    void showStatistics(bool roomy = false);
    // The Policy check dock (mainwindow_policy.cpp, Ctrl+Shift+V) and its "Retry policy…" dialog
    // (Ctrl+Shift+G): the calls judged against the client's service config (issue 19).
    PolicyDock *policyDock() const { return m_policy; }
    void showPolicyCheck(bool roomy = false);
    // The Policy check's config for the run now on stage: its scenario's own (verify-policy), else the one
    // the user gave, else none: never another run's scenario's.
    void stagePolicy();
    // The Faults dock (mainwindow_faults.cpp, Ctrl+Shift+F): the running capture's fault rules, to add, edit
    // and switch while it runs (issue 19). Every capture the window starts carries a FaultSet, empty or not.
    FaultsDock *faultsDock() const { return m_faults; }
    void showFaults();

signals:
    // One run of the scenario ended (a Repeat N emits it N times).
    void scenarioFinished(bool expectationHeld, const QString &summary);
    // Every requested run ended (or Stop cut the repeats short).
    void runFinished();

protected:
    void closeEvent(QCloseEvent *event) override;
    // A menu's or a button's status tip takes the status bar while hovered; the "Next:" step it covered comes
    // back after it, instead of an empty line.
    bool event(QEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void buildFileAndCapture(QToolBar *tb);
    void buildMerge(QMenu *fileMenu);
    void buildDecoding(QToolBar *tb);
    void addToTimelineInteractive();
    bool remerge(QString *error, bool fit, bool refreshPanel);
    void restoreLayout();
    void openInteractive();
    void saveInteractive();
    void rememberRecent(const QString &path);
    void rebuildRecentMenu();
    // Where a file dialog starts: `name` in the directory of the file last chosen in one (kept across
    // sessions), or `name` alone (the working directory) before any was.
    static QString dialogStart(const QString &name = {});
    // The directory of a file chosen in a dialog, for the next dialog; an empty path changes nothing.
    static void rememberDialogDirectory(const QString &path);
    // The file dialogs, started and remembered that way; an empty path when cancelled.
    QString askOpenFile(const QString &title, const QString &filters);
    QString askSaveFile(const QString &title, const QString &name, const QString &filters,
                        QString *selectedFilter = nullptr);
    // A file name for what is shown, as a dialog suggests it: the run's name (as a file name may hold it) or
    // `fallback`, with `extension`.
    QString suggestedFileName(const QString &fallback, const QString &extension) const;
    static QString fileNameOf(QString runName);
    void updateStatus();
    // True when no live capture runs, or the user agreed to stop it to `then` ("open FILE"); asks only when
    // the window prompts (setPromptOnClose).
    bool mayStopCapture(const QString &then);
    // The first start's "Next:" line, in the Scenario dock and the status bar, moves on to `next` once the
    // user did what it said (a capture started, a file opened, a capture's first calls came in); a line
    // already gone stays gone.
    void advanceNextStep(const QString &next);
    static QString captureStep(); // the next step while a capture waits for its first call
    bool hasUnsavedEvents() const;
    void exportPngInteractive();
    void exportSvgInteractive();
    QImage exportImage() const;
    std::optional<std::pair<qint64, qint64>> exportRange() const;
    QString exportTitle() const;
    void buildViewControls(QToolBar *tb);
    void buildRuns(QToolBar *tb);
    // Archives the run shown and puts a new, empty one on stage (its clock from now when `freshClock`),
    // fitted. False while a lab scenario is still running.
    bool beginRun(const QString &name, RunList::Kind kind, const QString &source, bool freshClock);
    void archiveStage();
    void putOnStage(int index);
    // The recording run left the stage: its batches go to its archive until it comes back (or another run
    // begins, or it is closed).
    void startDivert();
    void stopDivert();
    bool divertToRecordingRun(const EventBatch &batch);
    void updateTitle();
    void updateRunAction();
    void refreshRunBar();
    bool confirmUnsavedRuns();
    void renameRunInteractive(int index);
    void saveRunInteractive(int index);
    void buildPresenting(QToolBar *viewBar, bool firstStart);
    // Workshop mode's layout: the docks below the timeline as tabs of one, the inspector in front, low;
    // leaving it restores the layout as it was (which is also what closing in workshop mode saves).
    void setWorkshopLayout(bool on);
    void buildCompare(QMenu *viewMenu);
    void showFilterProblem(const QString &problem);
    void buildStats(QDockWidget *beside);
    void buildPolicy(QDockWidget *beside);
    void buildFaults(QDockWidget *beside);

    TimelineModel *m_model;
    lab::LabSession *m_lab;
    LabPanel *m_labPanel = nullptr;
    SwimlaneView *m_view;
    QLabel *m_labLabel;
    AttemptInspector *m_inspector;
    QAction *m_exportVisibleOnly;
    QActionGroup *m_exportScale;
    QAction *m_workshopAction = nullptr;
    QAction *m_darkAction = nullptr;
    CaptureSession *m_capture = nullptr;
    CapturePanel *m_capturePanel = nullptr;
    QLabel *m_statusLabel = nullptr;
    QMenu *m_recentMenu = nullptr;
    std::uint64_t m_savedGeneration = 0;
    int m_selectedCall = -1;
    bool m_promptOnClose = true;
    SchemaController *m_schemas = nullptr;
    std::shared_ptr<MergeSet> m_merge;
    MergePanel *m_mergePanel = nullptr;
    QDockWidget *m_mergeDock = nullptr;
    QTimer *m_remergeTimer = nullptr;
    std::uint64_t m_mergedGeneration = 0; // the event log's generation right after the last merge
    bool m_merging = false;
    QTreeView *m_calls = nullptr;
    CallsFilterProxy *m_callsProxy = nullptr;
    QLineEdit *m_filterBox = nullptr;
    QToolBar *m_viewBar = nullptr;
    WindowLook *m_look = nullptr;
    QAction *m_timelineOnlyAction = nullptr;
    QAction *m_fullScreenAction = nullptr;
    std::vector<QWidget *> m_hiddenForTimeline;    // docks and toolbars Timeline only hid, to bring back
    std::vector<QDockWidget *> m_frontForTimeline; // of those docks, each tab group's current one
    QByteArray m_layoutOutsideWorkshop;            // saveState() before workshop mode, empty outside it
    QString m_filterToolTip;
    QString m_openedPath; // the file on screen, while m_openedGeneration is the log's generation
    std::uint64_t m_openedGeneration = 0;
    RunList *m_runs = nullptr;
    int m_liveRunId = 0; // the run the lab or the capture feeds (RunList::Run::id), 0 for none
    std::shared_ptr<TimelineStore> m_divertStore; // the recording run's calls while it is archived
    RunBar *m_runBar = nullptr;
    Replayer *m_replayer = nullptr;
    QAction *m_replayAction = nullptr;
    QAction *m_playAction = nullptr;
    QComboBox *m_speedBox = nullptr;
    bool m_replayUnsaved = false;  // the run replayed was not saved before the replay
    bool m_mergeStartsRun = false; // the next merge replaces the stage: a run of its own
    CompareWindow *m_compare = nullptr;
    QAction *m_compareAction = nullptr;
    StatsDock *m_stats = nullptr;
    QDockWidget *m_statsDock = nullptr;
    QAction *m_statsAction = nullptr; // Ctrl+Shift+T, in the View menu
    // The "Next:" step a status tip covers, and that tip (event()).
    QString m_hintUnderTip;
    QString m_tipShown;
    PolicyDock *m_policy = nullptr;
    // Which config the Policy check shows (stagePolicy()): a scenario run's own, which no other run is judged
    // by, or the user's.
    QString m_runPolicy;  // the config stagePolicy() last set from a run's scenario
    QString m_userPolicy; // the one the user gave, while a run's own is shown instead
    QDockWidget *m_policyDock = nullptr;
    QAction *m_policyAction = nullptr;      // Ctrl+Shift+V, in the View menu
    QAction *m_retryPolicyAction = nullptr; // Ctrl+Shift+G, in the View menu
    FaultsDock *m_faults = nullptr;
    QDockWidget *m_faultsDock = nullptr;
    QAction *m_faultsAction = nullptr; // Ctrl+Shift+F, in the View menu
};

} // namespace rpcscope
