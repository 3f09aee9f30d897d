// One progress line for a long wait (a probe job): on a terminal it is
// redrawn in place; elsewhere (a log, a pipe) it prints plain lines, a new one
// only when something other than the figures changed (the job's state, what
// runs) or once every `plain_every`, so a log of an hour's wait stays short.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace xdeep::client {

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;
  // `terminal` writes raw bytes to a terminal (empty: there is none);
  // `line` prints one plain line.
  ProgressLine(std::function<void(std::string_view)> terminal,
               std::function<void(const std::string&)> line,
               Clock::duration plain_every = std::chrono::seconds(60));
  ~ProgressLine() { Done(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void Update(const std::string& text, Clock::time_point now = Clock::now());
  // Ends a redrawn line (the last state stays on screen); idempotent.
  void Done();

 private:
  std::function<void(std::string_view)> terminal_;
  std::function<void(const std::string&)> line_;
  Clock::duration plain_every_;
  std::string last_shape_;  // the last plain line without its digits
  Clock::time_point last_plain_{};
  bool drawn_ = false;
};

// `fd`'s writer when it is a terminal, else empty (ProgressLine's first argument).
std::function<void(std::string_view)> TerminalWriter(int fd);

}  // namespace xdeep::client
