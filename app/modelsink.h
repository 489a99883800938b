#pragma once

#include "relay.h"
#include "timelinemodel.h"

#include <QMetaObject>

namespace rpcscope {

// Relay sinks run on the decoder thread; the model lives on its own (GUI or CLI main) thread and has no
// locks, so each immutable batch is handed over through the model's event queue. The relay must be stopped
// before the model is destroyed.
inline Relay::Sink queuedSinkTo(TimelineModel *model)
{
    return [model](EventBatch &&batch) {
        QMetaObject::invokeMethod(
            model, [model, b = std::move(batch)] { model->appendBatch(b); }, Qt::QueuedConnection);
    };
}

} // namespace rpcscope
