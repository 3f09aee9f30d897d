// Splits fuzz input into words the way the callers receive them (argv
// entries, plugstack arguments): one word per separator-delimited run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xdeep::fuzz {

inline std::vector<std::string> SplitWords(std::string_view text, std::string_view separators,
                                           bool keep_empty) {
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && separators.find(text[i]) == std::string_view::npos) continue;
    if (keep_empty || i > start) words.emplace_back(text.substr(start, i - start));
    start = i + 1;
  }
  return words;
}

}  // namespace xdeep::fuzz
