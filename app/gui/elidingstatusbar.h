#pragma once

#include <QStatusBar>

namespace rpcscope {

// A status bar whose message, where it does not fit beside the permanent widgets (the session's calls and
// memory, the lab's addresses), ends in an ellipsis instead of being cut off mid-word; the whole message is
// then its tooltip. Otherwise it paints as QStatusBar does.
class ElidingStatusBar : public QStatusBar
{
    Q_OBJECT
public:
    explicit ElidingStatusBar(QWidget *parent = nullptr);

    // The message as painted now: currentMessage(), elided to messageRect()'s width.
    QString shownMessage() const;
    // Where the message goes: from the left margin to the first visible permanent widget (or the size grip).
    QRect messageRect() const;

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;

private:
    QString elided(const QRect &room) const;
    void updateToolTip();
};

} // namespace rpcscope
