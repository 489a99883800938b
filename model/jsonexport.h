#pragma once

#include "timelinestore.h"

#include <QByteArray>
#include <QJsonObject>

namespace rpcscope {

// The rpcscope-json v1 document (schema in README.md). Times are ns from the store's origin.
QJsonObject timelineToJson(const TimelineStore &store, bool withFrames);
QByteArray timelineToJsonBytes(const TimelineStore &store, bool withFrames);

} // namespace rpcscope
