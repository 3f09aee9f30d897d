// ThreadQueuedSeconds (see thread_queue_wait.h).
#include "daemon/thread_queue_wait.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace xdeep::daemon {

double ThreadQueuedSeconds() {
  // "<ns on CPU> <ns waiting on a run queue> <timeslices>"
  const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[96];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  unsigned long long on_cpu_ns = 0, waited_ns = 0;
  if (std::sscanf(text, "%llu %llu", &on_cpu_ns, &waited_ns) != 2) return -1;
  return static_cast<double>(waited_ns) * 1e-9;
}

}  // namespace xdeep::daemon
