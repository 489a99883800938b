#include "capturedialog.h"

#include "rpcscopeca.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QCompleter>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <algorithm>

namespace rpcscope {

namespace {

const char *const kRecentKey = "capture/recentTargets";

QPushButton *copyButton(const QString &text, QWidget *parent)
{
    auto *b = new QPushButton(QStringLiteral("Copy"), parent);
    b->setToolTip(QStringLiteral("Copy %1 to the clipboard").arg(text));
    QObject::connect(b, &QPushButton::clicked, b, [text] { QApplication::clipboard()->setText(text); });
    return b;
}

} // namespace

CaptureDialog::CaptureDialog(CaptureSession *session, QWidget *parent) : QDialog(parent), m_session(session)
{
    setWindowTitle(QStringLiteral("New capture"));
    m_pages = new QStackedWidget(this);
    auto *outer = new QVBoxLayout(this);
    outer->addWidget(m_pages);

    // Page 1: the hops.
    auto *form = new QWidget(m_pages);
    auto *v = new QVBoxLayout(form);
    auto *intro = new QLabel(
        QStringLiteral(
            "Each hop is a proxy: point a client at its listen address and it relays to the target, "
            "recording every call. Add one hop per link of a chain (front → API → DB) to see them on "
            "one timeline."),
        form);
    intro->setWordWrap(true);
    v->addWidget(intro);
    m_grid = new QGridLayout;
    v->addLayout(m_grid);
    auto *add = new QPushButton(QStringLiteral("Add hop"), form);
    add->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+N")));
    connect(add, &QPushButton::clicked, this, &CaptureDialog::addHop);
    m_allowRemote = new QCheckBox(QStringLiteral("Allow remote clients (listen beyond this machine)"), form);
    auto *row = new QHBoxLayout;
    row->addWidget(add);
    row->addWidget(m_allowRemote);
    row->addStretch();
    v->addLayout(row);
    // Proxy by environment: no client is re-pointed, each CONNECT target becomes a hop of its own.
    auto *proxyRow = new QHBoxLayout;
    m_asProxy = new QCheckBox(QStringLiteral("Capture as &proxy on"), form);
    m_asProxy->setObjectName(QStringLiteral("captureAsProxy"));
    m_asProxy->setToolTip(
        QStringLiteral("Also serve an HTTP CONNECT proxy (Alt+P): clients started with "
                       "grpc_proxy=http://ADDRESS are captured without being re-pointed, each target they "
                       "reach becoming a hop of its own. Hop rows without a target are then left out."));
    m_proxyListen = new QLineEdit(CaptureSession::freeLoopbackAddress(), form);
    m_proxyListen->setObjectName(QStringLiteral("proxyListen"));
    m_proxyListen->setToolTip(
        QStringLiteral("HOST:PORT the CONNECT proxy listens on; port 0 picks a free port"));
    m_proxyListen->setEnabled(false);
    connect(m_asProxy, &QCheckBox::toggled, m_proxyListen, &QWidget::setEnabled);
    m_proxyTls = new QCheckBox(QStringLiteral("Intercept &TLS"), form);
    m_proxyTls->setObjectName(QStringLiteral("proxyInterceptTls"));
    m_proxyTls->setToolTip(
        QStringLiteral("Intercept TLS in the proxy's tunnels (Alt+T): a client that starts TLS gets a "
                       "certificate the rpcscope CA mints for its server name, and the proxy opens TLS to "
                       "the target, checked as set below. Tunnels speaking h2c are captured as they are."));
    m_proxyTls->setEnabled(false);
    connect(m_asProxy, &QCheckBox::toggled, m_proxyTls, &QWidget::setEnabled);
    proxyRow->addWidget(m_asProxy);
    proxyRow->addWidget(m_proxyListen, 1);
    proxyRow->addWidget(m_proxyTls);
    v->addLayout(proxyRow);
    m_proxyError = new QLabel(form);
    m_proxyError->setStyleSheet(QStringLiteral("color: #c62828"));
    m_proxyError->setWordWrap(true);
    m_proxyError->hide();
    v->addWidget(m_proxyError);
    // How intercepting hops check their targets; the hops themselves are ticked in the TLS column.
    auto *tlsRow = new QHBoxLayout;
    auto *caLabel = new QLabel(QStringLiteral("Target &CA file:"), form);
    m_targetCa = new QLineEdit(form);
    m_targetCa->setObjectName(QStringLiteral("targetCa"));
    m_targetCa->setClearButtonEnabled(true);
    m_targetCa->setPlaceholderText(QStringLiteral("system roots"));
    m_targetCa->setToolTip(
        QStringLiteral("For hops with TLS ticked and the proxy's Intercept TLS (Alt+C): the PEM "
                       "certificate(s) the real target's "
                       "certificate must chain to; empty: the system's root certificates"));
    caLabel->setBuddy(m_targetCa);
    auto *caBrowse = new QPushButton(QStringLiteral("Browse…"), form);
    caBrowse->setToolTip(QStringLiteral("Pick the target's CA certificate file"));
    connect(caBrowse, &QPushButton::clicked, this, [this] {
        const QString file =
            QFileDialog::getOpenFileName(this, QStringLiteral("Target CA"), m_targetCa->text(),
                                         QStringLiteral("PEM certificates (*.pem *.crt);;All (*)"));
        if (!file.isEmpty()) m_targetCa->setText(file);
    });
    m_targetInsecure = new QCheckBox(QStringLiteral("&Don't verify the target"), form);
    m_targetInsecure->setObjectName(QStringLiteral("targetInsecure"));
    m_targetInsecure->setToolTip(
        QStringLiteral("For hops with TLS ticked (Alt+D): accept any certificate from the target. Anyone on "
                       "the path to it can then read and change the traffic; use it only for a test server"));
    connect(m_targetInsecure, &QCheckBox::toggled, m_targetCa, &QWidget::setDisabled);
    tlsRow->addWidget(caLabel);
    tlsRow->addWidget(m_targetCa, 1);
    tlsRow->addWidget(caBrowse);
    tlsRow->addWidget(m_targetInsecure);
    v->addLayout(tlsRow);
    m_tlsError = new QLabel(form);
    m_tlsError->setObjectName(QStringLiteral("tlsError"));
    m_tlsError->setStyleSheet(QStringLiteral("color: #c62828"));
    m_tlsError->setWordWrap(true);
    m_tlsError->hide();
    v->addWidget(m_tlsError);
    // Optional: everything recorded also goes to a file as it comes, safe from retention and crashes.
    auto *record = new QHBoxLayout;
    record->addWidget(new QLabel(QStringLiteral("Record to file:"), form));
    m_record = new QLineEdit(form);
    m_record->setObjectName(QStringLiteral("recordTo"));
    m_record->setClearButtonEnabled(true);
    m_record->setPlaceholderText(QStringLiteral("optional .rpcscope file, written as calls come in"));
    m_record->setToolTip(
        QStringLiteral("Writes everything the capture records to this file as it comes: it keeps "
                       "what retention evicts from memory, and a crash leaves FILE.partial, "
                       "which opens as a truncated capture"));
    record->addWidget(m_record, 1);
    auto *browse = new QPushButton(QStringLiteral("Browse…"), form);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString start = m_record->text().trimmed().isEmpty()
                                  ? QDir::home().filePath(QStringLiteral("capture.rpcscope"))
                                  : m_record->text().trimmed();
        const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Record to"), start,
                                                          QStringLiteral("rpcscope capture (*.rpcscope)"));
        if (!file.isEmpty()) m_record->setText(file);
    });
    record->addWidget(browse);
    v->addLayout(record);
    m_general = new QLabel(form);
    m_general->setStyleSheet(QStringLiteral("color: #c62828"));
    m_general->setWordWrap(true);
    v->addWidget(m_general);
    auto *buttons = new QDialogButtonBox(form);
    m_start = buttons->addButton(QStringLiteral("Start"), QDialogButtonBox::AcceptRole);
    m_start->setDefault(true);
    buttons->addButton(QDialogButtonBox::Cancel);
    connect(m_start, &QPushButton::clicked, this, &CaptureDialog::startCapture);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    v->addWidget(buttons);
    m_pages->addWidget(form);

    // Page 2: where to point the clients.
    auto *running = new QWidget(m_pages);
    auto *rv = new QVBoxLayout(running);
    m_addresses = new QVBoxLayout;
    rv->addLayout(m_addresses);
    rv->addStretch();
    auto *close = new QDialogButtonBox(QDialogButtonBox::Close, running);
    connect(close, &QDialogButtonBox::rejected, this, &QDialog::accept);
    rv->addWidget(close);
    m_pages->addWidget(running);

    const QStringList recent = recentTargets();
    setHops({{QStringLiteral("hop 1"), CaptureSession::freeLoopbackAddress(), recent.value(0)}});
    resize(760, sizeHint().height());
}

