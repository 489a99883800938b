#pragma once

#include "capturefile.h"
#include "captureio.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace rpcscope {

// Says what is wrong with the command line and where the usage is; returns the exit code 2.
int usageError(const std::string &message);

// "--flag value" options; flags listed in `bare` take no value. Anything else is an error.
bool parseOptions(const std::vector<std::string> &args, const std::set<std::string> &valued,
                  const std::set<std::string> &bare, std::map<std::string, std::string> *out,
                  std::string *error);

// "--redact NAME" may repeat: taken out of args before the other options are parsed.
Redaction takeRedaction(std::vector<std::string> *args, std::string *error);

// --to, or else the name of --out; empty error when it is known.
FileFormat outputFormat(const std::map<std::string, std::string> &opts, std::string *error);

// --port (a pcap's HTTP/2 server port) into `load`, when given; false with the reason when it is no TCP port.
bool serverPortOption(const std::map<std::string, std::string> &opts, LoadOptions *load, std::string *error);

// Every file named by --json, --out, --png or --svg can be written: checked before any work is done, so that
// a long capture is never made only to be lost at the end.
bool outputsWritable(const std::map<std::string, std::string> &opts, std::string *error);

} // namespace rpcscope
