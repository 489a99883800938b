#pragma once

#include "relay.h"
#include "timelinemodel.h"

#include <QMetaObject>

#include <functional>

namespace rpcscope {

// Relay sinks run on the decoder thread; the model lives on its own (GUI or CLI main) thread and has no
// locks, so each immutable batch is handed over through the model's event queue. The relay must be stopped
// before the model is destroyed.
// `alsoOnModelThread`, when given, sees every batch on the model's thread just before the model does (the GUI
// feeds its header log with it).
inline Relay::Sink queuedSinkTo(TimelineModel *model,
                                std::function<void(const EventBatch &)> alsoOnModelThread = {})
{
    return [model, also = std::move(alsoOnModelThread)](EventBatch &&batch) {
        QMetaObject::invokeMethod(
            model,
            [model, also, b = std::move(batch)] {
                if (also)
                    also(b);
                model->appendBatch(b);
            },
            Qt::QueuedConnection);
    };
}

} // namespace rpcscope
