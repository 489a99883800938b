// Converting and merging without holding the capture: `rpcscope-cli convert` and `rpcscope-cli merge` write
// what a writer holding the whole capture wrote. Convert: a pcapng imported and written again as pcapng,
// against the whole-capture pcapng writer (kept as a reference) on the loaded capture. Merge: the files read
// twice and merged as they are read, against MergeSet's merge in memory, written as .rpcscope and pcapng.

#include "capturecodec.h"
#include "captureconvert.h"
#include "capturewriter.h"
#include "mergeset.h"
#include "pcapngreference.h"
#include "synthcapture.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace rpcscope;
using testsynth::Generator;
using testsynth::Synth;

namespace {

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeBytes(const QString &path, const std::string &bytes)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) &&
           f.write(bytes.data(), qint64(bytes.size())) == qint64(bytes.size());
}

// The merge as the CLI made it before it streamed: both files loaded, merged in memory, then written.
bool mergeInMemory(const QStringList &paths, const QString &out, FileFormat format, std::string *error)
{
    MergeSet set;
    for (const QString &p : paths)
        if (!set.add(p).usable()) return false;
    set.setOffset(1, 3'000'000);
    CaptureData merged;
    if (!set.merge(&merged).ok) return false;
    if (format == FileFormat::Pcapng) {
        for (EventBatch &b : merged.batches)
            ExportOptions{}.redaction.apply(b);
        return writeBytes(out, reference::wholeCapturePcapng(merged));
    }
    return exportCapture(merged, format, out, {}, error);
}

bool mergeStreamed(const QStringList &paths, const QString &out, FileFormat format, size_t *events,
                   std::string *error)
{
    std::vector<MergeFacts> facts(size_t(paths.size()));
    std::vector<MergeFile> files;
    for (int i = 0; i < paths.size(); ++i) {
        if (!gatherMergeFacts(paths[i], &facts[size_t(i)]).usable()) return false;
        files.push_back({paths[i], &facts[size_t(i)], defaultMergeLabel(paths[i].toStdString(), {}),
                         i == 1 ? 3'000'000 : 0});
    }
    ConvertResult result;
    const bool ok = exportProduced(
        [&](CaptureInfo *info, const CaptureBatchSink &sink) {
            CaptureReadResult read;
            const MergeResult m = mergeCaptureFiles(files, {}, info, sink, &read);
            return m.ok ? read : CaptureReadResult{CaptureReadResult::Failed, m.error};
        },
        format, out, {}, &result, error);
    *events = result.events;
    return ok;
}

} // namespace

class TestStreamedExport : public QObject
{
    Q_OBJECT

private slots:
    void convertPcapngToPcapng_data()
    {
        QTest::addColumn<unsigned>("seed");
        for (unsigned seed : {1u, 2u, 3u})
            QTest::addRow("seed %u", seed) << seed;
    }
    void convertPcapngToPcapng()
    {
        QFETCH(unsigned, seed);
        QTemporaryDir dir;
        Synth s;
        s.connections = 6;
        s.concurrent = 3;
        const QString in = dir.filePath("in.pcapng"), out = dir.filePath("out.pcapng");
        QVERIFY(writeBytes(in, reference::wholeCapturePcapng(Generator(seed, s).run())));

        CaptureData loaded;
        QVERIFY(loadCapture(in, &loaded).usable());
        QVERIFY(loaded.eventCount() > 100);
        for (EventBatch &b : loaded.batches)
            ExportOptions{}.redaction.apply(b);
        const std::string expected = reference::wholeCapturePcapng(loaded);

        ConvertResult result;
        std::string error;
        QVERIFY2(convertCapture(in, FileFormat::Pcapng, out, {}, {}, &result, &error), error.c_str());
        QCOMPARE(result.events, loaded.eventCount());
        const QByteArray written = readAll(out);
        QCOMPARE(size_t(written.size()), expected.size());
        QVERIFY(written == QByteArray::fromStdString(expected));
    }

