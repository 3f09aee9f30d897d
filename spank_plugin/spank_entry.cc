// The SPANK hooks: only the extern "C" entry points and the switch on
// spank_context(); all behaviour lives in Plugin (plugin.h), which never sees
// spank.h. Hooks never throw: everything is caught and logged here.
#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

// spank.h (22.05) declares the hooks outside its extern "C" block, and
// SPANK_PLUGIN() gives plugin_name internal linkage in C++: declare both here.
extern "C" {
#include <slurm/spank.h>
extern const char plugin_name[];
extern const char plugin_type[];
extern const unsigned int plugin_version;
extern const unsigned int spank_plugin_version;
}
SPANK_PLUGIN(xdeep, 1)

#include "spank_plugin/launch_args.h"
#include "spank_plugin/plugin.h"
#include "client/progress_line.h"
#include "spank_plugin/step_runtime.h"

namespace {

using xdeep::spank::Launcher;
using xdeep::spank::OptionId;
using xdeep::spank::Plugin;

// The handle of the hook running now (set_job_env needs it).
spank_t g_spank = nullptr;

Plugin& Instance() {
  static Plugin plugin(xdeep::spank::Host{
      .info = [](const std::string& line) { slurm_spank_log("%s", line.c_str()); },
      .error = [](const std::string& line) { slurm_error("%s", line.c_str()); },
      .reexec =
          [](const std::vector<std::string>& argv) {
            std::vector<char*> args;
            for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
            args.push_back(nullptr);
            std::fflush(nullptr);
            execv("/proc/self/exe", args.data());
            slurm_error("xdeep: execv failed: %s", std::strerror(errno));
          },
      .exit_without_launch =
          [] {
            std::fflush(nullptr);
            std::exit(0);
          },
      .set_job_env =
          [](const std::string& name, const std::string& value) {
            return g_spank != nullptr &&
                   spank_job_control_setenv(g_spank, name.c_str(), value.c_str(), 1) ==
                       ESPANK_SUCCESS;
          },
      .terminal = xdeep::client::TerminalWriter(STDERR_FILENO),
  });
  return plugin;
}

uint32_t g_job_id = 0;

// slurmstepd's view of a tuned step; the spank handle of the running hook
// is what its environment callbacks act on.
spank_t g_remote = nullptr;

std::string RemoteGetenv(const char* name) {
  char buffer[4096];
  if (g_remote == nullptr || spank_getenv(g_remote, name, buffer, sizeof buffer) != ESPANK_SUCCESS)
    return "";
  return buffer;
}

xdeep::spank::StepRuntime& Step() {
  static xdeep::spank::StepRuntime step(
      Instance().config(),
      xdeep::spank::StepHost{
          .getenv = RemoteGetenv,
          .setenv =
              [](const std::string& name, const std::string& value) {
                return g_remote != nullptr &&
                       spank_setenv(g_remote, name.c_str(), value.c_str(), 1) == ESPANK_SUCCESS;
              },
          .error = [](const std::string& line) { slurm_error("%s", line.c_str()); },
      });
  return step;
}

template <typename T>
T Item(spank_t sp, spank_item_t item) {
  T value{};
  spank_get_item(sp, item, &value);
  return value;
}

template <typename F>
int Guarded(const char* hook, F&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    slurm_error("xdeep: internal error in %s: %s", hook, e.what());
  } catch (...) {
    slurm_error("xdeep: internal error in %s", hook);
  }
  return -1;
}

int OptionCallback(int val, const char* optarg, int /*remote*/) {
  return Guarded("option", [&] { return Instance().OnOption(static_cast<OptionId>(val), optarg); });
}

// SPANK wants writable char* fields and a table that outlives the call.
struct spank_option g_options[xdeep::spank::kOptCount];
std::string g_option_strings[xdeep::spank::kOptCount][3];

int RegisterOptions(spank_t sp) {
  for (int i = 0; i < xdeep::spank::kOptCount; ++i) {
    const auto& o = xdeep::spank::kUserOptions[i];
    g_option_strings[i][0] = o.name;
    g_option_strings[i][1] = o.arginfo;
    g_option_strings[i][2] = o.usage;
    g_options[i] = {g_option_strings[i][0].data(),
                    g_option_strings[i][1].data(),
                    g_option_strings[i][2].data(),
                    o.has_arg,
                    i,
                    OptionCallback};
    if (spank_option_register(sp, &g_options[i]) != ESPANK_SUCCESS) {
      slurm_error("xdeep: cannot register --%s", o.name);
      return -1;
    }
  }
  return 0;
}

