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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spank_plugin/daemon_client_loader.h"
#include "spank_plugin/hostlist.h"
#include "spank_plugin/run_command.h"

namespace xdeep::spank {

using client::DecisionFileJson;
using client::ReadDecisionVariables;
namespace {

constexpr const char* kDecisionFileName = "decision.json";

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
  // A one-node step's ranks all run here: loopback reaches rank 0, and
  // slurmstepd asks slurmctld nothing (scontrol: ~5 ms of CPU and ~35 ms
  // of every tuned step's start on the local cluster, issue #27).
  if (hosts->size() == 1) return "127.0.0.1";
  std::string output, error;
  // Text: Slurm 22.05's scontrol has no --json, and sinfo --json ignores -n.
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

void StepRuntime::ExecReporter(const std::vector<std::string>& argv) const {
  // Only async-signal-safe calls between fork and exec: slurmstepd has threads.
  if (geteuid() == 0 &&
      (setgroups(0, nullptr) != 0 || setgid(id_.gid) != 0 || setuid(id_.uid) != 0)) {
    _exit(125);
  }
  if (geteuid() != id_.uid) _exit(125);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char* no_environment[] = {nullptr};  // nothing of the job's reaches it
  execve(args[0], args.data(), no_environment);
  _exit(127);
}

void StepRuntime::End() {
  if (!active_) return;
  active_ = false;
  const std::string reporter =
      host_.reporter.empty() ? PluginDirectory() + "xdeep-step-report" : host_.reporter;
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.3f",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count());
  const std::vector<std::string> argv = {reporter,
                                         "--daemon=" + config_.daemon,
                                         "--timeout-ms=" + std::to_string(config_.timeout_ms),
                                         "--decision=" + decision_.decision_id,
                                         "--job=" + std::to_string(id_.job_id),
                                         "--exit-code=" + std::to_string(worst_exit_),
                                         std::string("--elapsed-s=") + elapsed,
                                         "--node=" + std::to_string(id_.node_id),
                                         "--directory=" + dir_};
  // gRPC's threads and the user's files stay out of slurmstepd: a separate
  // process, as the job's user, reads, cleans up and reports.
  const pid_t pid = fork();
  if (pid < 0) {
    host_.error("xdeep: cannot fork to report the step; " + dir_ + " is left behind");
    return;
  }
  if (pid == 0) ExecReporter(argv);
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
    host_.error("xdeep: the step's outcome did not reach the daemon (" + reporter + " " +
                (WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                                   : std::string("was stopped")) +
                ")");
  }
}

std::vector<double> ReadStepTimes(const std::string& path, size_t limit) {
  std::vector<double> times;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    char* end = nullptr;
    const double t = std::strtod(line.c_str(), &end);
    if (end == line.c_str() || !std::isfinite(t) || t <= 0) continue;
    if (times.size() == limit) times.erase(times.begin());
    times.push_back(t);
  }
  return times;
}

}  // namespace xdeep::spank
