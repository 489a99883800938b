// MessageDecoder: .proto files through protobuf's Importer (import paths, well-known types, errors with
// file:line:column), descriptors as server reflection sends them, raw fields of unknown messages, cut and
// garbage payloads.

#include "lab.pb.h"
#include "messagedecoder.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <google/protobuf/descriptor.pb.h>
#include <random>
#include <zlib.h>

using namespace rpcscope;

namespace {

const std::string kProtoDir = RPCSCOPE_PROTO_DIR;
const std::string kCall = "/rpcscope.lab.Lab/Call";

std::string varint(std::uint64_t v)
{
    std::string out;
    while (v >= 0x80) {
        out += char((v & 0x7f) | 0x80);
        v >>= 7;
    }
    return out + char(v);
}

std::string tag(std::uint32_t field, int wireType)
{
    return varint((std::uint64_t(field) << 3) | std::uint32_t(wireType));
}

std::string lenField(std::uint32_t field, const std::string &bytes)
{
    return tag(field, WireLen) + varint(bytes.size()) + bytes;
}

QJsonObject json(const DecodedMessage &m)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(m.json), &error);
    if (error.error != QJsonParseError::NoError)
        qWarning() << "not JSON:" << error.errorString() << QString::fromStdString(m.json);
    return doc.object();
}

bool writeFile(const QString &path, const QByteArray &content)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(content) == content.size();
}

rpcscope::lab::CallRequest sampleRequest()
{
    rpcscope::lab::CallRequest r;
    r.set_call_id("c-7");
    r.set_fail_first_n(2);
    r.set_fail_code(14);
    r.set_fail_message("down");
    r.set_pushback_ms(300);
    r.set_payload(std::string("\x01\x02", 2));
    r.set_response_size(10);
    return r;
}

// The depth of the deepest nested field.
int depth(const std::vector<RawField> &fields)
{
    int d = 0;
    for (const RawField &f : fields)
        d = std::max(d, 1 + depth(f.children));
    return d;
}

} // namespace

class TestMessageDecoder : public QObject
{
    Q_OBJECT
private slots:
    void importsTheProjectsProtos()
    {
        MessageDecoder d;
        std::vector<std::string> errors;
        QVERIFY(d.loadProtoFiles({"lab.proto"}, {kProtoDir}, &errors));
        QVERIFY(errors.empty());
        QCOMPARE(d.fileCount(), size_t(1));
        QCOMPARE(d.serviceNames(), std::vector<std::string>{"rpcscope.lab.Lab"});
        const auto types = d.methodTypes(kCall);
        QVERIFY(types);
        QCOMPARE(types->first, std::string("rpcscope.lab.CallRequest"));
        QCOMPARE(types->second, std::string("rpcscope.lab.CallReply"));
        QVERIFY(!d.methodTypes("/rpcscope.lab.Lab/Nope"));
        QVERIFY(!d.methodTypes("garbage"));

        const DecodedMessage m = d.decode(kCall, true, sampleRequest().SerializeAsString());
        QVERIFY(m.typed);
        QCOMPARE(m.typeName, std::string("rpcscope.lab.CallRequest"));
        QVERIFY2(m.note.empty(), m.note.c_str());
        const QJsonObject o = json(m);
        QCOMPARE(o.value("call_id").toString(), QStringLiteral("c-7"));
        QCOMPARE(o.value("fail_first_n").toInt(), 2);
        QCOMPARE(o.value("fail_code").toInt(), 14);
        QCOMPARE(o.value("fail_message").toString(), QStringLiteral("down"));
        QCOMPARE(o.value("pushback_ms").toString(), QStringLiteral("300")); // int64 is a string in proto JSON
        QCOMPARE(o.value("payload").toString(), QStringLiteral("AQI="));    // bytes are base64
        QCOMPARE(o.value("response_size").toInt(), 10);
        QCOMPARE(o.size(), 7);
        // Two-space indentation, fields in their declared order.
        QVERIFY2(m.json.rfind("{\n  \"call_id\": \"c-7\",\n  \"fail_first_n\": 2,", 0) == 0, m.json.c_str());

        rpcscope::lab::CallReply reply;
        reply.set_call_id("c-7");
        reply.set_arrival(3);
        const DecodedMessage r = d.decode(kCall, false, reply.SerializeAsString());
        QVERIFY(r.typed);
        QCOMPARE(r.typeName, std::string("rpcscope.lab.CallReply"));
        QCOMPARE(json(r).value("arrival").toInt(), 3);

        // A file given by its path on disk, with no import path: its own directory is searched.
        MessageDecoder byPath;
        QVERIFY(byPath.loadProtoFiles({kProtoDir + "/chain.proto"}, {}, &errors));
        QCOMPARE(byPath.fileNames(), std::vector<std::string>{"chain.proto"});
    }

