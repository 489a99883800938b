#pragma once

#include <QWidget>
#include <string>

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace rpcscope {

class HeaderLog;
class MessageDecoder;
class TimelineStore;

// The inspector dock's contents: one attempt's timings, its status, its HTTP/2 frames, its decoded request
// headers, response headers and trailers, and its messages (JSON when a schema is loaded, raw protobuf fields
// and hex otherwise).
class AttemptInspector : public QWidget
{
    Q_OBJECT
public:
    AttemptInspector(const TimelineStore *store, const HeaderLog *headers, QWidget *parent = nullptr);

    QTreeWidget *tree() const { return m_tree; }
    // Decodes the messages (null: raw fields and hex only). The app owns it and calls refresh() when it
    // changes.
    void setDecoder(const MessageDecoder *decoder) { m_decoder = decoder; }
    // The JSON of the message the current row belongs to (its raw fields when it has no schema); empty
    // when the row is not part of a message.
    QString currentMessageText() const;

public slots:
    // call = attempt = -1 clears it.
    void showAttempt(int call, int attempt);
    // Shows the same attempt again (new schemas, say); clears when that call is no longer there.
    void refresh();
    // Copies the current row (Ctrl+C): a message's JSON when on a message, otherwise "name: value".
    void copyCurrent();

private:
    void addMessages(int callIndex, int attemptIndex);

    const TimelineStore *m_store;
    const HeaderLog *m_headers;
    const MessageDecoder *m_decoder = nullptr;
    QLabel *m_title;
    QTreeWidget *m_tree;
    int m_call = -1;
    int m_attempt = -1;
    std::string m_callKey;
};

} // namespace rpcscope
