#pragma once

namespace rpcscope {

// The relay's I/O threads forward a call's bytes; every other thread of a capture (the decoder and what its
// sink does, the CLI's model thread) runs below their priority. On a machine with few cores such a thread
// would otherwise hold the core the relay thread wakes up for while the client and the server hold the
// other, and the call's bytes would wait a scheduler slice in the relay: the tail of the relayed latency.
//
// Two steps down:
// - A nice increment, RPCSCOPE_CAPTURE_NICE (0 to 19; 0 keeps the relay's priority and turns the next step
//   off too, for measuring what this changes), 10 by default. A lower weight alone does not make the kernel
//   preempt such a thread for a waking one: it runs out its slice (up to a few ms, measured on two cores:
//   the relay and the client's threads waiting behind the decoder while the other core sat idle).
// - The idle scheduling policy (SCHED_IDLE), while the capture keeps up: such a thread runs only on a core
//   nothing else wants, is preempted at once by any waking thread, and its core counts as free when the
//   kernel places one. RPCSCOPE_CAPTURE_IDLE=0 keeps the nice increment alone. When a capture falls behind
//   (captureFallingBehind()), every such thread goes back to the normal policy at its nice value, so a
//   machine kept busy by other work cannot starve the decoder; it returns to idle once caught up. Taking a
//   thread back out of the idle policy takes CAP_SYS_NICE or an RLIMIT_NICE that allows its nice value: where
//   the process has neither, the idle policy is not used (it could not be undone) and only the nice step is.
//
// On Linux a nice value and a policy belong to one thread, and threads it starts afterwards inherit them:
// call it only on threads that start no relay. A thread that called it calls forgetThisThread() before it
// ends (its id could otherwise be reused by another thread). A thread on the idle policy's terms also blocks
// SIGINT, SIGTERM, SIGHUP and SIGQUIT, so that a handler for them runs on a thread that gets a core now.
void lowerThisThreadsPriority();
void forgetThisThread();

// A capture starts (true) or stops (false) being behind: its decoder's backlog passed a bound, or it caught
// up. Calls balance: the lowered threads stay at the normal policy while any capture is behind. Any thread.
void captureFallingBehind(bool behind);
// From now on the lowered threads take the normal policy (at their nice value), for good: a process that is
// ending, whose last work (a file to finish) must not wait for a busy machine to go quiet. Async-signal-safe:
// a stop signal's handler calls it.
void stopUsingIdlePolicy();
// How many captures are behind now (0 once every capture has caught up or stopped).
int capturesBehind();

// The increment lowerThisThreadsPriority() applies.
int captureNiceIncrement();
// Whether lowered threads take the idle policy while no capture is behind (the environment allows it and it
// can be undone, above).
bool captureUsesIdlePolicy();

} // namespace rpcscope
