// libFuzzer target for the fault-rule parser (capture/faultrule.cpp): `capture --fault RULE` text from the
// command line, and the method globs rules carry.
//
// Besides what ASan/UBSan/LSan catch, it aborts when one of these does not hold:
//  - a refused rule says why in one non-empty line;
//  - an accepted rule's own text (what notes and the hit report quote) parses again, to the same text and
//    action;
//  - a glob the checker accepts matches without running away: the input's first line as a glob against the
//    rest, whatever they are.
//
// Builds with clang and -fsanitize=fuzzer (scripts/fuzz.sh) and with the normal compiler plus
// replay_main.cpp, which runs the committed corpus as a ctest.

#include "faultrule.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace rpcscope;

namespace {
[[noreturn]] void violation(const std::string &what, std::string_view input)
{
    std::fprintf(stderr, "fuzz_faultrule: %s (input: '%.*s')\n", what.c_str(), int(input.size()),
                 input.data());
    std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, size_t size)
{
    const std::string_view input(reinterpret_cast<const char *>(data), size);
    FaultRule rule;
    std::string error;
    if (!parseFaultRule(input, &rule, &error)) {
        if (error.empty()) violation("refused without a reason", input);
        if (error.find('\n') != std::string::npos || error.find('\r') != std::string::npos)
            violation("a refusal of more than one line: " + error, input);
    } else {
        FaultRule again;
        std::string why;
        if (!parseFaultRule(rule.text, &again, &why))
            violation("its own text '" + rule.text + "' is refused: " + why, input);
        if (again.text != rule.text || again.action != rule.action)
            violation("its own text '" + rule.text + "' reads back as '" + again.text + "'", input);
        if (!rule.method.empty() && !checkFaultGlob(rule.method, &why))
            violation("an accepted glob fails its check", input);
    }
    const size_t line = input.find('\n');
    const std::string_view glob = input.substr(0, line);
    const std::string_view text =
        line == std::string_view::npos ? std::string_view() : input.substr(line + 1);
    std::string globError;
    if (checkFaultGlob(glob, &globError))
        (void)faultGlobMatch(glob, text);
    else if (globError.empty())
        violation("a glob refused without a reason", input);
    return 0;
}
