// The partition's nodes from sinfo (see node_features.h).
#include "spank_plugin/node_features.h"

#include <cstdlib>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "spank_plugin/run_command.h"

namespace xdeep::spank {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

// The feature names of a plain expression (names joined by & or , or by |);
// false for anything richer.
bool ParseConstraint(const std::string& constraint, std::vector<std::string>* wanted, bool* any) {
  if (constraint.empty() || constraint.find_first_of("[]()*:") != std::string::npos) return false;
  if (std::string_view("&|,").find(constraint.back()) != std::string_view::npos) return false;
  *any = constraint.find('|') != std::string::npos;
  if (*any && constraint.find_first_of("&,") != std::string::npos) return false;
  for (const std::string& part : Split(constraint, '|')) {
    for (const std::string& name : Split(part, '&')) {
      for (const std::string& n : Split(name, ',')) {
        if (n.empty()) return false;
        wanted->push_back(n);
      }
    }
  }
  return !wanted->empty();
}

}  // namespace

long MemoryMb(const std::string& size) {
  if (size.empty() || size[0] < '0' || size[0] > '9') return 0;
  size_t used = 0;
  long value = 0;
  try {
    value = std::stol(size, &used);
  } catch (...) {
    return 0;
  }
  const std::string unit = size.substr(used);
  if (unit.empty() || unit == "M" || unit == "m") return value;
  if (unit == "G" || unit == "g") return value * 1024;
  if (unit == "T" || unit == "t") return value * 1024 * 1024;
  if (unit == "K" || unit == "k") return value / 1024;
  return 0;
}

PartitionNodes ReadPartitionNodes(const std::string& sinfo_output, const std::string& partition,
                                  const std::string& constraint, long min_memory_mb) {
  std::vector<std::string> wanted;
  bool any = false;
  const bool counted = !constraint.empty() && ParseConstraint(constraint, &wanted, &any);
  std::set<std::string> nodes;
  PartitionNodes out;
  for (const std::string& line : Split(sinfo_output, '\n')) {
    const std::vector<std::string> f = Split(line, '|');
    if (f.size() < 4) continue;
    const std::string& p = f[1];
    const bool in_partition =
        partition.empty() ? p.ends_with("*") : (p == partition || p == partition + "*");
    if (!in_partition) continue;
    const std::vector<std::string> has = Split(f[2], ',');
    auto has_feature = [&](const std::string& w) {
      for (const std::string& h : has)
        if (h == w) return true;
      return false;
    };
    bool ok = !any;
    for (const std::string& w : wanted) ok = any ? (ok || has_feature(w)) : (ok && has_feature(w));
    const long mb = std::atol(f[3].c_str());
    if (mb < min_memory_mb) continue;
    if (constraint.empty() || !counted || ok) {
      nodes.insert(f[0]);
      if (mb > 0 && (out.memory_mb == 0 || mb < out.memory_mb)) out.memory_mb = mb;
    }
  }
  if (counted || min_memory_mb > 0) out.matching = static_cast<int>(nodes.size());
  return out;
}

bool RunSinfo(int timeout_ms, std::string* output, std::string* error) {
  return RunCommand({"sinfo", "-h", "-N", "-o", kSinfoFormat}, timeout_ms, output, error);
}

}  // namespace xdeep::spank
