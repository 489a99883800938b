#include "ingestmessage.h"

#include "ingest.pb.h"

#include <QStringDecoder>
#include <google/protobuf/io/coded_stream.h>

namespace rpcscope {

namespace {

namespace pb = google::protobuf;

bool validUtf8(const std::string &s)
{
    QStringDecoder utf8(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    [[maybe_unused]] const QString decoded = utf8(QByteArrayView(s.data(), qsizetype(s.size())));
    return !utf8.hasError();
}

std::string fieldName(int number)
{
    const pb::FieldDescriptor *f = ingest::Event::descriptor()->FindFieldByNumber(number);
    return f ? f->name() + " (field " + std::to_string(number) + ")"
             : "field " + std::to_string(number) + " (not in ingest.proto)";
}

// Walks the wire format the way protobuf's parser does, to say what it would only refuse: where the bytes
// stop being a message, or which string is not UTF-8. Empty when they parse.
std::string firstProblem(std::string_view bytes)
{
    const int size = int(bytes.size());
    pb::io::CodedInputStream in(reinterpret_cast<const std::uint8_t *>(bytes.data()), size);
    const std::string notEvent = "not a protobuf ingest.Event: ";
    while (in.CurrentPosition() < size) {
        const int at = in.CurrentPosition();
        const std::uint32_t tag = in.ReadTag();
        const int number = int(tag >> 3);
        if (tag == 0 || number == 0)
            return notEvent + "no valid field tag at byte " + std::to_string(at) + " of " +
                   std::to_string(size);
        auto cut = [&] {
            return notEvent + fieldName(number) + " starting at byte " + std::to_string(at) +
                   " is cut short or malformed (the message has " + std::to_string(size) + " bytes)";
        };
        std::uint64_t skipped64 = 0;
        std::uint32_t skipped32 = 0;
        switch (tag & 7) {
        case 0:
            if (!in.ReadVarint64(&skipped64)) return cut();
            break;
        case 1:
            if (!in.ReadLittleEndian64(&skipped64)) return cut();
            break;
        case 5:
            if (!in.ReadLittleEndian32(&skipped32)) return cut();
            break;
        case 2: {
            std::uint32_t len = 0;
            if (!in.ReadVarint32(&len) || len > std::uint32_t(size - in.CurrentPosition())) return cut();
            const pb::FieldDescriptor *f = ingest::Event::descriptor()->FindFieldByNumber(number);
            if (f && f->type() == pb::FieldDescriptor::TYPE_STRING) {
                std::string value;
                in.ReadString(&value, int(len));
                if (!validUtf8(value))
                    return f->name() + " is not valid UTF-8 (a string field of ingest.proto)";
            } else {
                in.Skip(int(len));
            }
            break;
        }
        default: // groups (3, 4), long deprecated, and the undefined wire types 6 and 7
            return notEvent + fieldName(number) + " at byte " + std::to_string(at) + " has wire type " +
                   std::to_string(tag & 7) + ", which ingest.Event does not use";
        }
    }
    return {};
}

} // namespace

bool parseEventMessage(std::string_view bytes, ReportedEvent *out, std::string *error)
{
    if (std::string problem = firstProblem(bytes); !problem.empty())
        return *error = std::move(problem), false;
    ingest::Event in;
    if (!in.ParseFromArray(bytes.data(), int(bytes.size()))) // not expected once the walk found nothing
        return *error = "not a protobuf ingest.Event", false;
    *out = ReportedEvent{in.time_unix_nanos(), in.kind(),        in.detail(), in.label(),
                         in.call_id(),         in.traceparent(), in.source()};
    return true;
}

} // namespace rpcscope
