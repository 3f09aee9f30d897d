// HeavyWorkload (see request_weight.h).
#include "daemon/request_weight.h"

#include <cctype>
#include <cstdint>
#include <string_view>

namespace xdeep::daemon {

bool HeavyWorkload(const xdeep::v1::Workload& workload) {
  if (workload.source_case() != xdeep::v1::Workload::kToml) return false;
  // A line scan, not a TOML parse: the user's text reaches toml++ only
  // through the workload parser, after its checks. A layer count written
  // any other way is still bounded by the search's own polls.
  std::string_view text = workload.toml();
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
      line.remove_prefix(1);
    for (std::string_view key : {"num_layers", "layers"}) {
      if (!line.starts_with(key)) continue;
      std::string_view rest = line.substr(key.size());
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
      if (rest.empty() || rest.front() != '=') continue;
      rest.remove_prefix(1);
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
      int64_t layers = 0;
      size_t digits = 0;
      for (char ch : rest) {
        if (ch == '_') continue;
        if (!std::isdigit(static_cast<unsigned char>(ch))) break;
        layers = layers * 10 + (ch - '0');
        if (++digits > 12) return true;  // absurd: the parser refuses it, heavy or not
      }
      if (layers > static_cast<int64_t>(kHeavyLayers)) return true;
    }
  }
  return false;
}

}  // namespace xdeep::daemon
