#pragma once

#include "messagedecoder.h"
#include "schemadialog.h"

#include <QObject>
#include <QStringList>
#include <functional>
#include <memory>
#include <set>
#include <thread>

class QAction;
class QMenu;
class QWidget;

namespace rpcscope {

struct ReflectionResult;

// The GUI's message schemas: one MessageDecoder fed by .proto files (Schemas > Load .proto files, remembered
// in QSettings) and by gRPC server reflection (Schemas > Fetch by reflection, run off the GUI thread). The
// inspector decodes with decoder(); schemasChanged() tells it to decode again.
class SchemaController : public QObject
{
    Q_OBJECT
public:
    explicit SchemaController(QWidget *window);
    ~SchemaController() override;

    const MessageDecoder *decoder() const { return &m_decoder; }
    QMenu *menu() const { return m_menu; }
    QAction *loadAction() const { return m_loadAction; }
    QAction *fetchAction() const { return m_fetchAction; }

    // The services of the captured calls ("pkg.Service"), asked for by a fetch beside the listed ones.
    void setCapturedServices(std::function<QStringList()> fn) { m_capturedServices = std::move(fn); }
    // Reflection targets offered first in the Fetch dialog (the live capture's targets, the lab server).
    void setTargetSuggestions(std::function<QStringList()> fn) { m_targets = std::move(fn); }

    // Loads .proto files with these import paths; errors are "file:line:column: message".
    bool loadProtos(const QStringList &files, const QStringList &importPaths, QStringList *errors);
    // The .proto files and import paths last loaded (QSettings), quietly: problems go to message().
    void loadRemembered();
    // Fetches by reflection in the background. `quiet`: failures only reach the status bar, no dialog.
    // False when a fetch is already running.
    bool fetch(const QString &target, bool quiet);
    // Fetches from `target` the services of captured calls that no schema covers yet, each asked once.
    void fetchMissing(const QString &target);
    bool isFetching() const { return m_fetching; }
    // "3 files: rpcscope.lab.Lab, grpc.health.v1.Health" or "no schemas loaded".
    QString summary() const;
    void forget();
    // What the Load .proto files dialog calls: loadProtos() and summary().
    SchemaDialogHooks dialogHooks();

signals:
    void schemasChanged();
    void message(const QString &text, int timeoutMs);
    // One fetch ended; ok with the summary, or the reason it failed.
    void fetchFinished(bool ok, const QString &text);

private:
    void openDialog();
    void fetchInteractive();
    void applyFetch(const QString &target, const ReflectionResult &result, bool quiet);
    void updateMenu();

    QWidget *m_window;
    MessageDecoder m_decoder;
    QMenu *m_menu;
    QAction *m_loadAction;
    QAction *m_fetchAction;
    QAction *m_summaryAction;
    std::function<QStringList()> m_capturedServices;
    std::function<QStringList()> m_targets;
    std::set<std::string> m_asked; // services fetchMissing() already asked for
    std::thread m_worker;
    bool m_fetching = false;
};

} // namespace rpcscope
