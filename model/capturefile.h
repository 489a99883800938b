#pragma once

// The .rpcscope capture file (layout in resources/proto/capture.proto): a versioned header, then
// length-delimited protobuf records, each with a CRC-32, ending in a footer with the totals.
//
// One job per file: capturecodec (events <-> protobuf), capturerecords (the layout and its framing),
// capturereader, capturewriter (a whole capture at once), capturestream (record by record while capturing).
// This header includes the reader, the writer and the stream, and joins a capture to the timeline store.

#include "capturedata.h"
#include "capturereader.h"
#include "capturerecords.h"
#include "capturestream.h"
#include "capturewriter.h"
#include "eventlog.h"
#include "redaction.h"
#include "timelinestore.h"

namespace rpcscope {

// The store's origins and frame setting, for the header of a file saved from a live session.
CaptureInfo captureInfoOf(const TimelineStore &store);
// The capture of a live session, decoded: the store's origin and frame setting with the logged batches.
CaptureData captureFromLog(const TimelineStore &store, const EventLog &log);
// Rebuilds the timeline from a capture into `store`, which is cleared first.
void replayCapture(const CaptureData &data, TimelineStore &store);

} // namespace rpcscope
