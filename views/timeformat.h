#pragma once

#include <QString>
#include <QtGlobal>
#include <string>

namespace rpcscope {

// A duration as people read it: "4.940 s", "12.5 ms", "850 µs"; a sign is kept.
QString formatDuration(qint64 ns);
// A ruler tick: the unit follows the step, with only as many decimals as the step needs.
QString formatTick(qint64 ns, qint64 stepNs);
// The hop a call went through, by its label: "hop front", and as it is for a label that says "hop" already
// (the capture dialog's own "hop 1", a merged capture's "live1: hop 1"), not "hop hop 1".
QString hopText(const std::string &label);
// A count and its noun, singular or plural: "1 message", "2 messages", "0 problems".
QString counted(qint64 n, const char *one, const char *many = nullptr);

} // namespace rpcscope