void CaptureDialog::addHop()
{
    Row r;
    r.label = new QLineEdit(this);
    r.label->setPlaceholderText(QStringLiteral("label, e.g. front->api"));
    r.listen = new QLineEdit(CaptureSession::freeLoopbackAddress(), this);
    r.listen->setToolTip(QStringLiteral("HOST:PORT to listen on; port 0 picks a free port"));
    r.target = new QLineEdit(this);
    r.target->setPlaceholderText(QStringLiteral("target HOST:PORT"));
    r.target->setCompleter(new QCompleter(recentTargets(), r.target));
    r.tls = new QCheckBox(QStringLiteral("TLS"), this);
    r.tls->setObjectName(QStringLiteral("interceptTls"));
    r.tls->setToolTip(
        QStringLiteral("Intercept TLS on this hop (Tab to it, Space ticks it): clients get a certificate "
                       "signed by the rpcscope CA, and the hop opens TLS to the target, so the calls are "
                       "decoded. Trust the CA in the client's process only "
                       "(GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=its certificate); `rpcscope-cli ca` prints it"));
    r.remove = new QPushButton(QStringLiteral("Remove"), this);
    r.error = new QLabel(this);
    r.error->setStyleSheet(QStringLiteral("color: #c62828"));
    r.error->setWordWrap(true);
    r.label->setText(QStringLiteral("hop %1").arg(m_rows.size() + 1));
    QPushButton *button = r.remove;
    connect(button, &QPushButton::clicked, this, [this, button] { removeHop(button); });
    m_rows.push_back(r);
    relayout();
    r.target->setFocus();
}

