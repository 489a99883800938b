#pragma once

#include <QDialog>

class QLabel;
class QListWidget;
class QPlainTextEdit;

namespace rpcscope {

class SchemaController;

// Schemas > Load .proto files: the .proto files and the import paths they are found in (as protoc's -I),
// remembered for the next start. Load shows the importer's errors (file:line:column) and stays open.
class SchemaDialog : public QDialog
{
    Q_OBJECT
public:
    SchemaDialog(SchemaController *controller, QWidget *parent = nullptr);

    QStringList files() const;
    QStringList importPaths() const;
    void setFiles(const QStringList &files);
    void setImportPaths(const QStringList &paths);
    // Loads what the lists hold; false with the errors shown in the dialog.
    bool load();
    QString errorText() const;

private:
    SchemaController *m_controller;
    QListWidget *m_files;
    QListWidget *m_paths;
    QLabel *m_status;
    QPlainTextEdit *m_errors;
};

} // namespace rpcscope
