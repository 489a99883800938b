#pragma once

#include "tlsintercept.h"

#include <map>
#include <string>

namespace rpcscope {

// --tls-intercept and the options that go with it (--target-ca, --target-insecure, --target-cert,
// --target-key, --keylog) into *out; false with the reason when they do not fit together. Warns on stderr
// about --target-insecure.
bool tlsInterceptOptions(const std::map<std::string, std::string> &opts, TlsInterceptOptions *out,
                         std::string *error);

} // namespace rpcscope