    void importPathsAndWellKnownTypes()
    {
        QTemporaryDir tmp;
        const QString api = tmp.filePath("api"), common = tmp.filePath("common");
        QVERIFY(writeFile(common + "/money/v1/money.proto",
                          "syntax = \"proto3\";\npackage money.v1;\n"
                          "message Money { int64 units = 1; string currency = 2; }\n"));
        QVERIFY(writeFile(api + "/shop/v1/order.proto",
                          "syntax = \"proto3\";\npackage shop.v1;\n"
                          "import \"money/v1/money.proto\";\n"
                          "import \"google/protobuf/timestamp.proto\";\n"
                          "message Order {\n"
                          "  string id = 1;\n"
                          "  money.v1.Money total = 2;\n"
                          "  google.protobuf.Timestamp created = 3;\n"
                          "  repeated string items = 4;\n"
                          "}\n"
                          "service Orders { rpc Get(Order) returns (Order); }\n"));
        MessageDecoder d;
        std::vector<std::string> errors;
        // Named relative to its import path, as protoc takes it; the import is found in the second path.
        QVERIFY2(
            d.loadProtoFiles({"shop/v1/order.proto"}, {api.toStdString(), common.toStdString()}, &errors),
            errors.empty() ? "" : errors.front().c_str());
        QCOMPARE(d.fileNames(), (std::vector<std::string>{"money/v1/money.proto", "shop/v1/order.proto"}));
        QCOMPARE(d.serviceNames(), std::vector<std::string>{"shop.v1.Orders"});

        const std::string money = tag(1, WireVarint) + varint(42) + lenField(2, "EUR");
        const std::string created =
            tag(1, WireVarint) + varint(1700000000) + tag(2, WireVarint) + varint(500000000);
        const std::string order = lenField(1, "o-1") + lenField(2, money) + lenField(3, created) +
                                  lenField(4, "apple") + lenField(4, "pear");
        const DecodedMessage m = d.decode("/shop.v1.Orders/Get", false, order);
        QVERIFY2(m.typed, m.note.c_str());
        const QJsonObject o = json(m);
        QCOMPARE(o.value("id").toString(), QStringLiteral("o-1"));
        QCOMPARE(o.value("total").toObject().value("units").toString(), QStringLiteral("42"));
        QCOMPARE(o.value("total").toObject().value("currency").toString(), QStringLiteral("EUR"));
        QCOMPARE(o.value("created").toString(), QStringLiteral("2023-11-14T22:13:20.500Z"));
        QCOMPARE(o.value("items").toArray().size(), 2);
        QCOMPARE(o.value("items").toArray().at(1).toString(), QStringLiteral("pear"));

        // Without the second import path the import is not found: named, with the importing line.
        MessageDecoder missing;
        errors.clear();
        QVERIFY(!missing.loadProtoFiles({"shop/v1/order.proto"}, {api.toStdString()}, &errors));
        QVERIFY(!errors.empty());
        const QString all = QString::fromStdString(errors.front());
        QVERIFY2(all.contains("money/v1/money.proto") && all.contains("File not found"), qPrintable(all));
        QVERIFY2(std::any_of(errors.begin(), errors.end(),
                             [&](const std::string &e) {
                                 return QString::fromStdString(e).startsWith(api + "/shop/v1/order.proto:3:");
                             }),
                 qPrintable(all));
        QCOMPARE(missing.fileCount(), size_t(0));
    }

