// The daemon's log file, reopened on SIGHUP: logrotate (or an admin) moves
// the file away, sends SIGHUP, and the next line goes to a new file at the
// configured path. A reopen that fails keeps writing to the old file and
// says so in it, so no line is lost.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace xdeep::daemon {

class ReopenableFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Opens `path` for appending; throws spdlog::spdlog_ex when it cannot.
  explicit ReopenableFileSink(std::string path);
  ~ReopenableFileSink() override;

  // Opens the configured path again; false (the old file kept) on failure,
  // with the reason in `error`.
  bool Reopen(std::string* error);

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace xdeep::daemon
