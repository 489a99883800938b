// The lab's verify-policy scenario in the real main window, offscreen: its service config and fault rules are
// text boxes in the Scenario dock that say what is wrong as you type, a run with a broken config is refused
// with that reason, and a run opens the Policy check tab judged against the config as edited.

#include "clock.h"
#include "labpanel.h"
#include "labsession.h"
#include "mainwindow.h"
#include "modelsink.h"
#include "policydock.h"
#include "scenariotextedit.h"
#include "timelinemodel.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTableWidget>
#include <QtTest>

using namespace rpcscope;

namespace {

// maxAttempts 10: the client stops at 5, which the check must judge by C-core's clamp, not the text.
const QString kEdited = QStringLiteral(
    R"({"methodConfig":[{"name":[{"service":"rpcscope.lab.Lab"}],"retryPolicy":{"maxAttempts":10,)"
    R"("initialBackoff":"0.02s","maxBackoff":"0.1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})");

} // namespace

class TestVerifyPolicy : public QObject
{
    Q_OBJECT

private slots:
    void editRunAndJudge()
    {
        TimelineModel model;
        model.setOrigin(steadyNowNs(), wallNowNs());
        model.setKeepHeaders(true); // the check tells clients by the user-agent the header log keeps
        lab::LabSession lab;
        std::string error;
        QVERIFY2(lab.start(queuedSinkTo(&model), &error), error.c_str());
        MainWindow window(&model, &lab, QStringLiteral("verify-policy"));
        window.setPromptOnClose(false);
        window.show();

        auto *config = window.labPanel()->findChild<QPlainTextEdit *>(QStringLiteral("text_service_config"));
        auto *faults = window.labPanel()->findChild<QPlainTextEdit *>(QStringLiteral("text_faults"));
        auto *configProblem =
            window.labPanel()->findChild<QLabel *>(QStringLiteral("problem_service_config"));
        auto *faultsProblem = window.labPanel()->findChild<QLabel *>(QStringLiteral("problem_faults"));
        QVERIFY(config && faults && configProblem && faultsProblem);
        QVERIFY(!config->toolTip().isEmpty() && !faults->toolTip().isEmpty());
        QVERIFY(config->toPlainText().contains(QStringLiteral("retryPolicy")));
        QVERIFY(configProblem->isHidden());

        // Broken as typed: the reason shows under the box, and the run is refused with it.
        config->setPlainText(
            QStringLiteral(R"({"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":1}}]})"));
        QVERIFY(!configProblem->isHidden());
        QVERIFY2(configProblem->text().contains(QStringLiteral("maxAttempts")),
                 qPrintable(configProblem->text()));
        faults->setPlainText(QStringLiteral("abort status=99"));
        QVERIFY(!faultsProblem->isHidden());
        QVERIFY2(faultsProblem->text().contains(QStringLiteral("fault rule 1")),
                 qPrintable(faultsProblem->text()));
        window.labPanel()->runScenario();
        QVERIFY(!window.labPanel()->isRunning());
        auto *result = window.labPanel()->findChild<QLabel *>(QStringLiteral("result"));
        QVERIFY2(result->text().contains(QStringLiteral("parameter")), qPrintable(result->text()));

        // Edited well: the server fails the first 6 arrivals of each call (no rule needed for that), so every
        // call makes 5 attempts and fails; the check, judged against the edited text, finds them conforming.
        config->setPlainText(kEdited);
        faults->setPlainText(QString());
        QVERIFY(configProblem->isHidden() && faultsProblem->isHidden());
        QLineEdit *failFirst = nullptr;
        QLineEdit *calls = nullptr;
        for (QLineEdit *e : window.labPanel()->findChildren<QLineEdit *>()) {
            // The form labels its rows with the parameter keys.
            if (auto *form = window.labPanel()->findChild<QFormLayout *>()) {
                if (auto *label = qobject_cast<QLabel *>(form->labelForField(e))) {
                    if (label->text() == QStringLiteral("server_fails_first_n")) failFirst = e;
                    if (label->text() == QStringLiteral("calls")) calls = e;
                }
            }
        }
        QVERIFY(failFirst && calls);
        failFirst->setText(QStringLiteral("6"));
        calls->setText(QStringLiteral("3"));
        QSignalSpy finished(window.labPanel(), &LabPanel::runFinished);
        window.labPanel()->runScenario();
        QVERIFY(window.labPanel()->isRunning());
        QVERIFY(finished.wait(60'000));
        window.labPanel()->waitForRun();
        QVERIFY(window.policyDock()->hasConfig());
        QCOMPARE(window.policyDock()->serviceConfigText(), kEdited);
        auto *dock = qobject_cast<QDockWidget *>(window.policyDock()->parent());
        QVERIFY(dock && dock->isVisible());
        QTRY_VERIFY_WITH_TIMEOUT(window.policyDock()->check().calls() == 3, 10'000);
        QVERIFY2(window.policyDock()->check().allConform(),
                 qPrintable(QString::fromStdString(window.policyDock()->check().text())));
        for (const Call &call : model.store().calls())
            QCOMPARE(int(call.attempts.size()), 5);

        // Another scenario's client was never given that config: its run drops it rather than judge by it.
        QComboBox *box = window.labPanel()->scenarioBox();
        const int basic = box->findText(QStringLiteral("retry-basic"), Qt::MatchStartsWith);
        QVERIFY(basic >= 0);
        box->setCurrentIndex(basic);
        window.labPanel()->runScenario();
        QVERIFY(finished.wait(60'000));
        window.labPanel()->waitForRun();
        QVERIFY(!window.policyDock()->hasConfig());

        // The verify-policy run keeps the config it ran with: shown again, it is judged against it, and a run
        // shown after it (retry-basic, or a file) is not.
        int verifyRun = -1, basicRun = -1;
        for (int i = 0; i < window.runs()->count(); ++i) {
            if (window.runs()->at(i).name.startsWith(QStringLiteral("verify-policy"))) verifyRun = i;
            if (window.runs()->at(i).name.startsWith(QStringLiteral("retry-basic"))) basicRun = i;
        }
        QVERIFY(verifyRun >= 0 && basicRun >= 0);
        QVERIFY(window.showRun(verifyRun));
        QCOMPARE(window.policyDock()->serviceConfigText(), kEdited);
        QTRY_VERIFY_WITH_TIMEOUT(window.policyDock()->check().calls() == 3, 10'000);
        QVERIFY(window.policyDock()->check().allConform());
        QVERIFY(window.showRun(basicRun));
        QVERIFY(!window.policyDock()->hasConfig());
        // A config the user gives judges whatever is shown, except the run that has its own; it comes back
        // after.
        QString why;
        QString users = kEdited;
        users.replace(QStringLiteral("\"maxAttempts\":10"), QStringLiteral("\"maxAttempts\":3"));
        QVERIFY(users != kEdited);
        QVERIFY2(window.policyDock()->setServiceConfig(users, &why), qPrintable(why));
        QVERIFY(window.showRun(verifyRun));
        QCOMPARE(window.policyDock()->serviceConfigText(), kEdited);
        QVERIFY(window.showRun(basicRun));
        QCOMPARE(window.policyDock()->serviceConfigText(), users);
        lab.stop();
    }
};

QTEST_MAIN(TestVerifyPolicy)
#include "tst_verifypolicy.moc"
