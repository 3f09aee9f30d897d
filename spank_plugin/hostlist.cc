// Host list expansion (see hostlist.h).
#include "spank_plugin/hostlist.h"

#include <cstdlib>

namespace xdeep::spank {
namespace {

// Splits at commas outside brackets.
std::vector<std::string> TopLevelItems(const std::string& list) {
  std::vector<std::string> items;
  std::string current;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      items.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  items.push_back(current);
  return items;
}

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "n[1-2]x[3-4]": the first bracket's ranges, each joined to the expanded rest.
bool ExpandItem(const std::string& item, size_t limit, std::vector<std::string>* out) {
  const size_t open = item.find('[');
  if (open == std::string::npos) {
    if (item.empty() || item.find(']') != std::string::npos) return false;
    out->push_back(item);
    return out->size() <= limit;
  }
  const size_t close = item.find(']', open);
  if (close == std::string::npos) return false;
  const std::string prefix = item.substr(0, open);
  const std::string ranges = item.substr(open + 1, close - open - 1);
  std::vector<std::string> rest;
  if (close + 1 < item.size()) {
    if (!ExpandItem(item.substr(close + 1), limit, &rest)) return false;
  } else {
    rest.push_back("");
  }
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = ranges.find(',', start);
    if (comma == std::string::npos) comma = ranges.size();
    const std::string range = ranges.substr(start, comma - start);
    const size_t dash = range.find('-');
    const std::string lo = range.substr(0, dash);
    const std::string hi = dash == std::string::npos ? lo : range.substr(dash + 1);
    if (!AllDigits(lo) || !AllDigits(hi)) return false;
    const long a = std::atol(lo.c_str()), b = std::atol(hi.c_str());
    if (b < a || static_cast<size_t>(b - a) >= limit) return false;
    for (long v = a; v <= b; ++v) {
      std::string number = std::to_string(v);
      if (number.size() < lo.size()) number.insert(0, lo.size() - number.size(), '0');
      for (const std::string& r : rest) {
        out->push_back(prefix + number + r);
        if (out->size() > limit) return false;
      }
    }
    start = comma + 1;
  }
  return true;
}

}  // namespace

std::optional<std::vector<std::string>> ExpandHostlist(const std::string& list, size_t limit) {
  std::vector<std::string> hosts;
  for (const std::string& item : TopLevelItems(list)) {
    if (!ExpandItem(item, limit, &hosts)) return std::nullopt;
  }
  return hosts;
}

}  // namespace xdeep::spank
