#pragma once

#include <QDialog>

class QLabel;
class QPlainTextEdit;

namespace rpcscope {

// "Retry policy…": the service config JSON the client was given, pasted or loaded from a file, as the
// Policy check judges calls against it (issue 19). OK accepts only a config that parses; a bad one stays in
// the editor with the one-line reason under it.
class RetryPolicyDialog : public QDialog
{
    Q_OBJECT
public:
    explicit RetryPolicyDialog(const QString &json, QWidget *parent = nullptr);

    QString json() const;
    QPlainTextEdit *editor() const { return m_editor; }
    QLabel *errorLabel() const { return m_error; }

    // A service config to start from: the lab client's own.
    static QString example();

public slots:
    void accept() override;

private:
    void loadFile();

    QPlainTextEdit *m_editor = nullptr;
    QLabel *m_error = nullptr;
};

} // namespace rpcscope
