// squeue --json parsing (see slurm_jobs.h).
#include "daemon/slurm_jobs.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>

#include "absl/status/status.h"

namespace xdeep::daemon {
namespace {

template <typename T>
T NumberOr(const nlohmann::json& job, const char* key, T fallback) {
  const auto it = job.find(key);
  return it != job.end() && it->is_number_integer() ? it->get<T>() : fallback;
}

std::string TextOr(const nlohmann::json& job, const char* key) {
  const auto it = job.find(key);
  return it != job.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

absl::StatusOr<std::vector<SlurmJob>> ParseSqueueJson(std::string_view json) {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array()) {
    return absl::InvalidArgumentError("squeue --json gave no job list");
  }
  std::vector<SlurmJob> jobs;
  for (const nlohmann::json& j : doc["jobs"]) {
    if (!j.is_object()) continue;
    SlurmJob job;
    const int64_t id = NumberOr<int64_t>(j, "job_id", 0);
    if (id <= 0 || id > UINT32_MAX) continue;
    job.job_id = static_cast<uint32_t>(id);
    job.state = TextOr(j, "job_state");
    job.partition = TextOr(j, "partition");
    job.start_time = NumberOr<int64_t>(j, "start_time", 0);
    job.admin_comment = TextOr(j, "admin_comment");
    jobs.push_back(std::move(job));
  }
  return jobs;
}

bool JobInQueue(std::string_view state) {
  static constexpr std::string_view kActive[] = {
      "PENDING",      "CONFIGURING", "RUNNING",  "COMPLETING", "SUSPENDED", "REQUEUED",
      "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING",  "STAGE_OUT", "STOPPED"};
  return std::find(std::begin(kActive), std::end(kActive), state) != std::end(kActive);
}

}  // namespace xdeep::daemon
