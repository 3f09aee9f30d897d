// Child process with a deadline (see run_command.h).
#include "spank_plugin/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace xdeep::spank {

bool RunCommand(const std::vector<std::string>& argv, int timeout_ms, std::string* output,
                std::string* error) {
  if (argv.empty()) return false;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    *error = "pipe failed";
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    *error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string text;
  char buffer[4096];
  pollfd fd{out[0], POLLIN, 0};
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    if (poll(&fd, 1, 20) > 0) {
      const ssize_t n = read(out[0], buffer, sizeof buffer);
      if (n <= 0) done = true;
      if (n > 0) text.append(buffer, static_cast<size_t>(n));
    }
  }
  close(out[0]);
  int status = 0;
  if (!done) kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  if (!done || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = argv[0] + (done ? " failed" : " did not answer in time");
    return false;
  }
  *output = std::move(text);
  return true;
}

}  // namespace xdeep::spank
