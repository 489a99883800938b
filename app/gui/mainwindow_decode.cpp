// MainWindow: message decoding. The Schemas menu (.proto files, server reflection) feeds the decoder the
// inspector shows messages with; with the lab running, its server's schemas are fetched by reflection at
// start and whenever a scenario brings a service no schema covers yet.

#include "attemptinspector.h"
#include "labsession.h"
#include "mainwindow.h"
#include "schemacontroller.h"
#include "timelinemodel.h"

#include <QAction>
#include <QMenu>
#include <QStatusBar>
#include <QToolBar>
#include <QToolButton>

namespace rpcscope {

void MainWindow::buildDecoding(QToolBar *tb)
{
    m_schemas = new SchemaController(this);
    m_inspector->setDecoder(m_schemas->decoder());
    connect(m_schemas, &SchemaController::schemasChanged, m_inspector, &AttemptInspector::refresh);
    connect(m_schemas, &SchemaController::message, this,
            [this](const QString &text, int timeoutMs) { statusBar()->showMessage(text, timeoutMs); });
    // The services of the captured calls: a fetch asks for them too, whatever the server lists.
    m_schemas->setCapturedServices([this] {
        QStringList services;
        for (const Call &c : m_model->store().calls()) {
            const QString path = QString::fromStdString(c.method);
            const qsizetype slash = path.lastIndexOf(QLatin1Char('/'));
            const QString service = path.mid(1, slash - 1);
            if (slash > 1 && !services.contains(service)) services << service;
        }
        return services;
    });
    m_schemas->setTargetSuggestions([this] {
        QStringList targets;
        if (m_capture)
            for (const CaptureSession::RunningHop &h : m_capture->hops())
                targets << h.target;
        if (m_lab) targets << QString::fromStdString(m_lab->serverAddress().toString());
        return targets;
    });

    auto *button = new QToolButton(this);
    button->setText(QStringLiteral("Schemas"));
    button->setMenu(m_schemas->menu());
    button->setPopupMode(QToolButton::InstantPopup);
    button->setToolTip(
        QStringLiteral("Decode messages to JSON in the Inspector: load .proto files (Ctrl+Shift+P) "
                       "or fetch them by server reflection (Ctrl+Shift+R)"));
    tb->addWidget(button);
    addActions({m_schemas->loadAction(), m_schemas->fetchAction()});

    m_schemas->loadRemembered();
    if (m_lab) {
        const QString lab = QString::fromStdString(m_lab->serverAddress().toString());
        m_schemas->fetch(lab, true);
        connect(this, &MainWindow::scenarioFinished, m_schemas,
                [this, lab] { m_schemas->fetchMissing(lab); });
    }
}

} // namespace rpcscope
