#pragma once

namespace rpcscope {

// The relay's I/O threads forward a call's bytes; every other thread of a capture (the decoder and what its
// sink does, the CLI's model thread) runs below their priority. On a machine with few cores such a thread
// would otherwise hold the core the relay thread wakes up for while the client and the server hold the
// other, and the call's bytes would wait a scheduler slice in the relay: the tail of the relayed latency.
// Behind a woken relay thread those threads only lose time they have plenty of (the decoder's backlog is
// bounded, and past the bound relaying goes on without decoding).
//
// Lowers the calling thread by the increment RPCSCOPE_CAPTURE_NICE gives (0 to 19; 0 keeps the relay's
// priority, for measuring what this changes), 10 by default. On Linux a nice value belongs to one thread,
// and threads it starts afterwards inherit it: call it only on threads that start no relay.
void lowerThisThreadsPriority();

// The increment lowerThisThreadsPriority() applies.
int captureNiceIncrement();

} // namespace rpcscope