    void syntaxErrorsNameFileLineAndColumn()
    {
        QTemporaryDir tmp;
        const QString bad = tmp.filePath("bad.proto");
        QVERIFY(writeFile(bad, "syntax = \"proto3\";\n"
                               "package bad;\n"
                               "message A {\n"
                               "  int32 x = 1\n"
                               "  string y = 2;\n"
                               "}\n"));
        MessageDecoder d;
        std::vector<std::string> errors;
        QVERIFY(!d.loadProtoFiles({bad.toStdString()}, {}, &errors));
        QVERIFY(!errors.empty());
        // The missing ';' is found at the next token: line 5, column 3.
        QCOMPARE(QString::fromStdString(errors.front()), bad + ":5:3: Expected \";\".");
        QCOMPARE(d.fileCount(), size_t(0));

        // A type that does not exist: reported at its use.
        const QString undefined = tmp.filePath("undefined.proto");
        QVERIFY(writeFile(undefined, "syntax = \"proto3\";\n"
                                     "package u;\n"
                                     "message A {\n"
                                     "  Nowhere x = 1;\n"
                                     "}\n"));
        errors.clear();
        QVERIFY(!d.loadProtoFiles({undefined.toStdString()}, {}, &errors));
        QCOMPARE(errors.size(), size_t(1));
        QVERIFY2(
            QString::fromStdString(errors.front()).startsWith(undefined + ":4:3: \"Nowhere\" is not defined"),
            errors.front().c_str());

        // A file that is not there, and an import path that is not a directory.
        errors.clear();
        QVERIFY(!d.loadProtoFiles({"absent.proto"}, {tmp.filePath("no-such-dir").toStdString()}, &errors));
        QCOMPARE(errors.size(), size_t(2));
        QVERIFY2(QString::fromStdString(errors[0]).endsWith("no-such-dir: import path is not a directory"),
                 errors[0].c_str());
        QVERIFY2(QString::fromStdString(errors[1]).startsWith("absent.proto: File not found"),
                 errors[1].c_str());
    }

    void unknownMessagesShowRawFields()
    {
        MessageDecoder d; // no schemas
        double dbl = 2.5;
        std::string fixed64(8, '\0');
        std::memcpy(fixed64.data(), &dbl, 8);
        const std::string bytes = tag(1, WireVarint) + varint(150) +                         // 1: varint 150
                                  lenField(2, "testing") +                                   // 2: a string
                                  tag(3, WireFixed32) + std::string("\x00\x00\x80\x3f", 4) + // 3: float 1
                                  tag(4, WireFixed64) + fixed64 +                            // 4: double 2.5
                                  lenField(5, tag(1, WireVarint) + varint(1)) +    // 5: a message {1: 1}
                                  tag(6, WireVarint) + varint(std::uint64_t(-1)) + // 6: int64 -1
                                  lenField(7, std::string("\x00\x01\x02", 3)) +    // 7: bytes
                                  tag(8, WireStartGroup) + tag(1, WireVarint) + varint(9) +
                                  tag(8, WireEndGroup);
        const DecodedMessage m = d.decode("/x.Y/Z", true, bytes);
        QVERIFY(!m.typed);
        QCOMPARE(m.note, std::string("no schema for /x.Y/Z: raw protobuf fields"));
        QCOMPARE(m.raw.consumed, bytes.size());
        QVERIFY2(m.raw.stopped.empty(), m.raw.stopped.c_str());
        const auto &f = m.raw.fields;
        QCOMPARE(f.size(), size_t(8));
        for (size_t i = 0; i < f.size(); ++i)
            QCOMPARE(f[i].number, std::uint32_t(i + 1));
        QCOMPARE(int(f[0].wireType), int(WireVarint));
        QCOMPARE(f[0].value, std::uint64_t(150));
        QCOMPARE(rawFieldValue(f[0]), std::string("150"));
        QCOMPARE(int(f[1].wireType), int(WireLen));
        QVERIFY(f[1].text);
        QCOMPARE(rawFieldValue(f[1]), std::string("\"testing\""));
        QCOMPARE(int(f[2].wireType), int(WireFixed32));
        QCOMPARE(f[2].value, std::uint64_t(0x3f800000));
        QCOMPARE(rawFieldValue(f[2]), std::string("1065353216 (float 1, 0x3f800000)"));
        QCOMPARE(int(f[3].wireType), int(WireFixed64));
        QVERIFY2(rawFieldValue(f[3]).find("(double 2.5,") != std::string::npos, rawFieldValue(f[3]).c_str());
        QVERIFY(f[4].nested);
        QCOMPARE(f[4].children.size(), size_t(1));
        QCOMPARE(f[4].children[0].number, std::uint32_t(1));
        QCOMPARE(f[4].children[0].value, std::uint64_t(1));
        QCOMPARE(rawFieldValue(f[4]), std::string("message, 2 B"));
        QCOMPARE(rawFieldValue(f[5]), std::string("18446744073709551615 (int64 -1)"));
        QVERIFY(!f[6].nested && !f[6].text);
        QCOMPARE(rawFieldValue(f[6]), std::string("3 B: 00 01 02"));
        QCOMPARE(int(f[7].wireType), int(WireStartGroup));
        QCOMPARE(f[7].children.size(), size_t(1));
        QCOMPARE(f[7].children[0].value, std::uint64_t(9));
        QCOMPARE(f[3].offset, size_t(3 + 9 + 5));

        const std::string listing = formatRawFields(f);
        QVERIFY2(listing.rfind("1 (varint): 150\n2 (len): \"testing\"\n", 0) == 0, listing.c_str());
        QVERIFY2(listing.find("5 (len): message, 2 B\n  1 (varint): 1\n") != std::string::npos,
                 listing.c_str());
        const auto hex = hexDumpLines(bytes);
        QCOMPARE(hex.front(),
                 std::string("0000  08 96 01 12 07 74 65 73  74 69 6e 67 1d 00 00 80  |.....testing....|"));
        QCOMPARE(hexString(std::string("\x0a\xff", 2)), std::string("0aff"));

        // A known method with a type missing from the pool cannot happen; an empty path says so.
        QCOMPARE(d.decode({}, true, bytes).note,
                 std::string("the stream's method is not known: raw protobuf fields"));
    }

