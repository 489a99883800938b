#pragma once

#include <QLoggingCategory>

namespace rpcscope {

// What protobuf and gRPC log on their own (a string that is not UTF-8, a port already in use, ...).
// rpcscope says every such problem in its own one-line messages, so these lines go to this category, off
// unless asked for: QT_LOGGING_RULES="rpcscope.library.debug=true".
Q_DECLARE_LOGGING_CATEGORY(lcLibrary)

// Routes both libraries' log lines to lcLibrary instead of stderr. Once, early in main(); a fatal line still
// reaches stderr, since the process is about to end.
void routeLibraryLogs();

} // namespace rpcscope
