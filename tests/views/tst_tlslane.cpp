// A connection that carried TLS says so under its lane's title (version, ALPN, SNI) and in its tooltip
// (cipher, the target's certificate), read from the note the capture layer writes for it.

#include "attemptinspector.h"
#include "connectionlanepass.h"
#include "timelinepainter.h"
#include "timelinestore.h"
#include "timelinetooltips.h"
#include "tlssummary.h"
#include "wireevents.h"

#include <QDir>
#include <QImage>
#include <QTreeWidget>
#include <QtTest>

using namespace rpcscope;

namespace {
constexpr std::int64_t ms = 1'000'000;

const char *const kIntercepted =
    "TLS intercepted: SNI api.example.com, ALPN h2; client side TLSv1.3 TLS_AES_256_GCM_SHA384; target side "
    "TLSv1.2 ECDHE-ECDSA-AES128-GCM-SHA256, certificate CN=api.example.com, O=Example "
    "(not verified: --target-insecure)";
const char *const kPassed = "TLS, not decrypted: SNI db.internal, ALPN h2, http/1.1";

WireEvent note(std::uint32_t conn, std::int64_t t, const std::string &text)
{
    WireEvent e = testev::event(EventKind::Notice, conn, 0, t);
    e.reason = text;
    return e;
}

WireEvent request(std::uint32_t conn, std::uint32_t stream, std::int64_t t)
{
    WireEvent e = testev::event(EventKind::Headers, conn, stream, t, Direction::ClientToServer);
    e.grpc.path = "/shop.Catalog/Get";
    return e;
}

// Three connections: intercepted, passed through encrypted, plaintext.
void fill(TimelineStore &store)
{
    store.apply({testev::opened(1, 0, "127.0.0.1:41000", "127.0.0.1:8443", "front->api"),
                 note(1, 1 * ms, kIntercepted), request(1, 1, 2 * ms), testev::trailers(1, 1, 30 * ms, 0),
                 testev::opened(2, 5 * ms, "127.0.0.1:41002", "10.0.0.7:5432", "api->db"),
                 note(2, 6 * ms, kPassed), testev::opened(3, 8 * ms, "127.0.0.1:41004", "127.0.0.1:9000"),
                 request(3, 1, 9 * ms), testev::trailers(3, 1, 20 * ms, 0)});
}
} // namespace

class TestTlsLane : public QObject
{
    Q_OBJECT
private slots:
    void parsesNotes()
    {
        const auto t = TlsSummary::parse(kIntercepted);
        QVERIFY(t);
        QVERIFY(t->intercepted);
        QCOMPARE(t->sni, std::string("api.example.com"));
        QCOMPARE(t->alpn, std::string("h2"));
        QCOMPARE(t->version, std::string("TLSv1.3"));
        QCOMPARE(t->cipher, std::string("TLS_AES_256_GCM_SHA384"));
        QCOMPARE(t->targetVersion, std::string("TLSv1.2"));
        QCOMPARE(t->targetCipher, std::string("ECDHE-ECDSA-AES128-GCM-SHA256"));
        QCOMPARE(t->certificate, std::string("CN=api.example.com, O=Example"));
        QVERIFY(t->targetUnverified);
        QCOMPARE(t->shortLine(), std::string("TLS 1.3 · h2 · SNI api.example.com"));

        const auto p = TlsSummary::parse(kPassed);
        QVERIFY(p);
        QVERIFY(!p->intercepted);
        QCOMPARE(p->alpn, std::string("h2, http/1.1"));
        QCOMPARE(p->shortLine(), std::string("TLS, not decrypted · SNI db.internal"));

        const auto none = TlsSummary::parse("TLS, not decrypted: SNI (none), ALPN (none)");
        QVERIFY(none);
        QCOMPARE(none->shortLine(), std::string("TLS, not decrypted"));
        QVERIFY(!TlsSummary::parse("HPACK table reset"));
        QVERIFY(!TlsSummary::find({"limit hit", "attached mid-connection"}));
    }

