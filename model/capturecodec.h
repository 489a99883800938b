#pragma once

// The protobuf encoding of one event batch (EventBatch in resources/proto/capture.proto), shared by the
// capture file and the event log, which keeps a live session in this compact form: a frame event takes
// about 20 bytes there instead of the 536 of a WireEvent.

#include "events.h"
#include "redaction.h"

#include <span>
#include <string>

namespace rpcscope {

namespace capture {
class Event;
}

// `redaction`, when given, masks the header values it names. Written directly, without building protobuf
// messages; the bytes are those protobuf writes for toMessage()'s messages.
std::string encodeEvents(std::span<const WireEvent> events, const Redaction *redaction = nullptr);
inline std::string encodeBatch(const EventBatch &batch, const Redaction *redaction = nullptr)
{
    return encodeEvents(batch, redaction);
}
// One event as the file's protobuf message, built with protobuf's own classes: what encodeEvents() must
// write, byte for byte (the tests hold it to that).
void toMessage(const WireEvent &e, const Redaction *redaction, capture::Event *p);
// False when the bytes are not a batch this version can read (`out` then holds the events before the bad
// one).
bool decodeBatch(const char *data, size_t len, EventBatch *out);
// One event of a batch record. False when a value cannot come from this build's writer (an enum or a width
// out of range); the reader checks each event in turn so that its message names the first problem.
bool decodeEvent(const capture::Event &p, WireEvent *e);

} // namespace rpcscope