    void cutPayloadsDecodeAsFarAsTheyGo()
    {
        MessageDecoder d;
        QVERIFY(d.loadProtoFiles({"lab.proto"}, {kProtoDir}, nullptr));
        rpcscope::lab::CallRequest r;
        r.set_call_id("cut-1");
        r.set_fail_code(14);
        r.set_payload(std::string(1000, 'x'));
        r.set_response_size(7); // after the payload: lost with it
        const std::string full = r.SerializeAsString();
        const std::string cut = full.substr(0, 100);
        const DecodedMessage m = d.decode(kCall, true, cut, true);
        QVERIFY2(m.typed, m.note.c_str());
        QVERIFY(m.partial);
        const QJsonObject o = json(m);
        QCOMPARE(o.value("call_id").toString(), QStringLiteral("cut-1"));
        QCOMPARE(o.value("fail_code").toInt(), 14);
        QVERIFY(!o.contains("payload"));
        QVERIFY(!o.contains("response_size"));
        // call_id (2 + 5 bytes) and fail_code (2 bytes) are complete: 9 of the 100 bytes.
        QCOMPARE(
            m.note,
            std::string("cut at the capture's keep limit: the JSON holds the complete fields in the first "
                        "9 of the 100 bytes kept"));
        // The raw fields show the cut payload as far as it goes.
        QCOMPARE(m.raw.fields.size(), size_t(3));
        QVERIFY(m.raw.fields[2].cut);
        QCOMPARE(m.raw.fields[2].number, std::uint32_t(8));
        QCOMPARE(m.raw.fields[2].bytes, std::string(100 - 9 - 3, 'x')); // after its tag and 2-byte length
        QCOMPARE(m.raw.stopped, std::string("field 8 claims 1000 bytes, 88 are there"));

        // Cut inside a tag, and without a schema.
        MessageDecoder none;
        const DecodedMessage raw = none.decode(kCall, true, full.substr(0, 9) + "\x80", true);
        QCOMPARE(raw.raw.fields.size(), size_t(2));
        QCOMPARE(raw.raw.fields[0].bytes, std::string("cut-1"));
        QCOMPARE(raw.raw.fields[1].value, std::uint64_t(14));
        QCOMPARE(raw.raw.consumed, size_t(9));
        QCOMPARE(raw.raw.stopped, std::string("the bytes end inside a field's tag at byte 9"));
        QVERIFY(QString::fromStdString(raw.note).endsWith("cut at the capture's keep limit"));

        // Not cut but wrong: raw fields instead of JSON, saying why.
        const DecodedMessage wrong = d.decode(kCall, true, std::string("\x0a\x05\x61", 3));
        QVERIFY(!wrong.typed);
        QCOMPARE(
            wrong.note,
            std::string(
                "does not parse as rpcscope.lab.CallRequest (a different schema?): raw protobuf fields"));

        // Fields the schema does not know are said to be left out.
        const DecodedMessage extra =
            d.decode(kCall, true, r.SerializeAsString() + tag(99, WireVarint) + varint(5));
        QVERIFY(extra.typed);
        QCOMPARE(extra.note,
                 std::string("1 field(s) not in the schema are left out of the JSON (see the raw fields)"));
    }

