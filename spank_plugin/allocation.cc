// The enclosing allocation from scontrol's record of it (see allocation.h).
#include "spank_plugin/allocation.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string_view>

#include "client/time_span.h"
#include "spank_plugin/hostlist.h"
#include "spank_plugin/run_command.h"

namespace xdeep::spank {

using client::ParseSlurmTimeLimit;

namespace {

// "gres:gpu:2", "gres:gpu:h100:2", "gres/gpu:2" -> "gpu:2" / "gpu:h100:2";
// empty when the TRES string names no GPU.
std::string GpuTres(const std::string& tres) {
  size_t start = 0;
  while (start <= tres.size()) {
    size_t comma = tres.find(',', start);
    if (comma == std::string::npos) comma = tres.size();
    std::string entry = tres.substr(start, comma - start);
    start = comma + 1;
    for (const char* prefix : {"gres:", "gres/"}) {
      if (entry.starts_with(prefix)) entry.erase(0, 5);
    }
    if (entry == "gpu" || entry.starts_with("gpu:") || entry.starts_with("gpu=")) return entry;
  }
  return "";
}

}  // namespace

int GpusInGresDetail(const std::string& detail) {
  // Entries are separated by ',' outside the "(IDX:0,2)" lists.
  int total = 0, depth = 0;
  std::string entry;
  auto count = [&](const std::string& e) {
    if (!(e == "gpu" || e.starts_with("gpu:"))) return;
    // "gpu[:type]:N": the last field is the count.
    const size_t colon = e.rfind(':');
    if (colon != std::string::npos) total += std::atoi(e.c_str() + colon + 1);
  };
  for (char c : detail) {
    if (c == '(') ++depth;
    if (depth == 0 && c == ',') {
      count(entry);
      entry.clear();
    } else if (depth == 0) {
      entry.push_back(c);
    }
    if (c == ')' && depth > 0) --depth;
  }
  count(entry);
  return total;
}

bool ParseAllocationScontrol(const std::string& text, uint32_t job_id, Allocation* out,
                             std::string* error) {
  // The first line is "JobId=N JobName=...": the name is the user's text and
  // may hold blanks and '=', so fields are read from the lines after it, each
  // key's first occurrence (the free-text fields, Command, WorkDir, Comment,
  // come after the ones read here).
  const std::string head = "JobId=" + std::to_string(job_id);
  if (!(text.starts_with(head) && text.size() > head.size() &&
        (text[head.size()] == ' ' || text[head.size()] == '\n'))) {
    *error = "scontrol does not describe job " + std::to_string(job_id);
    return false;
  }
  std::map<std::string, std::string, std::less<>> fields;
  Allocation a;
  bool nodes_listed = false;
  size_t pos = text.find('\n');
  while (pos != std::string::npos && pos < text.size()) {
    size_t eol = text.find('\n', pos + 1);
    if (eol == std::string::npos) eol = text.size();
    const std::string_view line(text.data() + pos + 1, eol - pos - 1);
    pos = eol;
    // One "Nodes=HOSTLIST CPU_IDs=... Mem=... GRES=..." line per group of
    // nodes alike (scontrol -d); GRES= is missing where they hold none.
    std::vector<std::pair<std::string_view, std::string_view>> tokens;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && line[i] == ' ') ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      const std::string_view token = line.substr(i, j - i);
      if (const size_t eq = token.find('='); eq != std::string_view::npos)
        tokens.emplace_back(token.substr(0, eq), token.substr(eq + 1));
      i = j;
    }
    if (tokens.empty()) continue;
    if (tokens[0].first == "Nodes") {
      const auto hosts = ExpandHostlist(std::string(tokens[0].second));
      if (!hosts) {
        *error = "scontrol names a malformed node list '" + std::string(tokens[0].second) + "'";
        return false;
      }
      int gpus = 0;
      for (const auto& [key, value] : tokens)
        if (key == "GRES") gpus = GpusInGresDetail(std::string(value));
      a.gpus_on_node.insert(a.gpus_on_node.end(), hosts->size(), gpus);
      nodes_listed = true;
      continue;
    }
    for (const auto& [key, value] : tokens) fields.emplace(key, value);
  }
  auto field = [&](const char* key) {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  };
  const std::string nodes = field("NumNodes");
  a.nodes = std::atoi(nodes.c_str());  // "2", or "2-4" before it runs
  if (nodes.empty() || a.nodes < 1) {
    *error = "scontrol gives job " + std::to_string(job_id) + " no node count";
    return false;
  }
  if (!nodes_listed) a.gpus_on_node.clear();
  // A node that holds no GPU may be listed nowhere.
  while (static_cast<int>(a.gpus_on_node.size()) < a.nodes) a.gpus_on_node.push_back(0);
  for (int g : a.gpus_on_node) a.gpus += g;
  a.gpus_per_node = *std::min_element(a.gpus_on_node.begin(), a.gpus_on_node.end());
  const struct {
    const char* key;
    const char* per;
  } kRequests[] = {
      {"TresPerNode", "per node"}, {"TresPerJob", "per job"}, {"TresPerTask", "per task"}};
  for (const auto& r : kRequests) {
    const std::string gpu = GpuTres(field(r.key));
    if (!gpu.empty()) {
      a.gpu_request = gpu + " " + r.per;
      break;
    }
  }
  double limit_s = 0, run_s = 0;
  if (ParseSlurmTimeLimit(field("TimeLimit"), &limit_s) && limit_s > 0 &&
      ParseSlurmTimeLimit(field("RunTime"), &run_s) && limit_s > run_s) {
    a.time_left_s = limit_s - run_s;
  }
  *out = std::move(a);
  return true;
}

bool ReadAllocation(uint32_t job_id, int timeout_ms, Allocation* out, std::string* error) {
  std::string text;
  if (!RunCommand({"scontrol", "-d", "show", "job", std::to_string(job_id)}, timeout_ms, &text,
                  error)) {
    return false;
  }
  return ParseAllocationScontrol(text, job_id, out, error);
}

}  // namespace xdeep::spank
