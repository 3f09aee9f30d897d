// Job-completion records (see job_records.h).
#include "daemon/job_records.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "daemon/text.h"

namespace xdeep::daemon {
namespace {

constexpr std::string_view kDecisionPrefix = "xdeep:";
// xdeep-jobcomp.sh's copy of `scontrol -d -o show job`, one line each.
constexpr std::string_view kControllerKey = "SCONTROL=";

// Slurm 22.05 writes a requeued run's record after setting the job pending
// again (scontrol requeue: PENDING; REQUEUED, REQUEUE_HOLD, REQUEUE_FED), and
// a run on a failed node as NODE_FAIL, which it requeues unless the job asked
// --no-requeue (a hold kept then goes with the job: released once Slurm
// holds no job for it).
bool MayRunAgain(std::string_view state) {
  return state == "PENDING" || state.starts_with("REQUEUE") || state == "NODE_FAIL";
}

}  // namespace

std::optional<int> CountArrayTasks(std::string_view indices) {
  indices = indices.substr(0, indices.find('%'));  // "%N" limits concurrency, not the count
  int64_t tasks = 0;
  for (std::string_view range : Split(indices, ',')) {
    std::string_view step_text = "1";
    if (size_t colon = range.find(':'); colon != std::string_view::npos) {
      step_text = range.substr(colon + 1);
      range = range.substr(0, colon);
    }
    size_t dash = range.find('-');
    auto first = ParseNumber<int64_t>(range.substr(0, dash));
    auto last =
        dash == std::string_view::npos ? first : ParseNumber<int64_t>(range.substr(dash + 1));
    auto step = ParseNumber<int64_t>(step_text);
    if (!first || !last || !step || *step <= 0 || *first < 0 || *last < *first) return std::nullopt;
    tasks += (*last - *first) / *step + 1;
    if (tasks > 10'000'000) return std::nullopt;
  }
  return static_cast<int>(tasks);
}

std::optional<int> GpusInTres(std::string_view tres) {
  int gpus = 0;
  for (std::string_view item : Split(tres, ',', true)) {
    if (!item.starts_with("gres:gpu") && !item.starts_with("gres/gpu")) continue;
    std::string_view rest = item.substr(8);
    if (!rest.empty() && rest[0] != ':' && rest[0] != '=') continue;  // another gres ("gpumem")
    // "gres:gpu" and "gres:gpu:a100" name one GPU; otherwise the count ends the item.
    auto count = rest.empty() ? std::optional<int>(1)
                              : ParseNumber<int>(item.substr(item.find_last_of(":=") + 1));
    if (!count) {
      if (rest.find_first_of("0123456789") != std::string_view::npos) return std::nullopt;
      count = 1;
    }
    if (*count < 0) return std::nullopt;
    gpus += *count;
  }
  return gpus;
}

std::optional<int> GpusInJobGres(std::string_view job_gres) {
  if (job_gres == "(null)" || job_gres.empty()) return 0;
  std::string tres;
  for (std::string_view item : Split(job_gres, ',', true)) {
    item = item.substr(0, item.find('('));  // "gpu:a100:2(S:0)": the count ends before
    tres += fmt::format("{}gres:{}", tres.empty() ? "" : ",", item);
  }
  return GpusInTres(tres);
}

ControllerFields ReadControllerRecord(std::span<const std::string_view> lines, uint32_t job_id) {
  // This job's record: from the line that starts "JobId=<id> " to the next
  // line that starts a record (a heterogeneous leader lists every component).
  // User text (a job name, a path) may hold spaces and newlines, so it can add
  // a field or start a line; it cannot remove slurmctld's own. A field seen
  // twice is therefore not trusted.
  const std::string first = fmt::format("JobId={} ", job_id);
  std::vector<std::string_view> comments, gres;
  bool inside = false;
  for (std::string_view line : lines) {
    if (line.starts_with("JobId=")) {
      if (inside) break;
      inside = line.starts_with(first);
    }
    if (!inside) continue;
    for (std::string_view token : Split(line, ' ', true)) {
      if (token.starts_with("AdminComment=")) comments.push_back(token.substr(13));
      if (token.starts_with("JOB_GRES=")) gres.push_back(token.substr(9));
    }
  }
  ControllerFields out;
  if (comments.size() == 1 && comments[0].starts_with(kDecisionPrefix)) {
    out.decision_id = comments[0].substr(kDecisionPrefix.size());
  }
  out.duplicated = comments.size() > 1 || gres.size() > 1;
  if (gres.size() == 1) out.gpus = GpusInJobGres(gres[0]);
  return out;
}

absl::StatusOr<JobUsage> ParseJobRecord(std::string_view text) {
  std::map<std::string_view, std::string_view> fields;
  std::vector<std::string_view> controller_lines;
  for (std::string_view line : Split(text, '\n', true)) {
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    if (line.starts_with(kControllerKey)) {
      controller_lines.push_back(line.substr(kControllerKey.size()));
      continue;
    }
    fields.try_emplace(line.substr(0, eq), line.substr(eq + 1));
  }
  auto number = [&](std::string_view key) -> std::optional<int64_t> {
    auto it = fields.find(key);
    if (it == fields.end()) return std::nullopt;
    return ParseNumber<int64_t>(it->second);
  };
  auto text_of = [&](std::string_view key) {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : std::string(it->second);
  };
  auto job = number("JOBID");
  auto uid = number("UID");
  auto start = number("START");
  auto end = number("END");
  if (!job || *job <= 0 || !uid || !start || !end) {
    return absl::InvalidArgumentError("job record lacks JOBID, UID, START or END");
  }
  JobUsage u;
  u.job_id = static_cast<uint32_t>(*job);
  u.uid = static_cast<uint32_t>(*uid);
  // A job cancelled while pending never started: nothing ran.
  u.start_unix = *start;
  u.end_unix = *start > 0 ? std::max(*start, *end) : *start;
  u.nodes = static_cast<int>(number("NODECNT").value_or(0));
  u.user = text_of("USERNAME");
  u.account = text_of("ACCOUNT");
  u.partition = text_of("PARTITION");
  u.state = text_of("JOBSTATE");
  const ControllerFields controller = ReadControllerRecord(controller_lines, u.job_id);
  u.decision_id = controller.decision_id;
  u.slurm_gpus = controller.gpus;
  if (controller.duplicated) {
    // A forged field: charged as a job with no reservation, on whole nodes.
    u.decision_id.clear();
    u.slurm_gpus.reset();
  }
  return u;
}

int DrainJobRecords(const std::string& spool, const PolicyConfig& policy, Ledger& ledger,
                    const GpusPerNodeFn& gpus_per_node, int64_t now,
                    const std::function<void(const JobUsage&)>& charged_hook) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int charged = 0;
  for (fs::directory_iterator it(spool, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path path = it->path();
    // Files still being written start with a dot; records end in ".job".
    if (path.extension() != ".job" || path.filename().string().starts_with(".")) continue;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto usage = ParseJobRecord(text.str());
    if (!usage.ok()) {
      spdlog::warn("event=jobcomp.unreadable file={} reason=\"{}\"", path.string(),
                   std::string(usage.status().message()));
      fs::remove(path, ec);
      continue;
    }
    const bool strict = policy.Strict(usage->partition);
    if (usage->decision_id.empty() && !strict) {
      (void)ledger.TakeRunStart(usage->job_id);
      fs::remove(path, ec);  // neither tuned nor enforced: not xdeep's to charge
      continue;
    }
    // A job with no reservation is billed for whole nodes; one with a
    // reservation for the GPUs per node it reserved (Admit refused asking more).
    if (gpus_per_node) usage->gpus = usage->nodes * gpus_per_node(usage->partition);
    // A requeued run comes with START = END (Slurm 22.05): the start the
    // daemon saw in squeue says how long it ran.
    auto seen = ledger.TakeRunStart(usage->job_id);
    if (seen.ok() && *seen && usage->end_unix == usage->start_unix && **seen > 0 &&
        **seen < usage->start_unix) {
      usage->start_unix = **seen;
    }
    usage->run_again = MayRunAgain(usage->state);
    usage->price_per_gpu_hour = policy.PricePerGpuHour(usage->partition);
    usage->price_per_node_hour = policy.PricePerNodeHour(usage->partition);
    auto cost = ledger.ChargeJob(*usage, now);
    if (!cost.ok()) {
      // Kept for the next pass (a full disk, a locked database).
      spdlog::error("event=jobcomp.charge_failed job={} reason=\"{}\"", usage->job_id,
                    std::string(cost.status().message()));
      continue;
    }
    spdlog::info(
        "event=ledger.charged job={} decision={} user={} partition={} state={} nodes={} "
        "run_s={} cost={:.4f}",
        usage->job_id, usage->decision_id.empty() ? "-" : usage->decision_id, usage->user,
        usage->partition, usage->state, usage->nodes, usage->end_unix - usage->start_unix, *cost);
    if (charged_hook) charged_hook(*usage);
    ++charged;
    fs::remove(path, ec);
  }
  return charged;
}

}  // namespace xdeep::daemon
