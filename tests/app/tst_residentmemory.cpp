// What the process holds beyond what the model counts of itself counts against the model's budget (the
// window's retention, rpcscope-cli capture --keep): measured from the kernel's RSS, above a baseline, at most
// half the budget.

#include "residentmemory.h"
#include "timelinemodel.h"

#include <QtTest>
#include <cstring>
#include <memory>

using namespace rpcscope;

namespace {
constexpr size_t kMB = size_t(1) << 20;

// `bytes` the model knows nothing of, every page touched (resident), given back to the system when freed.
std::unique_ptr<char[]> touched(size_t bytes)
{
    std::unique_ptr<char[]> p(new char[bytes]);
    std::memset(p.get(), 1, bytes);
    return p;
}

TimelineModel *budgeted(size_t maxBytes)
{
    auto *model = new TimelineModel;
    RetentionPolicy keep;
    keep.maxBytes = maxBytes;
    model->setRetention(keep);
    return model;
}
} // namespace

class TestResidentMemory : public QObject
{
    Q_OBJECT
private slots:
    void readsTheKernelsFigure()
    {
        const size_t before = residentBytes();
        QVERIFY(before > 0);
        auto held = touched(32 * kMB);
        QVERIFY2(residentBytes() >= before + 30 * kMB, qPrintable(QString::number(residentBytes() - before)));
    }

    void countsWhatTheProcessHoldsAboveItsBaseline()
    {
        std::unique_ptr<TimelineModel> model(budgeted(256 * kMB));
        const size_t own = model->memoryBytes();
        countResidentMemory(model.get(), residentBytes());
        auto held = touched(40 * kMB);
        // Refreshed at most every 200 ms.
        QTRY_VERIFY_WITH_TIMEOUT(model->memoryBytes() >= own + 38 * kMB, 5000);
        QVERIFY2(model->memoryBytes() <= own + 48 * kMB, qPrintable(QString::number(model->memoryBytes())));
        held.reset(); // its pages go back to the system: counted no more
        QTRY_VERIFY_WITH_TIMEOUT(model->memoryBytes() < own + 8 * kMB, 5000);
    }

    void neverMoreThanHalfTheBudget()
    {
        std::unique_ptr<TimelineModel> model(budgeted(16 * kMB));
        const size_t own = model->memoryBytes();
        countResidentMemory(model.get(), residentBytes());
        auto held = touched(40 * kMB);
        QTRY_VERIFY_WITH_TIMEOUT(model->memoryBytes() >= own + 8 * kMB, 5000);
        QCOMPARE(model->memoryBytes(), own + 8 * kMB);
    }

    void theBaselineIsNotCounted()
    {
        std::unique_ptr<TimelineModel> model(budgeted(256 * kMB));
        const size_t own = model->memoryBytes();
        countResidentMemory(model.get(), residentBytes() + 100 * kMB);
        auto held = touched(40 * kMB);
        QTest::qWait(300); // past a refresh: there is nothing to wait for but time
        QCOMPARE(model->memoryBytes(), own);
    }
};

QTEST_GUILESS_MAIN(TestResidentMemory)
#include "tst_residentmemory.moc"