void CaptureDialog::removeHop(QPushButton *button)
{
    if (m_rows.size() == 1) return;
    for (auto it = m_rows.begin(); it != m_rows.end(); ++it)
        if (it->remove == button) {
            for (QWidget *w : {static_cast<QWidget *>(it->label), static_cast<QWidget *>(it->listen),
                               static_cast<QWidget *>(it->target), static_cast<QWidget *>(it->tls),
                               static_cast<QWidget *>(it->remove), static_cast<QWidget *>(it->error)})
                w->deleteLater();
            m_rows.erase(it);
            break;
        }
    relayout();
}

void CaptureDialog::relayout()
{
    while (m_grid->count())
        delete m_grid->takeAt(0); // the layout's wrapper, not the widget
    const QStringList heads = {QStringLiteral("Label"), QStringLiteral("Listen on"), QStringLiteral("Target"),
                               QStringLiteral("Intercept")};
    for (int c = 0; c < heads.size(); ++c) {
        auto *h = findChild<QLabel *>(QStringLiteral("head%1").arg(c));
        if (!h) {
            h = new QLabel(QStringLiteral("<b>%1</b>").arg(heads[c]), this);
            h->setObjectName(QStringLiteral("head%1").arg(c));
        }
        m_grid->addWidget(h, 0, c);
    }
    int line = 1;
    for (const Row &r : m_rows) {
        m_grid->addWidget(r.label, line, 0);
        m_grid->addWidget(r.listen, line, 1);
        m_grid->addWidget(r.target, line, 2);
        m_grid->addWidget(r.tls, line, 3);
        m_grid->addWidget(r.remove, line, 4);
        r.remove->setEnabled(m_rows.size() > 1);
        m_grid->addWidget(r.error, line + 1, 0, 1, 5);
        line += 2;
    }
    m_grid->setColumnStretch(0, 2);
    m_grid->setColumnStretch(1, 3);
    m_grid->setColumnStretch(2, 3);
}