Launcher AllocatorLauncher() {
  return std::strcmp(program_invocation_short_name, "salloc") == 0 ? Launcher::kSalloc
                                                                   : Launcher::kSbatch;
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  return Guarded("init", [&] {
    const spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR) return 0;
    // In slurmstepd a failure would fail the step, and a failed batch step
    // drains the node: the submit side has reported a bad plugstack line already.
    if (Instance().Init(std::vector<std::string>(av, av + ac)) != 0 && ctx != S_CTX_REMOTE) {
      return -1;
    }
    if (ctx == S_CTX_LOCAL) Instance().PrepareStepEnvironment();
    return RegisterOptions(sp);
  });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int /*ac*/, char** /*av*/) {
  return Guarded("init_post_opt", [&] {
    const spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR) return 0;
    g_spank = sp;
    // After option parsing, libc's optind indexes the user's command.
    const Launcher launcher = ctx == S_CTX_LOCAL ? Launcher::kSrun : AllocatorLauncher();
    int rc = Instance().InitPostOpt(launcher, xdeep::spank::ReadSelfCmdline, optind);
    if (rc == 0 && ctx == S_CTX_LOCAL && Instance().owns_launch()) {
      // srun exits without the SPANK exit hook when the allocation fails;
      // this still releases the reservation.
      std::atexit([] { Instance().LocalExit(g_job_id); });
    }
    return rc;
  });
}

// srun, once the job exists: its id, for the report at exit. Nothing asks
// the daemon here: a launch pays for loading the gRPC client once (issue #27).
extern "C" int slurm_spank_local_user_init(spank_t sp, int /*ac*/, char** /*av*/) {
  return Guarded("local_user_init", [&] {
    uint32_t job_id = 0;
    spank_get_item(sp, S_JOB_ID, &job_id);
    g_job_id = job_id;
    return 0;
  });
}

// slurmstepd, privileges dropped to the user, before the tasks are forked.
extern "C" int slurm_spank_user_init(spank_t sp, int /*ac*/, char** /*av*/) {
  Guarded("user_init", [&] {
    if (spank_context() != S_CTX_REMOTE) return 0;
    g_remote = sp;
    xdeep::spank::StepIdentity id;
    id.job_id = Item<uint32_t>(sp, S_JOB_ID);
    id.step_id = Item<uint32_t>(sp, S_JOB_STEPID);
    id.uid = Item<uid_t>(sp, S_JOB_UID);
    id.gid = Item<gid_t>(sp, S_JOB_GID);
    id.node_id = static_cast<int>(Item<uint32_t>(sp, S_JOB_NODEID));
    id.nnodes = static_cast<int>(Item<uint32_t>(sp, S_JOB_NNODES));
    id.ntasks = static_cast<int>(Item<uint32_t>(sp, S_JOB_TOTAL_TASK_COUNT));
    id.tasks_on_node = static_cast<int>(Item<uint32_t>(sp, S_JOB_LOCAL_TASK_COUNT));
    Step().Begin(id);
    return 0;
  });
  return 0;  // never fail a step (a failed batch step drains its node)
}

// Each task, as the user, just before exec: its own rank variables.
extern "C" int slurm_spank_task_init(spank_t sp, int /*ac*/, char** /*av*/) {
  Guarded("task_init", [&] {
    if (spank_context() != S_CTX_REMOTE) return 0;
    g_remote = sp;
    Step().TaskEnvironment(static_cast<int>(Item<uint32_t>(sp, S_TASK_GLOBAL_ID)),
                           static_cast<int>(Item<uint32_t>(sp, S_TASK_ID)));
    return 0;
  });
  return 0;
}

extern "C" int slurm_spank_task_exit(spank_t sp, int /*ac*/, char** /*av*/) {
  Guarded("task_exit", [&] {
    if (spank_context() != S_CTX_REMOTE) return 0;
    Step().TaskExited(Item<int>(sp, S_TASK_EXIT_STATUS));
    return 0;
  });
  return 0;
}

extern "C" int slurm_spank_exit(spank_t /*sp*/, int /*ac*/, char** /*av*/) {
  return Guarded("exit", [&] {
    if (spank_context() == S_CTX_LOCAL) Instance().LocalExit(g_job_id);
    if (spank_context() == S_CTX_REMOTE) Step().End();
    return 0;
  });
}