    void compressedMessagesAreInflated()
    {
        MessageDecoder d;
        QVERIFY(d.loadProtoFiles({"lab.proto"}, {kProtoDir}, nullptr));
        const std::string plain = sampleRequest().SerializeAsString();
        // gzip, as grpc-encoding: gzip sends it.
        z_stream z{};
        QCOMPARE(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
        std::string gz(plain.size() + 64, '\0');
        z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(plain.data()));
        z.avail_in = uInt(plain.size());
        z.next_out = reinterpret_cast<Bytef *>(gz.data());
        z.avail_out = uInt(gz.size());
        QCOMPARE(deflate(&z, Z_FINISH), Z_STREAM_END);
        gz.resize(z.total_out);
        deflateEnd(&z);
        const DecodedMessage m = d.decode(kCall, true, gz, false, true, "gzip");
        QVERIFY2(m.typed, m.note.c_str());
        QCOMPARE(json(m).value("call_id").toString(), QStringLiteral("c-7"));
        QCOMPARE(m.bytes, plain);
        QCOMPARE(m.note, "inflated from " + std::to_string(gz.size()) + " B of gzip");

        const DecodedMessage snappy = d.decode(kCall, true, gz, false, true, "snappy");
        QVERIFY(!snappy.typed);
        QCOMPARE(snappy.note,
                 std::string("compressed (snappy), which rpcscope cannot inflate: the bytes as captured"));
        const DecodedMessage notGzip = d.decode(kCall, true, plain, false, true, "gzip");
        QVERIFY(!notGzip.typed);
    }

    void descriptorsAsReflectionSendsThem()
    {
        // What a reflection server answers: serialized FileDescriptorProtos.
        google::protobuf::FileDescriptorProto lab;
        rpcscope::lab::CallRequest::descriptor()->file()->CopyTo(&lab);
        MessageDecoder d;
        std::vector<std::string> errors;
        QVERIFY(d.addFileDescriptors({lab.SerializeAsString()}, &errors));
        QCOMPARE(d.serviceNames(), std::vector<std::string>{"rpcscope.lab.Lab"});
        const DecodedMessage m = d.decode(kCall, true, sampleRequest().SerializeAsString());
        QVERIFY(m.typed);
        QCOMPARE(json(m).value("call_id").toString(), QStringLiteral("c-7"));
        const std::uint64_t generation = d.generation();

        // A file whose import was not sent is left out, saying which import; garbage does not parse.
        google::protobuf::FileDescriptorProto orphan;
        orphan.set_name("orphan.proto");
        orphan.set_package("o");
        orphan.add_dependency("elsewhere.proto");
        errors.clear();
        QVERIFY(!d.addFileDescriptors({orphan.SerializeAsString(), std::string("\xff\xff\xff", 3)}, &errors));
        QCOMPARE(errors.size(), size_t(2));
        QCOMPARE(errors[0], std::string("file descriptor 2 of 2 does not parse"));
        QCOMPARE(errors[1], std::string("orphan.proto: imports elsewhere.proto, which is not loaded"));
        QCOMPARE(d.fileCount(), size_t(1));
        QVERIFY(d.generation() > generation);
        QVERIFY(d.decode(kCall, true, sampleRequest().SerializeAsString()).typed);

        // The same name again replaces the file; a clashing symbol in another file is refused.
        google::protobuf::FileDescriptorProto clash = lab;
        clash.set_name("copy-of-lab.proto");
        errors.clear();
        QVERIFY(!d.addFileDescriptors({clash.SerializeAsString()}, &errors));
        QVERIFY2(!errors.empty() && errors.front().find("already defined") != std::string::npos,
                 errors.empty() ? "" : errors.front().c_str());
        QCOMPARE(d.fileNames(), std::vector<std::string>{"lab.proto"});
        d.clear();
        QCOMPARE(d.fileCount(), size_t(0));
        QVERIFY(!d.decode(kCall, true, sampleRequest().SerializeAsString()).typed);
    }