void CaptureDialog::setHops(const std::vector<HopSpec> &hops)
{
    while (m_rows.size() > hops.size())
        removeHop(m_rows.back().remove);
    while (m_rows.size() < hops.size())
        addHop();
    for (size_t i = 0; i < hops.size(); ++i) {
        m_rows[i].label->setText(hops[i].label);
        m_rows[i].listen->setText(hops[i].listen);
        m_rows[i].target->setText(hops[i].target);
        m_rows[i].tls->setChecked(hops[i].tls.enabled);
        m_rows[i].error->clear();
    }
}

std::vector<HopSpec> CaptureDialog::hops() const
{
    std::vector<HopSpec> out;
    for (size_t i = 0; i < m_rows.size(); ++i) {
        const Row &r = m_rows[i];
        const QString label = r.label->text().trimmed();
        HopSpec hop{label.isEmpty() ? QStringLiteral("hop %1").arg(i + 1) : label, r.listen->text().trimmed(),
                    r.target->text().trimmed()};
        if (r.tls->isChecked()) {
            hop.tls.enabled = true;
            hop.tls.targetInsecure = m_targetInsecure->isChecked();
            if (!hop.tls.targetInsecure) hop.tls.targetCaFile = m_targetCa->text().trimmed().toStdString();
        }
        out.push_back(hop);
    }
    return out;
}

void CaptureDialog::setAllowRemote(bool allow)
{
    m_allowRemote->setChecked(allow);
}

void CaptureDialog::setRecordTo(const QString &path)
{
    m_record->setText(path);
}

void CaptureDialog::setCaptureAsProxy(bool on, const QString &listen)
{
    m_asProxy->setChecked(on);
    if (!listen.isEmpty()) m_proxyListen->setText(listen);
}

void CaptureDialog::setProxyInterceptTls(bool on)
{
    m_proxyTls->setChecked(on);
}

void CaptureDialog::setInterceptTls(int row, bool on)
{
    if (row >= 0 && size_t(row) < m_rows.size()) m_rows[size_t(row)].tls->setChecked(on);
}

void CaptureDialog::setTargetTls(const QString &caFile, bool insecure)
{
    m_targetCa->setText(caFile);
    m_targetInsecure->setChecked(insecure);
}

QString CaptureDialog::tlsErrorText() const
{
    return m_tlsError->text();
}

// Refuses a target CA file that cannot serve before any hop starts, and makes the rpcscope CA now, so the
// running page can say which certificate the clients trust.
bool CaptureDialog::checkTls(const std::vector<HopSpec> &specs)
{
    m_tlsError->clear();
    m_tlsError->hide();
    m_caCertPath.clear();
    m_tlsHops.clear();
    for (const HopSpec &h : specs)
        if (h.tls.enabled) m_tlsHops << (h.proxy ? QStringLiteral("the CONNECT proxy's tunnels") : h.label);
    if (m_tlsHops.isEmpty()) return true;
    auto refuse = [this](const QString &why) {
        m_tlsError->setText(why);
        m_tlsError->show();
        return false;
    };
    const QString caFile = m_targetCa->text().trimmed();
    if (!m_targetInsecure->isChecked() && !caFile.isEmpty()) {
        QFile file(caFile);
        const QFileInfo info(caFile);
        if (!info.exists()) return refuse(QStringLiteral("Target CA file: %1 does not exist").arg(caFile));
        if (info.isDir())
            return refuse(
                QStringLiteral("Target CA file: %1 is a folder; name a PEM certificate file").arg(caFile));
        if (!file.open(QIODevice::ReadOnly))
            return refuse(
                QStringLiteral("Target CA file: %1 cannot be read (%2)").arg(caFile, file.errorString()));
        // A CA bundle is small; a file much larger, or without a PEM certificate in its start, is not one.
        const QByteArray head = file.read(1 << 20);
        if (!head.contains("-----BEGIN CERTIFICATE-----"))
            return refuse(
                QStringLiteral("Target CA file: %1 holds no PEM certificate (-----BEGIN "
                               "CERTIFICATE-----); give the CA that signed the target's certificate")
                    .arg(caFile));
    }
    RpcscopeCa ca;
    std::string error;
    if (!ca.open(std::string(), false, &error))
        return refuse(QStringLiteral("rpcscope CA: %1").arg(QString::fromStdString(error)));
    m_caCertPath = QString::fromStdString(ca.certPath());
    return true;
}

