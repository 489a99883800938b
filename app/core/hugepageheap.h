#pragma once

namespace rpcscope {

// With RPCSCOPE_HUGEPAGES=1, puts malloc's heap on transparent huge pages, where glibc and the kernel allow
// it, by starting the program again at once with the glibc tunable that does so (glibc.malloc.hugetlb=1:
// malloc advises the kernel to back the memory it takes from the system with huge pages). Call first thing in
// main(), before any thread starts; it returns when the program runs as it should, and otherwise does not
// return (the program starts over, same process, same arguments).
//
// Off by default. The timeline grows by small records, each new 4 KiB page of them a page fault, and huge
// pages take those faults away; but a huge page is 2 MiB zeroed in one fault. On the virtual machines this
// was measured on, a fresh one cost milliseconds (the host backs the guest's memory as it is first touched),
// during which the core it faults on runs nothing else: the relay thread and the user's own client and server
// waited behind the model's thread, and a capture's p99 latency grew with them. On 4 KiB pages the same
// growth costs a fault of 1.5 us at a time, and the capture's process took less CPU per call, not more
// (README, "The plaintext relay").
//
// Not done, even when asked for, when the user set glibc.malloc.hugetlb themselves, when the kernel has
// transparent huge pages off, or when something is preloaded (LD_PRELOAD: valgrind, heaptrack, another
// allocator). Whatever the program starts inherits GLIBC_TUNABLES as it was.
void restartWithHugePageHeap(char **argv);

} // namespace rpcscope
