// How long the calling thread has waited, ready to run, for a CPU
// (/proc/thread-self/schedstat's run_delay: Linux's CONFIG_SCHED_INFO, on in
// Debian's kernels). A stopped request's lateness minus this wait is the part
// the daemon caused (work between two deadline polls, sleeps, locks), not a
// machine whose cores other processes hold: on the 2-core CI VM a fuzzer
// beside the tests once kept the heavy lane waiting ~390 ms past a deadline
// with no daemon work in between (session 16's closing note).
#pragma once

namespace xdeep::daemon {

// Seconds of run-queue wait of the calling thread since it started; -1 where
// the kernel does not report it.
double ThreadQueuedSeconds();

}  // namespace xdeep::daemon
