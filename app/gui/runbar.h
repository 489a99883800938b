#pragma once

#include <QTabBar>

namespace rpcscope {

class RunList;

// The run list above the timeline, one tab a run, the way a terminal keeps tabs. It only shows the RunList
// and says what the user asked for; the window decides (a run still being recorded keeps recording while
// another is shown).
class RunBar : public QTabBar
{
    Q_OBJECT
public:
    explicit RunBar(RunList *runs, QWidget *parent = nullptr);

    // Rebuilds the tabs from the list (names, tooltips, the current one). `stageUnsaved` and `stageCalls`
    // describe the run on stage, which the list only learns when it is archived. `recording` is the run a lab
    // scenario or live capture is feeding, or -1.
    void refresh(bool stageUnsaved, size_t stageCalls, int recording);

signals:
    void showRequested(int index);
    void renameRequested(int index);
    void saveRequested(int index);
    void closeRequested(int index);

protected:
    void mouseDoubleClickEvent(QMouseEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;

private:
    RunList *m_runs;
    bool m_syncing = false;
};

} // namespace rpcscope