    void mergeAsInMemory_data()
    {
        QTest::addColumn<QString>("format");
        QTest::newRow("rpcscope") << QStringLiteral("rpcscope");
        QTest::newRow("pcapng") << QStringLiteral("pcapng");
        QTest::newRow("json") << QStringLiteral("json");
    }
    void mergeAsInMemory()
    {
        QFETCH(QString, format);
        const FileFormat f = formatFromName(format.toStdString());
        QTemporaryDir dir;
        QStringList paths;
        for (unsigned seed : {11u, 12u}) {
            Synth s;
            s.connections = 5;
            CaptureData d = Generator(seed, s).run();
            d.info.originWallNs += std::int64_t(seed) * 1'000'000;
            const QString p = dir.filePath(QStringLiteral("host%1.rpcscope").arg(seed));
            std::string error;
            QVERIFY2(writeCaptureFile(p, d, {}, &error), error.c_str());
            paths << p;
        }
        const QString whole = dir.filePath("whole." + format), streamed = dir.filePath("streamed." + format);
        std::string error;
        QVERIFY2(mergeInMemory(paths, whole, f, &error), error.c_str());
        size_t events = 0;
        QVERIFY2(mergeStreamed(paths, streamed, f, &events, &error), error.c_str());
        QVERIFY(events > 100);
        const QByteArray a = readAll(whole), b = readAll(streamed);
        QVERIFY(!a.isEmpty());
        QCOMPARE(b.size(), a.size());
        if (f != FileFormat::Rpcscope) {
            QVERIFY(a == b);
            return;
        }
        // An .rpcscope header says when it was saved: the rest, record by record, is the same.
        CaptureData x, y;
        QVERIFY(loadCapture(whole, &x).status == CaptureReadResult::Ok);
        QVERIFY(loadCapture(streamed, &y).status == CaptureReadResult::Ok);
        QCOMPARE(y.info.originNs, x.info.originNs);
        QCOMPARE(y.info.originWallNs, x.info.originWallNs);
        QCOMPARE(y.info.writer, x.info.writer);
        QCOMPARE(y.info.recordFrames, x.info.recordFrames);
        QCOMPARE(y.batches.size(), x.batches.size());
        for (size_t i = 0; i < x.batches.size(); ++i)
            QVERIFY(encodeBatch(y.batches[i]) == encodeBatch(x.batches[i]));
        int differing = 0; // the save time and the header's checksum
        for (qsizetype i = 0; i < a.size(); ++i)
            differing += a[i] != b[i];
        QVERIFY(differing <= 16);
    }

    // A file that cannot be read the second time fails the merge, and nothing is left at the output.
    void mergeFailsWhenAFileGoesAway()
    {
        QTemporaryDir dir;
        const QString p = dir.filePath("a.rpcscope"), q = dir.filePath("b.rpcscope");
        std::string error;
        QVERIFY(writeCaptureFile(p, Generator(1, {}).run(), {}, &error));
        QVERIFY(writeCaptureFile(q, Generator(2, {}).run(), {}, &error));
        std::vector<MergeFacts> facts(2);
        QVERIFY(gatherMergeFacts(p, &facts[0]).usable());
        QVERIFY(gatherMergeFacts(q, &facts[1]).usable());
        QVERIFY(QFile::remove(q));
        const QString out = dir.filePath("out.rpcscope");
        ConvertResult result;
        const bool ok = exportProduced(
            [&](CaptureInfo *info, const CaptureBatchSink &sink) {
                CaptureReadResult read;
                const MergeResult m = mergeCaptureFiles({{p, &facts[0], "a", 0}, {q, &facts[1], "b", 0}}, {},
                                                        info, sink, &read);
                return m.ok ? read : CaptureReadResult{CaptureReadResult::Failed, m.error};
            },
            FileFormat::Rpcscope, out, {}, &result, &error);
        QVERIFY(!ok);
        QVERIFY(!QFile::exists(out));
    }
};

QTEST_GUILESS_MAIN(TestStreamedExport)
#include "tst_streamedexport.moc"
