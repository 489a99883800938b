#include "runbar.h"

#include "runlist.h"

#include <QContextMenuEvent>
#include <QMenu>
#include <QMouseEvent>

namespace rpcscope {

RunBar::RunBar(RunList *runs, QWidget *parent) : QTabBar(parent), m_runs(runs)
{
    setObjectName(QStringLiteral("runBar"));
    setDocumentMode(true);
    setExpanding(false);
    setTabsClosable(true);
    setMovable(false);
    setUsesScrollButtons(true);
    setElideMode(Qt::ElideMiddle);
    setFocusPolicy(Qt::NoFocus); // the timeline keeps the keys
    setToolTip(QStringLiteral("Runs: click to show one again (Ctrl+PgUp/PgDn), double-click to rename, "
                              "right-click to save or close (Ctrl+W)"));
    connect(this, &QTabBar::currentChanged, this, [this](int index) {
        if (!m_syncing && index >= 0) emit showRequested(index);
    });
    connect(this, &QTabBar::tabCloseRequested, this, &RunBar::closeRequested);
}

void RunBar::refresh(bool stageUnsaved, size_t stageCalls, int recording)
{
    m_syncing = true;
    while (count() > m_runs->count())
        removeTab(count() - 1);
    while (count() < m_runs->count())
        addTab(QString());
    for (int i = 0; i < m_runs->count(); ++i) {
        const RunList::Run &r = m_runs->at(i);
        const bool onStage = i == m_runs->current();
        const bool unsaved = onStage ? stageUnsaved : r.unsaved;
        const size_t calls = onStage ? stageCalls : r.calls;
        QString text = unsaved ? r.name + QStringLiteral(" •") : r.name;
        if (i == recording) text += QStringLiteral(" ● recording");
        if (tabText(i) != text) setTabText(i, text);
        QString tip =
            QStringLiteral("<b>%1</b><br>%2").arg(r.name.toHtmlEscaped(), RunList::kindName(r.kind));
        if (!r.source.isEmpty()) tip += QStringLiteral(": %1").arg(r.source.toHtmlEscaped());
        tip += QStringLiteral("<br>%1 %2").arg(calls).arg(calls == 1 ? "call" : "calls");
        tip += unsaved ? QStringLiteral(" · not saved") : QStringLiteral(" · saved");
        if (i == recording)
            tip += onStage
                       ? QStringLiteral("<br><i>recording: other runs can be shown meanwhile, its calls keep "
                                        "arriving here</i>")
                       : QStringLiteral("<br><i>recording in the background: its calls keep arriving</i>");
        if (tabToolTip(i) != tip) setTabToolTip(i, tip);
    }
    setCurrentIndex(m_runs->current());
    setVisible(count() > 0); // no run yet: the timeline keeps the room
    m_syncing = false;
}

void RunBar::mouseDoubleClickEvent(QMouseEvent *event)
{
    const int index = tabAt(event->position().toPoint());
    if (index >= 0)
        emit renameRequested(index);
    else
        QTabBar::mouseDoubleClickEvent(event);
}

void RunBar::contextMenuEvent(QContextMenuEvent *event)
{
    const int index = tabAt(event->pos());
    if (index < 0) return;
    QMenu menu(this);
    menu.addAction(QStringLiteral("Show"), this, [this, index] { emit showRequested(index); });
    menu.addAction(QStringLiteral("Rename…"), this, [this, index] { emit renameRequested(index); });
    menu.addAction(QStringLiteral("Save as…"), this, [this, index] { emit saveRequested(index); });
    menu.addSeparator();
    menu.addAction(QStringLiteral("Close run (Ctrl+W)"), this, [this, index] { emit closeRequested(index); });
    menu.exec(event->globalPos());
}

} // namespace rpcscope
