#pragma once

#include "faultrule.h"

#include <QString>
#include <vector>

namespace rpcscope {

// The JSON form of fault rules (`capture --faults FILE.json`): an array of rule objects, or an object whose
// "faults" member is one. Each rule object has the settings of the one-line syntax as members, its action
// among them; values are strings or numbers:
//   {"faults": [{"action": "blackhole", "nth": 2, "after": "500ms"},
//               {"action": "abort", "status": "UNAVAILABLE", "method": "/shop.Cart/*", "percent": 30}]}
// False, with one line naming the file, the rule and the problem, for anything malformed.
bool loadFaultsFile(const QString &path, std::vector<FaultRule> *out, std::string *error);
bool parseFaultsJson(const QByteArray &json, std::vector<FaultRule> *out, std::string *error);

} // namespace rpcscope
