// Progress line (see progress_line.h).
#include "client/progress_line.h"

#include <unistd.h>

#include <cctype>

namespace xdeep::client {
namespace {

std::string WithoutDigits(const std::string& text) {
  std::string shape;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) shape += c;
  }
  return shape;
}

}  // namespace

ProgressLine::ProgressLine(std::function<void(std::string_view)> terminal,
                           std::function<void(const std::string&)> line,
                           Clock::duration plain_every)
    : terminal_(std::move(terminal)), line_(std::move(line)), plain_every_(plain_every) {}

void ProgressLine::Update(const std::string& text, Clock::time_point now) {
  if (terminal_) {
    // Back to the line's start, clear it, draw: one line however often it changes.
    terminal_("\r\033[K" + text);
    drawn_ = true;
    return;
  }
  std::string shape = WithoutDigits(text);
  if (shape == last_shape_ && now - last_plain_ < plain_every_) return;
  line_(text);
  last_shape_ = std::move(shape);
  last_plain_ = now;
}

void ProgressLine::Done() {
  if (drawn_) terminal_("\n");
  drawn_ = false;
}

std::function<void(std::string_view)> TerminalWriter(int fd) {
  if (isatty(fd) != 1) return {};
  return [fd](std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = write(fd, bytes.data(), bytes.size());
      if (n <= 0) return;  // a closed terminal: nothing to show it on
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  };
}

}  // namespace xdeep::client
