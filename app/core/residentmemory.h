#pragma once

#include <cstddef>

namespace rpcscope {

class TimelineModel;

// The process's resident memory (RSS), from /proc; 0 where it cannot be read.
size_t residentBytes();

// Counts against `model`'s budget the resident memory the process holds beyond what the model counts of
// itself (its store, its log and what others hold for it) and beyond `baselineBytes`: free memory the
// allocator keeps after a churn of records instead of giving it back, pages touched for the first time, what
// no one counts. It is the truth the budget is about: without it, 200,000 streams reset by a peer grew a
// `--keep 16` capture 18.8 MB, of which it reported 11.1 (the allocator held the rest free), and the window
// kept 512 MB of timeline in a 640 MB process.
//
// Refreshed at most every 200 ms (reading it is a syscall, the model's own count a walk), and at most half
// the budget: should the allocator hold on to freed memory, retention must not chase it down to an empty
// timeline. Call on the model's thread, once.
void countResidentMemory(TimelineModel *model, size_t baselineBytes);

} // namespace rpcscope
