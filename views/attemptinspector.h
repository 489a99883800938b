#pragma once

#include <QWidget>

class QLabel;
class QTreeWidget;

namespace rpcscope {

class HeaderLog;
class TimelineStore;

// The inspector dock's contents: one attempt's timings, its status, its HTTP/2 frames and its decoded
// request headers, response headers and trailers.
class AttemptInspector : public QWidget
{
    Q_OBJECT
public:
    AttemptInspector(const TimelineStore *store, const HeaderLog *headers, QWidget *parent = nullptr);

    QTreeWidget *tree() const { return m_tree; }

public slots:
    // call = attempt = -1 clears it.
    void showAttempt(int call, int attempt);

private:
    const TimelineStore *m_store;
    const HeaderLog *m_headers;
    QLabel *m_title;
    QTreeWidget *m_tree;
};

} // namespace rpcscope