QString CaptureDialog::proxyErrorText() const
{
    return m_proxyError->text();
}

QString CaptureDialog::errorText(int row) const
{
    return row >= 0 && size_t(row) < m_rows.size() ? m_rows[size_t(row)].error->text() : QString();
}

QString CaptureDialog::generalError() const
{
    return m_general->text();
}

bool CaptureDialog::isShowingAddresses() const
{
    return m_pages->currentIndex() == 1;
}

bool CaptureDialog::startCapture()
{
    m_general->clear();
    const bool asProxy = m_asProxy->isChecked();
    std::vector<HopSpec> specs;
    bool ok = true;
    QStringList listens;
    auto checked = [&](const HopSpec &spec) {
        HopCheck c = CaptureSession::check(spec, m_allowRemote->isChecked());
        if (c.listenError.isEmpty() && !spec.listen.endsWith(QLatin1String(":0")) &&
            listens.contains(spec.listen))
            c.listenError = QStringLiteral("another hop already listens on %1").arg(spec.listen);
        listens << spec.listen;
        ok = ok && c.ok();
        return c;
    };
    const std::vector<HopSpec> rows = hops();
    for (size_t i = 0; i < rows.size(); ++i) {
        if (asProxy && rows[i].target.isEmpty()) { // only the proxy, or a row left blank beside it
            m_rows[i].error->clear();
            continue;
        }
        const HopCheck c = checked(rows[i]);
        QStringList parts;
        if (!c.listenError.isEmpty()) parts << QStringLiteral("Listen: %1").arg(c.listenError);
        if (!c.targetError.isEmpty()) parts << QStringLiteral("Target: %1").arg(c.targetError);
        m_rows[i].error->setText(parts.join(QStringLiteral("  ·  ")));
        specs.push_back(rows[i]);
    }
    m_proxyError->clear();
    m_proxyError->hide();
    if (asProxy) {
        HopSpec proxy;
        proxy.listen = m_proxyListen->text().trimmed();
        proxy.proxy = true;
        if (m_proxyTls->isChecked()) {
            proxy.tls.enabled = true;
            proxy.tls.targetInsecure = m_targetInsecure->isChecked();
            if (!proxy.tls.targetInsecure)
                proxy.tls.targetCaFile = m_targetCa->text().trimmed().toStdString();
        }
        const HopCheck c = checked(proxy);
        if (!c.listenError.isEmpty()) {
            m_proxyError->setText(QStringLiteral("Proxy: %1").arg(c.listenError));
            m_proxyError->show();
        }
        specs.push_back(proxy);
    }
    ok = checkTls(specs) && ok;
    m_session->setRecordTo(m_record->text());
    const QString record = m_session->recordTo();
    if (!record.isEmpty()) {
        const QFileInfo file(record);
        if (file.isDir()) {
            m_general->setText(QStringLiteral("Record to: %1 is a folder; name a file in it").arg(record));
            ok = false;
        } else if (!file.absoluteDir().exists()) {
            m_general->setText(
                QStringLiteral("Record to: the folder %1 does not exist").arg(file.absolutePath()));
            ok = false;
        }
    }
    if (!ok) {
        // The reasons take lines of their own: grow to show them rather than squeeze the rows.
        resize(width(), std::max(height(), sizeHint().height()));
        return false;
    }
    QString error;
    if (!m_session->start(specs, m_allowRemote->isChecked(), &error)) {
        m_general->setText(error);
        return false;
    }
    std::erase_if(specs, [](const HopSpec &h) { return h.proxy; });
    rememberTargets(specs);
    showAddresses();
    return true;
}