    void garbageNeverCrashes()
    {
        MessageDecoder d;
        QVERIFY(d.loadProtoFiles({"lab.proto"}, {kProtoDir}, nullptr));
        std::mt19937 rng(1);
        const std::string valid = sampleRequest().SerializeAsString();
        size_t typed = 0;
        for (int i = 0; i < 20000; ++i) {
            std::string bytes;
            if (i % 2) {
                bytes.resize(rng() % 200);
                for (char &c : bytes)
                    c = char(rng());
            } else {
                bytes = valid; // a valid message with a few bytes changed, maybe cut
                for (int k = 0; k < 3; ++k)
                    bytes[rng() % bytes.size()] = char(rng());
                bytes.resize(rng() % (bytes.size() + 1));
            }
            const bool cut = i % 3 == 0;
            const DecodedMessage m = d.decode(i % 4 ? kCall : "/unknown.S/M", i % 5 != 0, bytes, cut);
            QVERIFY(m.raw.consumed <= bytes.size());
            if (m.typed) {
                ++typed;
                QVERIFY(!json(m).isEmpty() || m.json == "{}");
            }
            const DecodedMessage inflated = d.decode(kCall, true, bytes, cut, true, "gzip");
            QVERIFY(inflated.bytes.size() <= (size_t(4) << 20));
        }
        QVERIFY(typed > 1000); // the mutated messages mostly still parse

        // Deep nesting: a message in a message ... 5000 deep stays within the walk's depth.
        std::string deep = tag(1, WireVarint) + varint(1);
        for (int i = 0; i < 5000; ++i)
            deep = lenField(1, deep);
        const DecodedMessage m = d.decode("/unknown.S/M", true, deep);
        QCOMPARE(m.raw.fields.size(), size_t(1));
        QVERIFY(depth(m.raw.fields) <= 12);
        QVERIFY(!d.decode(kCall, true, deep).typed); // call_id is a string: these bytes are not UTF-8

        // Groups opened and never closed.
        std::string groups;
        for (int i = 0; i < 100000; ++i)
            groups += tag(1, WireStartGroup);
        const RawFields g = scanRawFields(groups);
        QCOMPARE(g.stopped, std::string("groups nested deeper than 12"));

        // Many fields: listed up to the budget.
        std::string many;
        for (int i = 0; i < 60000; ++i)
            many += tag(1, WireVarint) + varint(1);
        const RawFields f = scanRawFields(many);
        QVERIFY(f.capped);
        QCOMPARE(f.fields.size(), size_t(5000));
        QCOMPARE(f.stopped, std::string("more than 5000 fields: the rest are not listed"));

        // Wire types 6 and 7 and field number 0 do not exist.
        QCOMPARE(scanRawFields(std::string("\x0e", 1)).stopped,
                 std::string("wire type 6 at byte 0 does not exist"));
        QCOMPARE(scanRawFields(std::string("\x08\x01\x00", 3)).stopped,
                 std::string("field number 0 at byte 2 is not valid"));
        QCOMPARE(scanRawFields(std::string("\x08\x01\x00", 3)).consumed, size_t(2));
        QCOMPARE(scanRawFields(std::string(11, '\xff')).stopped, std::string("malformed tag at byte 0"));
    }
};

QTEST_GUILESS_MAIN(TestMessageDecoder)
#include "tst_messagedecoder.moc"
