// ThreadSchedTimesNow (see thread_sched_times.h).
#include "daemon/thread_sched_times.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace xdeep::daemon {

std::optional<ThreadSchedTimes> ThreadSchedTimesNow() {
  // "<ns on CPU> <ns waiting on a run queue> <timeslices>"
  const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[96];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return std::nullopt;
  text[n] = '\0';
  unsigned long long on_cpu_ns = 0, queued_ns = 0;
  if (std::sscanf(text, "%llu %llu", &on_cpu_ns, &queued_ns) != 2) return std::nullopt;
  return ThreadSchedTimes{.on_cpu_s = on_cpu_ns * 1e-9, .queued_s = queued_ns * 1e-9};
}

}  // namespace xdeep::daemon
