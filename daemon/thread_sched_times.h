// Where the calling thread's time went, as Linux counts it
// (/proc/thread-self/schedstat, CONFIG_SCHED_INFO: on in Debian's kernels):
// on a CPU, and waiting, ready to run, for one. A stopped request's lateness
// less the wait is the part the daemon caused (work between two deadline
// polls, sleeps, locks), not a machine whose cores other processes hold: on
// the 2-core CI VM a fuzzer beside the tests once kept the heavy lane waiting
// ~390 ms past a deadline with no daemon work in between (session 16's
// closing note).
#pragma once

#include <optional>

namespace xdeep::daemon {

struct ThreadSchedTimes {
  double on_cpu_s = 0;
  double queued_s = 0;  // run-queue wait
};

// Since the calling thread started; none where the kernel does not report it.
std::optional<ThreadSchedTimes> ThreadSchedTimesNow();

}  // namespace xdeep::daemon
