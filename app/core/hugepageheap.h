#pragma once

namespace rpcscope {

// Puts malloc's heap on transparent huge pages, where glibc and the kernel allow it, by starting the program
// again at once with the glibc tunable that does so (glibc.malloc.hugetlb=1: malloc advises the kernel to
// back the memory it takes from the system with huge pages). Call first thing in main(), before any thread
// starts; it returns when the program runs as it should, and otherwise does not return (the program starts
// over, same process, same arguments).
//
// Why: the timeline grows by small records (calls, attempts, the event log's encoded batches), each new page
// of them a page fault, and on virtual machines a fault can cost 10 us (measured on the CI machines: 10 us
// a 4 KiB page, 0.2 us a 4 KiB share of a huge page). Under sequential unary calls the model's thread took
// half a fault a call, half its CPU. Huge pages take that to none.
//
// Not done when the user set glibc.malloc.hugetlb themselves, when the kernel has transparent huge pages
// off, when something is preloaded (LD_PRELOAD: valgrind, heaptrack, another allocator), or with
// RPCSCOPE_HUGEPAGES=0. Whatever the program starts inherits GLIBC_TUNABLES as it was.
void restartWithHugePageHeap(char **argv);

} // namespace rpcscope