void CaptureDialog::showAddresses()
{
    auto *title =
        new QLabel(QStringLiteral("<b>Capturing.</b> Point your clients at these addresses:"), this);
    m_addresses->addWidget(title);
    auto *grid = new QGridLayout;
    int line = 0;
    for (const CaptureSession::RunningHop &h : m_session->hops()) {
        // A proxy is not pointed at: its clients are started with it in their environment.
        const QString give = h.proxy ? QStringLiteral("grpc_proxy=http://%1").arg(h.listen) : h.listen;
        grid->addWidget(new QLabel(h.proxy ? QStringLiteral("CONNECT proxy") : h.label, this), line, 0);
        auto *address = new QLineEdit(give, this);
        address->setReadOnly(true);
        address->setObjectName(QStringLiteral("address%1").arg(line));
        grid->addWidget(address, line, 1);
        grid->addWidget(new QLabel(h.proxy ? QStringLiteral("→ any target; each becomes a hop")
                                           : QStringLiteral("→ %1").arg(h.target),
                                   this),
                        line, 2);
        grid->addWidget(copyButton(give, this), line, 3);
        ++line;
    }
    m_addresses->addLayout(grid);
    if (!m_caCertPath.isEmpty()) {
        // Per process, never system-wide: whoever holds the CA key can impersonate any server to its
        // trusters.
        const QString env = QStringLiteral("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=%1").arg(m_caCertPath);
        auto *tls =
            new QLabel(QStringLiteral("TLS intercepted on <b>%1</b>: start each client of it trusting the "
                                      "rpcscope CA, in its own process only (grpc++, grpcio, grpc-js; "
                                      "grpc-go: add the file to its cert pool):")
                           .arg(m_tlsHops.join(QStringLiteral(", ")).toHtmlEscaped()),
                       this);
        tls->setWordWrap(true);
        m_addresses->addWidget(tls);
        auto *row = new QHBoxLayout;
        auto *field = new QLineEdit(env, this);
        field->setReadOnly(true);
        field->setObjectName(QStringLiteral("caTrust"));
        field->setCursorPosition(0); // the variable's name first; the path is a click or a Copy away
        row->addWidget(field, 1);
        row->addWidget(copyButton(env, this));
        m_addresses->addLayout(row);
    }
    auto *events =
        new QLabel(QStringLiteral("Your own breaker, bulkhead and retry events: gRPC Ingest service at "
                                  "<b>%1</b>, JSON lines at <b>%2</b> (see the README).")
                       .arg(m_session->ingestGrpcAddress(), m_session->ingestJsonAddress()),
                   this);
    events->setWordWrap(true);
    m_addresses->addWidget(events);
    if (m_session->isRecording()) {
        auto *recording =
            new QLabel(QStringLiteral("Recording to <b>%1</b>; it becomes %2 when the capture stops.")
                           .arg(m_session->recordingPartialPath().toHtmlEscaped(),
                                m_session->recordTo().toHtmlEscaped()),
                       this);
        recording->setObjectName(QStringLiteral("recording"));
        recording->setWordWrap(true);
        m_addresses->addWidget(recording);
    }
    m_pages->setCurrentIndex(1);
}

QStringList CaptureDialog::recentTargets()
{
    return QSettings().value(QLatin1String(kRecentKey)).toStringList();
}

void CaptureDialog::rememberTargets(const std::vector<HopSpec> &hops)
{
    QStringList recent = recentTargets();
    for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
        recent.removeAll(it->target);
        recent.prepend(it->target);
    }
    while (recent.size() > 10)
        recent.removeLast();
    QSettings().setValue(QLatin1String(kRecentKey), recent);
}

