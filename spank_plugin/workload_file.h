// Reading the user's workload file before it is sent to the daemon: a regular
// file only (a FIFO or /dev/zero would hang or never end), at most
// kMaxWorkloadBytes, and UTF-8 text (protobuf strings must be UTF-8; a binary
// file otherwise fails deep in gRPC and looks like a daemon outage).
#pragma once

#include <cstddef>
#include <string>

namespace xdeep::spank {

inline constexpr size_t kMaxWorkloadBytes = 1 << 20;

// The index of the first byte that is not part of valid UTF-8 (a NUL counts
// as invalid: it marks binary data), or npos when all of `text` is valid.
size_t FirstInvalidUtf8(const std::string& text);

// Reads `path` into `text`; false with one line in `error` saying what is
// wrong with it and how to fix it.
bool ReadWorkloadFile(const std::string& path, std::string* text, std::string* error);

}  // namespace xdeep::spank
