#pragma once

#include <string>
#include <vector>

namespace rpcscope {

// The rpcscope-cli commands, one file each. Each returns the process's exit code.

// rpcscope-cli list: the lab scenarios and their parameters.
int cmdList();
// rpcscope-cli run NAME [--set KEY=VALUE ...] [outputs]: 1 when the scenario's expected outcome did not hold.
int cmdRun(const std::vector<std::string> &args);
// rpcscope-cli capture --target HOST:PORT --out FILE [...]: relays and records until the duration ends or a
// signal.
int cmdCapture(std::vector<std::string> args);
// rpcscope-cli convert IN OUT [--to FORMAT] [...]
int cmdConvert(std::vector<std::string> args);
// rpcscope-cli merge IN... --out OUT [--to FORMAT] [--offset FILE=OFFSET ...] [--label FILE=NAME ...]
//                   [--png FILE] [--svg FILE] [--frames] [--no-redact] [--redact NAME ...] [--port PORT]
// Returns the exit code: 0, 1 when OUT cannot be written, 2 for bad arguments or an input that cannot be
// read.
int cmdMerge(const std::vector<std::string> &args);
// rpcscope-cli decode IN [--proto FILE ...] [--proto-path DIR ...] [--reflect HOST:PORT ...] [--out FILE]
//                        [--port PORT]
// rpcscope-cli decode --method /PKG.SERVICE/METHOD [--response] --hex HEX [schemas as above]
// Writes the decoded messages as one JSON document. Returns the exit code: 0; 1 when a --reflect server
// cannot be asked or OUT cannot be written; 2 for bad arguments, .proto files that do not load or an input
// that cannot be read.
int cmdDecode(const std::vector<std::string> &args);
// rpcscope-cli stats FILE [--json]: the statistics of one capture (statscompare.h's table, one side).
// rpcscope-cli compare A B [--json] [--label-a X] [--label-b Y] | compare --lab NAME|SCENARIO,SCENARIO
// [--json] Return the exit code: 0; 1 when the lab cannot run; 2 for bad arguments or a file that cannot be
// read or holds no calls.
int cmdStats(const std::vector<std::string> &args);
int cmdCompare(const std::vector<std::string> &args);
// rpcscope-cli check CAPTURE --service-config FILE [--json]: every call judged against the client's retry
// policy. Returns 0 when all conform, 1 when any does not, 2 for bad arguments, an unreadable capture or a
// bad service config.
int cmdCheck(const std::vector<std::string> &args);
// rpcscope-cli ca [--regenerate]: prints the rpcscope CA's certificate path and PEM, making it on first use
// (or anew). Returns 0, 1 when it can be neither read nor made, 2 for bad arguments.
int cmdCa(const std::vector<std::string> &args);

} // namespace rpcscope
