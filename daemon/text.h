// Small string helpers. Debian's abseil is built with its own string_view type,
// so absl::StrSplit / SimpleAtoi do not take std::string_view; these do.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

namespace xdeep::daemon {

inline std::vector<std::string_view> Split(std::string_view text, char sep,
                                           bool skip_empty = false) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(sep, start);
    std::string_view part = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (!skip_empty || !part.empty()) parts.push_back(part);
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace xdeep::daemon
