#pragma once

#include "capturesession.h"

#include <QDialog>
#include <QWidget>

class QCheckBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QStackedWidget;
class QVBoxLayout;

namespace rpcscope {

// "New capture…": one row per hop (label, listen address, target), checked inline when Start is pressed;
// once running it shows the addresses to point clients at, each with a Copy button.
class CaptureDialog : public QDialog
{
    Q_OBJECT
public:
    CaptureDialog(CaptureSession *session, QWidget *parent = nullptr);

    // Rows, for tests and for `rpcscope --capture`.
    void setHops(const std::vector<HopSpec> &hops);
    std::vector<HopSpec> hops() const;
    void setAllowRemote(bool allow);
    // "Capture as proxy": also serve an HTTP CONNECT proxy on `listen`, so clients started with grpc_proxy
    // are captured unchanged; hop rows without a target are then left out.
    void setCaptureAsProxy(bool on, const QString &listen = QString());
    // The proxy's "Intercept TLS" box: tunnels whose clients start TLS are intercepted, checked against the
    // same target CA as the hops.
    void setProxyInterceptTls(bool on);
    QString proxyErrorText() const;
    // TLS interception, per hop (its "TLS" box), and how every intercepting hop checks its target: against
    // `caFile` (empty: the system's roots), or not at all when `insecure`.
    void setInterceptTls(int row, bool on);
    void setTargetTls(const QString &caFile, bool insecure);
    QString tlsErrorText() const;
    // The rpcscope CA certificate the clients of intercepting hops trust, once such a capture started.
    QString caCertPath() const { return m_caCertPath; }
    // The .rpcscope file to record to as the capture goes (empty: none); ".rpcscope" is added when missing.
    void setRecordTo(const QString &path);

    QString errorText(int row) const; // what is wrong with that row, as shown
    QString generalError() const;
    bool isShowingAddresses() const;
    QPushButton *startButton() const { return m_start; }

    // Most recent first, at most 10, kept across restarts.
    static QStringList recentTargets();
    static void rememberTargets(const std::vector<HopSpec> &hops);

public slots:
    void addHop();
    bool startCapture(); // validates, starts; false leaves the errors on screen

private:
    struct Row
    {
        QLineEdit *label;
        QLineEdit *listen;
        QLineEdit *target;
        QCheckBox *tls;
        QPushButton *remove;
        QLabel *error;
    };
    void removeHop(QPushButton *button);
    void relayout();
    void showAddresses();
    bool checkTls(const std::vector<HopSpec> &specs);

    CaptureSession *m_session;
    QStackedWidget *m_pages;
    QGridLayout *m_grid;
    std::vector<Row> m_rows;
    QCheckBox *m_allowRemote;
    QCheckBox *m_asProxy;
    QLineEdit *m_proxyListen;
    QCheckBox *m_proxyTls;
    QLabel *m_proxyError;
    QLineEdit *m_targetCa;
    QCheckBox *m_targetInsecure;
    QLabel *m_tlsError;
    QString m_caCertPath;
    QStringList m_tlsHops; // labels of the intercepting hops, for the running page
    QLineEdit *m_record;
    QLabel *m_general;
    QPushButton *m_start;
    QVBoxLayout *m_addresses;
};

// The Capture dock: New capture…, Stop, Pause, and the running hops with their addresses.
class CapturePanel : public QWidget
{
    Q_OBJECT
public:
    CapturePanel(CaptureSession *session, QWidget *parent = nullptr);

    // A one-line summary for the status bar: connections, events/s, decode problems.
    QString statusText() const;

signals:
    void clearRequested();

public slots:
    void newCapture();

private:
    void refresh();

    CaptureSession *m_session;
    QPushButton *m_new;
    QPushButton *m_stop;
    QPushButton *m_pause;
    QLabel *m_list;
};

} // namespace rpcscope
