// A tuned step on its compute node (see step_runtime.h).
#include "spank_plugin/step_runtime.h"

#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spank_plugin/hostlist.h"
#include "spank_plugin/run_command.h"

namespace xdeep::spank {
namespace {

constexpr const char* kDecisionFileName = "decision.json";
constexpr const char* kStepTimesName = "step_times";
// Most step times one report carries; a longer file keeps its last ones.
constexpr size_t kMaxStepTimes = 100000;

bool Resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  freeaddrinfo(found);
  return true;
}

bool WriteNew(const std::string& path, const std::string& text, uid_t uid, gid_t gid) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (geteuid() == 0) ok = ok && fchown(fd, uid, gid) == 0;
  return close(fd) == 0 && ok;
}

}  // namespace

std::string StepRuntime::MasterAddress(const std::string& nodelist) const {
  const auto hosts = ExpandHostlist(nodelist);
  const std::string first = hosts && !hosts->empty() ? hosts->front() : std::string();
  if (first.empty() || Resolves(first)) return first;
  std::string output, error;
  if (RunCommand({"scontrol", "show", "node", first, "-o"}, config_.timeout_ms, &output, &error)) {
    std::istringstream in(output);
    std::string word;
    while (in >> word) {
      if (word.starts_with("NodeAddr=")) return word.substr(9);
    }
  }
  return first;
}

bool StepRuntime::MakeDirectory(std::string* error) {
  std::string pattern =
      config_.job_tmp + "/xdeep-" + std::to_string(id_.job_id) + "." +
      (id_.step_id == kBatchStepId ? std::string("batch") : std::to_string(id_.step_id)) +
      "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    *error = "cannot create a directory in " + config_.job_tmp + ": " + std::strerror(errno);
    return false;
  }
  dir_ = pattern;
  const std::string file = dir_ + "/" + kDecisionFileName;
  if (!WriteNew(file, DecisionFileJson(decision_), id_.uid, id_.gid)) {
    *error = "cannot write " + file;
    std::filesystem::remove_all(dir_);
    dir_.clear();
    return false;
  }
  // mkdtemp made it 0700 and ours; the user gets it only now that it is complete.
  if (geteuid() == 0 && chown(dir_.c_str(), id_.uid, id_.gid) != 0) {
    *error = "cannot give " + dir_ + " to uid " + std::to_string(id_.uid);
    std::filesystem::remove_all(dir_);
    dir_.clear();
    return false;
  }
  return true;
}

void StepRuntime::Begin(const StepIdentity& id) {
  if (host_.getenv("XDEEP_TUNED").empty()) return;
  id_ = id;
  began_ = std::chrono::steady_clock::now();
  std::string error;
  if (!ReadDecisionVariables(host_.getenv, &decision_, &error)) {
    host_.error("xdeep: the step's decision cannot be used: " + error);
    return;
  }
  if (!MakeDirectory(&error)) {
    host_.error("xdeep: " + error + "; the step runs without XDEEP_DECISION_FILE");
    return;
  }
  active_ = true;
  host_.setenv("XDEEP_JOB_TMP", dir_);
  host_.setenv("XDEEP_DECISION_FILE", dir_ + "/" + kDecisionFileName);
  host_.setenv("XDEEP_REPORT", dir_ + "/" + kStepTimesName);
  // The batch script is one process on the first node: its sruns rendezvous.
  if (id.step_id == kBatchStepId) return;
  std::string nodelist = host_.getenv("SLURM_STEP_NODELIST");
  if (nodelist.empty()) nodelist = host_.getenv("SLURM_NODELIST");
  facts_ = StepFacts{
      .job_id = id.job_id,
      .step_id = id.step_id,
      .node_id = id.node_id,
      .nnodes = id.nnodes,
      .ntasks = id.ntasks,
      .tasks_on_node = id.tasks_on_node,
      .master_addr = MasterAddress(nodelist),
      .master_port = RendezvousPort(id.job_id, id.step_id, config_.port_first, config_.port_last)};
  rendezvous_ = !facts_.master_addr.empty();
  if (!rendezvous_) {
    host_.error("xdeep: cannot read the step's node list; MASTER_ADDR is not set");
    return;
  }
  for (const auto& [name, value] : StepRendezvous(facts_, decision_)) host_.setenv(name, value);
}

void StepRuntime::TaskEnvironment(int global_rank, int local_rank) {
  if (!rendezvous_) return;
  for (const auto& [name, value] : TaskRendezvous(facts_, decision_, global_rank, local_rank))
    host_.setenv(name, value);
}

void StepRuntime::TaskExited(int wait_status) {
  if (!active_) return;
  int code = 0;
  if (WIFEXITED(wait_status)) code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) code = 128 + WTERMSIG(wait_status);
  worst_exit_ = std::max(worst_exit_, code);
  // slurmstepd runs task_exit before it tells srun the task ended: reporting
  // at the node's last task means srun returns after the daemon knows.
  if (++exited_ >= id_.tasks_on_node) End();
}

void StepRuntime::ReportAsUser() const {
  // The user's identity before touching the directory the user controls.
  if (geteuid() == 0 &&
      (setgroups(0, nullptr) != 0 || setgid(id_.gid) != 0 || setuid(id_.uid) != 0)) {
    _exit(2);
  }
  if (geteuid() != id_.uid) _exit(2);
  ReportQuery report;
  report.decision_id = decision_.decision_id;
  report.job_id = id_.job_id;
  report.exit_code = worst_exit_;
  report.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  {
    // Line by line: one bad line (the user writes this file) skips only itself.
    std::ifstream in(dir_ + "/" + kStepTimesName);
    std::string line;
    while (std::getline(in, line)) {
      char* end = nullptr;
      const double t = std::strtod(line.c_str(), &end);
      if (end == line.c_str() || !std::isfinite(t) || t <= 0) continue;
      if (report.step_times_s.size() == kMaxStepTimes)
        report.step_times_s.erase(report.step_times_s.begin());
      report.step_times_s.push_back(t);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  // The first node speaks for the step (Slurm's record has every node's
  // state); others only add the step times their ranks wrote.
  if (id_.node_id != 0 && report.step_times_s.empty()) _exit(0);
  std::string error;
  std::unique_ptr<DaemonClient> client = host_.load_client(config_.daemon, &error);
  if (client == nullptr) _exit(3);
  ClientError client_error;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.timeout_ms);
  _exit(client->Report(report, deadline, &client_error) ? 0 : 4);
}

void StepRuntime::End() {
  if (!active_) return;
  active_ = false;
  // slurmstepd forks tasks: the gRPC client and its threads live only in
  // this short-lived child, which also drops root before reading anything.
  const pid_t pid = fork();
  if (pid < 0) {
    host_.error("xdeep: cannot fork to report the step; " + dir_ + " is left behind");
    return;
  }
  if (pid == 0) ReportAsUser();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.timeout_ms + 1000);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    usleep(2000);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    host_.error("xdeep: the step's outcome did not reach the daemon (reporter status " +
                std::to_string(status) + ")");
  }
}

}  // namespace xdeep::spank
