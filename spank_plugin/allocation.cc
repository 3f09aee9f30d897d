// The enclosing allocation from squeue's JSON (see allocation.h).
#include "spank_plugin/allocation.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "spank_plugin/run_command.h"

namespace xdeep::spank {
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

std::string Text(const nlohmann::json& job, const char* key) {
  auto it = job.find(key);
  return it != job.end() && it->is_string() ? it->get<std::string>() : "";
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

bool ParseAllocationJson(const std::string& json, uint32_t job_id, int64_t now_unix,
                         Allocation* out, std::string* error) {
  try {
    const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.contains("jobs") || !doc["jobs"].is_array()) {
      *error = "squeue --json gave no job list";
      return false;
    }
    for (const nlohmann::json& job : doc["jobs"]) {
      if (!job.is_object() || job.value("job_id", 0u) != job_id) continue;
      Allocation a;
      a.nodes = job.value("node_count", 0);
      if (auto it = job.find("gres_detail"); it != job.end() && it->is_array()) {
        for (const nlohmann::json& d : *it) {
          if (d.is_string()) a.gpus_on_node.push_back(GpusInGresDetail(d.get<std::string>()));
        }
      }
      // A node that holds no GPU lists no gres_detail entry.
      while (static_cast<int>(a.gpus_on_node.size()) < a.nodes) a.gpus_on_node.push_back(0);
      for (int g : a.gpus_on_node) a.gpus += g;
      if (!a.gpus_on_node.empty())
        a.gpus_per_node = *std::min_element(a.gpus_on_node.begin(), a.gpus_on_node.end());
      const struct {
        const char* key;
        const char* per;
      } kRequests[] = {{"tres_per_node", "per node"},
                       {"tres_per_job", "per job"},
                       {"tres_per_task", "per task"}};
      for (const auto& r : kRequests) {
        const std::string gpu = GpuTres(Text(job, r.key));
        if (!gpu.empty()) {
          a.gpu_request = gpu + " " + r.per;
          break;
        }
      }
      // time_limit is in minutes, null when INFINITE.
      if (auto it = job.find("time_limit"); it != job.end() && it->is_number()) {
        const int64_t end = job.value("end_time", int64_t{0});
        if (end > now_unix) a.time_left_s = static_cast<double>(end - now_unix);
      }
      *out = std::move(a);
      return true;
    }
    *error = "squeue --json does not list job " + std::to_string(job_id);
    return false;
  } catch (const std::exception& e) {
    *error = std::string("cannot read squeue --json: ") + e.what();
    return false;
  }
}

bool ReadAllocation(uint32_t job_id, int timeout_ms, Allocation* out, std::string* error) {
  std::string json;
  if (!RunCommand({"squeue", "--json", "-j", std::to_string(job_id)}, timeout_ms, &json,
                       error)) {
    return false;
  }
  return ParseAllocationJson(json, job_id, static_cast<int64_t>(std::time(nullptr)), out, error);
}

}  // namespace xdeep::spank
