#include "librarylogs.h"

#include <cstdio>
#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>

namespace rpcscope {

Q_LOGGING_CATEGORY(lcLibrary, "rpcscope.library", QtInfoMsg)

namespace {

void protobufLine(google::protobuf::LogLevel level, const char *file, int line, const std::string &message)
{
    if (level == google::protobuf::LOGLEVEL_FATAL)
        std::fprintf(stderr, "[libprotobuf FATAL %s:%d] %s\n", file, line, message.c_str());
    else
        qCDebug(lcLibrary, "protobuf %s:%d: %s", file, line, message.c_str());
}

void grpcLine(gpr_log_func_args *args)
{
    qCDebug(lcLibrary, "grpc %s %s:%d: %s", gpr_log_severity_string(args->severity), args->file, args->line,
            args->message);
}

} // namespace

void routeLibraryLogs()
{
    google::protobuf::SetLogHandler(protobufLine);
    gpr_set_log_function(grpcLine);
}

} // namespace rpcscope
