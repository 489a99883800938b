// The CONNECT request parser: what a proxy accepts as a tunnel request and what it answers with an error.

#include "connectrequest.h"

#include <QtTest>

using namespace rpcscope;

class TestConnectRequest : public QObject
{
    Q_OBJECT
private slots:
    void complete_data()
    {
        QTest::addColumn<QByteArray>("data");
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::addColumn<int>("consumed");
        const QByteArray grpc = "CONNECT 127.0.0.1:50051 HTTP/1.1\r\nHost: 127.0.0.1:50051\r\n\r\n";
        QTest::newRow("grpc core") << grpc << "127.0.0.1" << 50051 << int(grpc.size());
        QTest::newRow("tunnel bytes follow") << grpc + "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                             << "127.0.0.1" << 50051 << int(grpc.size());
        const QByteArray v6 = "CONNECT [::1]:443 HTTP/1.0\r\n\r\n";
        QTest::newRow("ipv6, http/1.0, no fields") << v6 << "::1" << 443 << int(v6.size());
        const QByteArray lf = "\r\nCONNECT api.example.com:8443 HTTP/1.1\nUser-Agent: grpc-c++\n\n";
        QTest::newRow("bare LF, leading empty line") << lf << "api.example.com" << 8443 << int(lf.size());
    }
    void complete()
    {
        QFETCH(QByteArray, data);
        const ConnectRequest r = parseConnectRequest(std::string_view(data.constData(), size_t(data.size())));
        QCOMPARE(int(r.state), int(ConnectRequest::Complete));
        QFETCH(QString, host);
        QFETCH(int, port);
        QFETCH(int, consumed);
        QCOMPARE(QString::fromStdString(r.target.host), host);
        QCOMPARE(int(r.target.port), port);
        QCOMPARE(int(r.consumed), consumed);
    }

    void incomplete()
    {
        const std::string whole = "CONNECT 127.0.0.1:50051 HTTP/1.1\r\nHost: x\r\n\r\n";
        // Every prefix is "more to come", never an error: a client may send its request a byte at a time.
        for (size_t n = 0; n < whole.size(); ++n)
            QCOMPARE(int(parseConnectRequest(whole.substr(0, n)).state), int(ConnectRequest::Incomplete));
        QCOMPARE(int(parseConnectRequest(whole).state), int(ConnectRequest::Complete));
    }

    void refused_data()
    {
        QTest::addColumn<QByteArray>("data");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reason");
        QTest::newRow("GET") << QByteArray("GET / HTTP/1.1\r\nHost: x\r\n\r\n") << 405
                             << "method 'GET' not allowed";
        QTest::newRow("POST before its line ends") << QByteArray("POST /x") << 405 << "'POST'";
        QTest::newRow("lower-case connect")
            << QByteArray("connect a:1 HTTP/1.1\r\n\r\n") << 405 << "'connect'";
        QTest::newRow("no port") << QByteArray("CONNECT example.com HTTP/1.1\r\n\r\n") << 400
                                 << "port is missing";
        QTest::newRow("port 0") << QByteArray("CONNECT example.com:0 HTTP/1.1\r\n\r\n") << 400 << "between 1";
        QTest::newRow("port too big") << QByteArray("CONNECT a:65536 HTTP/1.1\r\n\r\n") << 400 << "between 1";
        QTest::newRow("origin form") << QByteArray("CONNECT /a:1 HTTP/1.1\r\n\r\n") << 400 << "cannot";
        QTest::newRow("unbracketed v6")
            << QByteArray("CONNECT ::1:443 HTTP/1.1\r\n\r\n") << 400 << "brackets";
        QTest::newRow("two spaces") << QByteArray("CONNECT  a:1 HTTP/1.1\r\n\r\n") << 400
                                    << "malformed request line";
        QTest::newRow("no version") << QByteArray("CONNECT a:1\r\n\r\n") << 400 << "malformed request line";
        QTest::newRow("bad version") << QByteArray("CONNECT a:1 HTTP/x\r\n\r\n") << 400 << "HTTP version";
        QTest::newRow("http/2") << QByteArray("CONNECT a:1 HTTP/2.0\r\n\r\n") << 505 << "not supported";
        QTest::newRow("field without colon")
            << QByteArray("CONNECT a:1 HTTP/1.1\r\nHost x\r\n\r\n") << 400 << "malformed header field";
        QTest::newRow("space before colon")
            << QByteArray("CONNECT a:1 HTTP/1.1\r\nHost : x\r\n\r\n") << 400 << "malformed header field";
        QTest::newRow("folded") << QByteArray("CONNECT a:1 HTTP/1.1\r\nA: b\r\n c\r\n\r\n") << 400
                                << "folding";
        QTest::newRow("NUL") << QByteArray("CONNECT a:1 HTTP/1.1\r\nA: \0b\r\n\r\n", 36) << 400 << "control";
        QTest::newRow("binary") << QByteArray("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n", 12) << 400
                                << "malformed request line";
        QTest::newRow("h2 preface") << QByteArray("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") << 405 << "'PRI'";
    }
    void refused()
    {
        QFETCH(QByteArray, data);
        QFETCH(int, status);
        QFETCH(QString, reason);
        const ConnectRequest r = parseConnectRequest(std::string_view(data.constData(), size_t(data.size())));
        QCOMPARE(int(r.state), int(ConnectRequest::Refused));
        QCOMPARE(r.status, status);
        QVERIFY2(QString::fromStdString(r.reason).contains(reason), r.reason.c_str());
    }

    void sizeLimit()
    {
        // A head that never ends is refused once it reaches the limit, not read forever.
        std::string endless = "CONNECT a:1 HTTP/1.1\r\n";
        while (endless.size() < 200)
            endless += "X-Pad: 0123456789\r\n";
        ConnectRequest r = parseConnectRequest(endless, 100);
        QCOMPARE(int(r.state), int(ConnectRequest::Refused));
        QCOMPARE(r.status, 431);
        // A whole head over the limit too, and one just within it passes.
        r = parseConnectRequest(endless + "\r\n", 100);
        QCOMPARE(r.status, 431);
        const std::string small = "CONNECT a:1 HTTP/1.1\r\n\r\n";
        QCOMPARE(int(parseConnectRequest(small, small.size()).state), int(ConnectRequest::Complete));
        QCOMPARE(parseConnectRequest(small, small.size() - 1).status, 431);
        // A request line with no end.
        QCOMPARE(parseConnectRequest("CONNECT " + std::string(300, 'a'), 100).status, 431);
    }
};

QTEST_APPLESS_MAIN(TestConnectRequest)
#include "tst_connectrequest.moc"