    void subtitleAndTooltip()
    {
        TimelineStore store;
        fill(store);
        const auto &conns = store.connections();
        QCOMPARE(conns.size(), size_t(3));
        const QString intercepted = ConnectionLanePass::subtitle(conns[0]);
        QVERIFY2(intercepted.startsWith(QStringLiteral("TLS 1.3 · h2 · SNI api.example.com")),
                 qPrintable(intercepted));
        QVERIFY2(intercepted.endsWith(QStringLiteral("127.0.0.1:41000 → 127.0.0.1:8443")),
                 qPrintable(intercepted));
        const QString passed = ConnectionLanePass::subtitle(conns[1]);
        QVERIFY2(passed.startsWith(QStringLiteral("TLS, not decrypted · SNI db.internal")),
                 qPrintable(passed));
        const QString plain = ConnectionLanePass::subtitle(conns[2]);
        QCOMPARE(plain, QStringLiteral("127.0.0.1:41004 → 127.0.0.1:9000"));

        const QString tip = TimelineToolTips::connection(store, 0);
        QVERIFY2(tip.contains(QStringLiteral("<b>TLS 1.3 · h2 · SNI api.example.com</b>")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("cipher TLS_AES_256_GCM_SHA384")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("certificate CN=api.example.com, O=Example (not verified)")),
                 qPrintable(tip));
        QVERIFY(!TimelineToolTips::connection(store, 2).contains(QStringLiteral("TLS")));

        // The inspector of a call on that connection has the whole of it.
        AttemptInspector inspector(&store, nullptr);
        inspector.showAttempt(0, 0);
        auto rows =
            inspector.tree()->findItems(QStringLiteral("TLS"), Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(rows.size(), 1);
        QVERIFY2(
            rows[0]->text(1).contains(QStringLiteral("SNI api.example.com; cipher TLS_AES_256_GCM_SHA384")),
            qPrintable(rows[0]->text(1)));
        QVERIFY2(rows[0]->text(1).contains(QStringLiteral("certificate CN=api.example.com, O=Example")),
                 qPrintable(rows[0]->text(1)));
        inspector.showAttempt(1, 0); // the plaintext connection's call has no TLS row
        rows = inspector.tree()->findItems(QStringLiteral("TLS"), Qt::MatchExactly | Qt::MatchRecursive, 0);
        QVERIFY(rows.isEmpty());
    }

    // The subtitle is drawn: the same capture without its TLS notes paints a different label column. The
    // picture is kept for a look when RPCSCOPE_TEST_PNG_DIR is set.
    void subtitleDrawn()
    {
        TimelineStore store;
        fill(store);
        TimelinePainter::Options o;
        o.grouping = LaneGrouping::Connection;
        const QImage img = TimelinePainter::renderImage(store, 900, o);
        QVERIFY(!img.isNull());
        const QString dir = qEnvironmentVariable("RPCSCOPE_TEST_PNG_DIR");
        if (!dir.isEmpty()) QVERIFY(img.save(QDir(dir).filePath(QStringLiteral("tlslane.png"))));

        TimelineStore plainStore;
        plainStore.apply({testev::opened(1, 0, "127.0.0.1:41000", "127.0.0.1:8443", "front->api"),
                          request(1, 1, 2 * ms), testev::trailers(1, 1, 30 * ms, 0),
                          testev::opened(2, 5 * ms, "127.0.0.1:41002", "10.0.0.7:5432", "api->db"),
                          testev::opened(3, 8 * ms, "127.0.0.1:41004", "127.0.0.1:9000"),
                          request(3, 1, 9 * ms), testev::trailers(3, 1, 20 * ms, 0)});
        const QImage plainImg = TimelinePainter::renderImage(plainStore, 900, o);
        QCOMPARE(plainImg.size(), img.size());
        // Same layout, same titles and calls: the label column differs only where TLS was written.
        qint64 differ = 0;
        for (int y = 0; y < img.height(); ++y)
            for (int x = 0; x < 230; ++x)
                differ += img.pixel(x, y) != plainImg.pixel(x, y);
        QVERIFY2(differ > 200, qPrintable(QStringLiteral("%1 pixels differ").arg(differ)));
    }
};

QTEST_MAIN(TestTlsLane)
#include "tst_tlslane.moc"
