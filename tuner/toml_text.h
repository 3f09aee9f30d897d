// Checks user-written TOML text before toml++ parses it.
//
// toml++ 3.3.0 (Debian 12) is not safe on every input: a NUL inside a table
// header ("[", NUL, "]") trips a debug assertion, and a non-ASCII character
// where the parser looks for whitespace ("a = 1ô") reaches code marked
// unreachable, which is undefined behaviour in release builds. Every workload
// and configuration text goes through CheckTomlText first, which accepts only
// what TOML 1.0 allows at the lexical level and what toml++ handles safely:
//   * at most kMaxTomlTextBytes bytes;
//   * valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF);
//   * no control characters but tab, line feed and carriage return;
//   * non-ASCII characters only inside quoted strings and comments (TOML 1.0
//     bare keys, numbers, booleans and dates are ASCII), and never as the
//     character an escape or a line-ending backslash of a multi-line basic
//     string leads to (toml++ tests those for whitespace).
#pragma once

#include <cstddef>
#include <string_view>

#include "absl/status/status.h"

namespace xdeep::tuner {

// A workload or a daemon configuration is a page of settings, never data.
inline constexpr size_t kMaxTomlTextBytes = 1 << 20;

// OK, or InvalidArgument reading "<source>:<line>: <what is wrong>; <fix>" for
// the first offending byte.
absl::Status CheckTomlText(std::string_view text, std::string_view source);

}  // namespace xdeep::tuner
