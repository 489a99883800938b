#pragma once

#include <QDialog>
#include <QStringList>
#include <functional>

class QLabel;
class QListWidget;
class QPlainTextEdit;

namespace rpcscope {

// What the dialog calls back for, rather than knowing who keeps the schemas
// (SchemaController::dialogHooks()).
struct SchemaDialogHooks
{
    // Loads the .proto files with these import paths; false with "file:line:column: message" errors.
    std::function<bool(const QStringList &files, const QStringList &importPaths, QStringList *errors)>
        loadProtos;
    // What is loaded now, shown under the lists.
    std::function<QString()> summary;
};

// Schemas > Load .proto files: the .proto files and the import paths they are found in (as protoc's -I),
// remembered for the next start. Load shows the importer's errors (file:line:column) and stays open.
class SchemaDialog : public QDialog
{
    Q_OBJECT
public:
    explicit SchemaDialog(SchemaDialogHooks hooks, QWidget *parent = nullptr);

    QStringList files() const;
    QStringList importPaths() const;
    void setFiles(const QStringList &files);
    void setImportPaths(const QStringList &paths);
    // Loads what the lists hold; false with the errors shown in the dialog.
    bool load();
    QString errorText() const;

private:
    SchemaDialogHooks m_hooks;
    QListWidget *m_files;
    QListWidget *m_paths;
    QLabel *m_status;
    QPlainTextEdit *m_errors;
};

} // namespace rpcscope
