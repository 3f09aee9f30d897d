// Reopenable log file (see log_file.h).
#include "daemon/log_file.h"

#include <spdlog/common.h>

#include <cerrno>
#include <cstring>

namespace xdeep::daemon {
namespace {

std::FILE* OpenForAppend(const std::string& path, std::string* error) {
  // "e": the file descriptor does not leak into probe jobs' sbatch.
  std::FILE* f = std::fopen(path.c_str(), "ae");
  if (f == nullptr) *error = std::string(std::strerror(errno));
  return f;
}

}  // namespace

ReopenableFileSink::ReopenableFileSink(std::string path) : path_(std::move(path)) {
  std::string error;
  file_ = OpenForAppend(path_, &error);
  if (file_ == nullptr) throw spdlog::spdlog_ex(path_ + ": " + error);
}

ReopenableFileSink::~ReopenableFileSink() {
  if (file_ != nullptr) std::fclose(file_);
}

bool ReopenableFileSink::Reopen(std::string* error) {
  std::lock_guard lock(mutex_);
  std::FILE* fresh = OpenForAppend(path_, error);
  if (fresh == nullptr) {
    *error = path_ + ": " + *error;
    return false;
  }
  std::fclose(file_);
  file_ = fresh;
  return true;
}

void ReopenableFileSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t formatted;
  formatter_->format(msg, formatted);
  std::fwrite(formatted.data(), 1, formatted.size(), file_);
}

void ReopenableFileSink::flush_() { std::fflush(file_); }

}  // namespace xdeep::daemon