CapturePanel::CapturePanel(CaptureSession *session, QWidget *parent) : QWidget(parent), m_session(session)
{
    auto *v = new QVBoxLayout(this);
    auto *buttons = new QHBoxLayout;
    m_new = new QPushButton(QStringLiteral("New capture…"), this);
    m_new->setToolTip(QStringLiteral("Capture your own client and server (Ctrl+Shift+C)"));
    m_stop = new QPushButton(QStringLiteral("Stop"), this);
    m_pause = new QPushButton(QStringLiteral("Pause"), this);
    m_pause->setCheckable(true);
    m_pause->setToolTip(QStringLiteral("Keep relaying, stop recording"));
    auto *clear = new QPushButton(QStringLiteral("Clear"), this);
    for (QPushButton *b : {m_new, m_stop, m_pause, clear})
        buttons->addWidget(b);
    buttons->addStretch();
    v->addLayout(buttons);
    m_list = new QLabel(this);
    m_list->setObjectName(QStringLiteral("captureState"));
    m_list->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_list->setWordWrap(true);
    v->addWidget(m_list);
    v->addStretch();
    connect(m_new, &QPushButton::clicked, this, &CapturePanel::newCapture);
    connect(m_stop, &QPushButton::clicked, m_session, &CaptureSession::stop);
    connect(m_pause, &QPushButton::toggled, this, [this](bool on) {
        m_session->setPaused(on);
        refresh();
    });
    connect(clear, &QPushButton::clicked, this, &CapturePanel::clearRequested);
    connect(m_session, &CaptureSession::runningChanged, this, &CapturePanel::refresh);
    connect(m_session, &CaptureSession::statsChanged, this, &CapturePanel::refresh);
    refresh();
}

void CapturePanel::newCapture()
{
    CaptureDialog dialog(m_session, this);
    dialog.exec();
}

QString CapturePanel::statusText() const
{
    if (!m_session->isRunning()) return {};
    QString s = QStringLiteral("%1 open connection%2 · %3 events/s")
                    .arg(m_session->openConnections())
                    .arg(m_session->openConnections() == 1 ? "" : "s")
                    .arg(qRound(m_session->eventsPerSecond()));
    if (m_session->isPaused()) s += QStringLiteral(" · PAUSED");
    if (m_session->decodeProblems())
        s += QStringLiteral(" · %1 decode problem%2 (connection %3)")
                 .arg(m_session->decodeProblems())
                 .arg(m_session->decodeProblems() == 1 ? "" : "s")
                 .arg(m_session->lastProblemConnection());
    return s;
}

void CapturePanel::refresh()
{
    const bool running = m_session->isRunning();
    m_stop->setEnabled(running);
    m_pause->setEnabled(running);
    if (!running && m_pause->isChecked()) m_pause->setChecked(false);
    m_pause->setText(m_session->isPaused() ? QStringLiteral("Resume") : QStringLiteral("Pause"));
    if (!running) {
        QString idle =
            QStringLiteral("No capture running. \"New capture…\" puts a proxy in front of your server.");
        if (!m_session->lastRecordingResult().isEmpty())
            idle += QStringLiteral("<br>") + m_session->lastRecordingResult().toHtmlEscaped();
        m_list->setText(idle);
        return;
    }
    QStringList lines;
    for (const CaptureSession::RunningHop &h : m_session->hops())
        if (h.proxy) // its targets so far, each a hop
            lines << QStringLiteral("<b>CONNECT proxy</b>: grpc_proxy=http://%1 → %2")
                         .arg(h.listen,
                              m_session->proxyTargets().isEmpty()
                                  ? QStringLiteral("no target yet")
                                  : m_session->proxyTargets().join(QStringLiteral(", ")).toHtmlEscaped());
        else
            lines << QStringLiteral("<b>%1</b>: %2 → %3")
                         .arg(h.label.toHtmlEscaped(), h.listen, h.target.toHtmlEscaped());
    lines << QStringLiteral("events in: gRPC %1, JSON lines %2")
                 .arg(m_session->ingestGrpcAddress(), m_session->ingestJsonAddress());
    if (m_session->isRecording()) {
        const QString failed = m_session->recordingError();
        lines
            << (failed.isEmpty()
                    ? QStringLiteral("recording to %1").arg(m_session->recordingPartialPath().toHtmlEscaped())
                    : QStringLiteral("<b>recording stopped</b>: %1 (the capture goes on)")
                          .arg(failed.toHtmlEscaped()));
    }
    lines << statusText();
    m_list->setText(lines.join(QStringLiteral("<br>")));
}

} // namespace rpcscope
