#include "retrypolicydialog.h"

#include "retryserviceconfig.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace rpcscope {

RetryPolicyDialog::RetryPolicyDialog(const QString &json, QWidget *parent) : QDialog(parent)
{
    setWindowTitle(QStringLiteral("Retry policy"));
    auto *layout = new QVBoxLayout(this);
    auto *intro = new QLabel(
        QStringLiteral("The service config the client was given (the JSON passed to gRPC). Every call is "
                       "judged against the retryPolicy that names its method, the way the client's "
                       "implementation (from its user-agent) retries."),
        this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    m_editor = new QPlainTextEdit(this);
    m_editor->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_editor->setPlainText(json.isEmpty() ? example() : json);
    m_editor->setToolTip(
        QStringLiteral("methodConfig[].name, retryPolicy, timeout and retryThrottling are read"));
    m_editor->setMinimumSize(560, 260);
    layout->addWidget(m_editor);
    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("retryPolicyError"));
    m_error->setStyleSheet(QStringLiteral("color: #c0392b"));
    m_error->setWordWrap(true);
    m_error->hide();
    layout->addWidget(m_error);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    QPushButton *load = buttons->addButton(QStringLiteral("&Load file…"), QDialogButtonBox::ActionRole);
    load->setShortcut(QKeySequence(QStringLiteral("Ctrl+L")));
    load->setToolTip(QStringLiteral("Read the service config from a JSON file (Ctrl+L)"));
    buttons->button(QDialogButtonBox::Ok)
        ->setToolTip(QStringLiteral("Judge the calls against this config (Ctrl+Return)"));
    buttons->button(QDialogButtonBox::Ok)->setShortcut(QKeySequence(QStringLiteral("Ctrl+Return")));
    connect(load, &QPushButton::clicked, this, &RetryPolicyDialog::loadFile);
    connect(buttons, &QDialogButtonBox::accepted, this, &RetryPolicyDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

QString RetryPolicyDialog::json() const
{
    return m_editor->toPlainText();
}

QString RetryPolicyDialog::example()
{
    return QStringLiteral("{\n"
                          "  \"methodConfig\": [{\n"
                          "    \"name\": [{\"service\": \"rpcscope.lab.Lab\"}],\n"
                          "    \"retryPolicy\": {\n"
                          "      \"maxAttempts\": 3,\n"
                          "      \"initialBackoff\": \"0.05s\",\n"
                          "      \"maxBackoff\": \"1s\",\n"
                          "      \"backoffMultiplier\": 2,\n"
                          "      \"retryableStatusCodes\": [\"UNAVAILABLE\"]\n"
                          "    }\n"
                          "  }]\n"
                          "}\n");
}

void RetryPolicyDialog::accept()
{
    std::string error;
    if (!RetryServiceConfig::parse(json().toUtf8(), &error)) {
        m_error->setText(QString::fromStdString(error));
        m_error->show();
        return;
    }
    QDialog::accept();
}

void RetryPolicyDialog::loadFile()
{
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Service config"), {},
                                                      QStringLiteral("JSON (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        m_error->setText(path + QStringLiteral(": ") + f.errorString());
        m_error->show();
        return;
    }
    m_editor->setPlainText(QString::fromUtf8(f.readAll()));
    m_error->hide();
}

} // namespace rpcscope
