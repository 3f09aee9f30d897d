// Launch limits and rewriting (see launch_args.h).
#include "spank_plugin/launch_args.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

#include "client/time_span.h"
#include "spank_plugin/hostlist.h"

namespace xdeep::spank {

using client::ParseSlurmTimeLimit;
namespace {

bool IsNumber(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "4", "2-4" -> the larger end.
int CountOf(std::string_view value) {
  if (size_t dash = value.find('-'); dash != std::string_view::npos) value.remove_prefix(dash + 1);
  return std::atoi(std::string(value).c_str());
}

// "[type:]N" (--gpus-per-node, --gpus, --gpus-per-task) -> type, N.
int TypedCount(std::string_view value, std::string* type) {
  if (size_t colon = value.rfind(':'); colon != std::string_view::npos) {
    // "gpu:4" (GRES spelling, as some SLURM_GPUS_PER_NODE values read) names no type.
    if (value.substr(0, colon) != "gpu") *type = std::string(value.substr(0, colon));
    value.remove_prefix(colon + 1);
  }
  return std::atoi(std::string(value).c_str());
}

struct Gres {
  int gpus = 0;  // 0: no gpu entry
  std::string gpu_type;
  std::vector<std::string> others;  // every entry that is not a GPU, as written
};

// "gpu:2", "gpu:h100:2", "gres/gpu:2", "gpu", "gpu:h100", "nic:1,gpu:4".
Gres ParseGres(const std::string& value) {
  Gres g;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string entry = value.substr(start, comma - start);
    start = comma + 1;
    if (entry.empty()) continue;
    std::string_view e = entry;
    if (e.starts_with("gres/")) e.remove_prefix(5);
    if (!(e == "gpu" || e.starts_with("gpu:"))) {
      g.others.push_back(entry);
      continue;
    }
    std::vector<std::string> parts;
    size_t p = 0;
    while (p <= e.size()) {
      size_t colon = e.find(':', p);
      if (colon == std::string_view::npos) colon = e.size();
      parts.emplace_back(e.substr(p, colon - p));
      p = colon + 1;
    }
    g.gpus = 1;  // "gpu" and "gpu:TYPE" ask for one
    if (parts.size() >= 2 && IsNumber(parts.back())) {
      g.gpus = std::atoi(parts.back().c_str());
      if (parts.size() >= 3) g.gpu_type = parts[1];
    } else if (parts.size() >= 2) {
      g.gpu_type = parts[1];
    }
  }
  return g;
}

std::string Typed(const std::string& type, int count) {
  return type.empty() ? std::to_string(count) : type + ":" + std::to_string(count);
}

bool Has(const LaunchBounds& b, Effect effect, bool only_unremovable) {
  for (const GivenOption& g : b.given) {
    if (g.option == nullptr || g.option->effect != effect) continue;
    if (!only_unremovable || !g.removable) return true;
  }
  return false;
}

}  // namespace

bool RestrictsEnvironment(const std::string& value) {
  return !value.empty() && value != "ALL" && !value.starts_with("ALL,");
}

std::string ExportAlso(Launcher launcher, std::string value,
                       const std::vector<std::string>& names) {
  // srun 22.05 exports nothing after NONE ("NONE,XDEEP_A" passes no
  // XDEEP_A); NIL is its spelling of "only these". sbatch honours NONE,VAR
  // and NONE also loads the user's login environment there, so it stays.
  if (launcher == Launcher::kSrun && (value == "NONE" || value.starts_with("NONE,")))
    value.replace(0, 4, "NIL");
  for (const std::string& name : names) value += "," + name;
  return value;
}

std::vector<GivenOption> CommandLineOptions(Launcher launcher, const std::vector<std::string>& argv,
                                            int first_command) {
  const size_t end = std::min<size_t>(argv.size(), std::max(first_command, 1));
  return ParseOptions(launcher, argv, 1, end, OptionSource::kCommandLine);
}

LaunchBounds ReadLaunchBounds(std::vector<GivenOption> given) {
  // Slurm applies #SBATCH lines, then the input environment, then the command line.
  std::stable_sort(given.begin(), given.end(), [](const GivenOption& a, const GivenOption& b) {
    return static_cast<int>(a.source) < static_cast<int>(b.source);
  });
  LaunchBounds b;
  for (const GivenOption& g : given) {
    if (g.option == nullptr) continue;
    const std::string& v = g.value;
    if (g.option->treatment == Treatment::kRefused && b.refusal.empty()) {
      b.refusal = g.written + " cannot be tuned: " + g.option->what;
    }
    switch (g.option->effect) {
      case Effect::kNodes:
        b.nodes = CountOf(v);
        break;
      case Effect::kTasks:
        b.tasks = CountOf(v);
        break;
      case Effect::kGpusPerNode:
        b.gpus_per_node = TypedCount(v, &b.gpu_type);
        break;
      case Effect::kGpus:
        b.gpus = TypedCount(v, &b.gpu_type);
        break;
      case Effect::kGpusPerTask: {
        std::string type;
        TypedCount(v, &type);
        if (!type.empty()) b.gpu_type = type;
        break;
      }
      case Effect::kGres: {
        Gres gres = ParseGres(v);
        if (gres.gpus > 0) {
          b.gpus_per_node = gres.gpus;
          if (!gres.gpu_type.empty()) b.gpu_type = gres.gpu_type;
        }
        break;
      }
      case Effect::kTasksPerNode:
        b.tasks_per_node = CountOf(v);
        break;
      case Effect::kCpusPerTask:
      case Effect::kCpusPerGpu:
        b.cpus_per_task = std::max(b.cpus_per_task, CountOf(v));
        break;
      case Effect::kNodelist:
      case Effect::kExclude: {
        const bool exclude = g.option->effect == Effect::kExclude;
        auto hosts = v.find('/') == std::string::npos ? ExpandHostlist(v) : std::nullopt;
        if (!hosts.has_value()) {
          if (b.refusal.empty())
            b.refusal = g.written + "=" + v +
                        " cannot be tuned: give the nodes as a host list (n[1-4],gpu7), which "
                        "xdeep counts";
        } else if (exclude) {
          b.excluded_nodes = static_cast<int>(hosts->size());
        } else {
          b.nodelist = *hosts;
        }
        break;
      }
      case Effect::kConstraint:
        b.constraint = v;
        break;
      case Effect::kMemPerNode:
        b.mem_per_node = v;
        break;
      case Effect::kMemPerCpu:
        b.mem_per_cpu = v;
        break;
      case Effect::kMemPerGpu:
        b.mem_per_gpu = v;
        break;
      case Effect::kTime:
        if (!ParseSlurmTimeLimit(v, &b.time_limit_s) && b.refusal.empty()) {
          b.refusal = g.written + "=" + v +
                      " is not a Slurm time limit; give minutes (90), HH:MM:SS or D-HH:MM:SS";
        }
        break;
      case Effect::kPartition:
        b.partition = v.substr(0, v.find(','));
        break;
      case Effect::kAccount:
        b.account = v;
        break;
      case Effect::kChdir:
        b.chdir = v;
        break;
      case Effect::kExport:
        b.export_env = v;
        break;
      case Effect::kWrap:
        b.wrap = true;
        break;
      case Effect::kTasksPerGpu:
      case Effect::kPreserveEnv:
      case Effect::kNone:
        break;
    }
  }
  b.given = std::move(given);
  return b;
}

std::vector<std::string> RewriteLaunch(Launcher launcher, const std::vector<std::string>& argv,
                                       int first_command, const LaunchBounds& bounds,
                                       const LaunchShape& shape,
                                       const std::vector<std::string>& exports,
                                       bool component_only) {
  const size_t end = std::min<size_t>(argv.size(), std::max(first_command, 1));
  const bool restrict_env = RestrictsEnvironment(bounds.export_env) || component_only;
  std::vector<bool> cut(end, false);
  for (const GivenOption& g : bounds.given) {
    if (!g.removable || g.option == nullptr || g.end > end) continue;
    // --time stays as written when the decision sets no limit (INFINITE).
    const bool replaced = g.option->treatment == Treatment::kReplaced &&
                          !(g.option->effect == Effect::kTime && shape.time_limit_s <= 0);
    const bool export_rewritten = g.option->effect == Effect::kExport && restrict_env;
    if (replaced || export_rewritten) std::fill(cut.begin() + g.begin, cut.begin() + g.end, true);
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < end; ++i) {
    if (i == 0 || !cut[i]) out.push_back(argv[i]);
  }
  const std::string& type = bounds.gpu_type;
  out.push_back("--nodes=" + std::to_string(shape.nodes));
  out.push_back("--ntasks=" + std::to_string(shape.tasks));
  out.push_back("--gpus-per-node=" + Typed(type, shape.gpus_per_node));
  // What the command line no longer says but #SBATCH lines or the input
  // environment still do: override it with values that agree with the decision.
  if (Has(bounds, Effect::kGpus, true))
    out.push_back("--gpus=" + Typed(type, shape.nodes * shape.gpus_per_node));
  const int per_node = shape.tasks_per_node > 0 ? shape.tasks_per_node : shape.gpus_per_node;
  // Each task holds its node's GPUs when one task per node starts them all.
  if (Has(bounds, Effect::kGpusPerTask, true))
    out.push_back("--gpus-per-task=" + Typed(type, shape.gpus_per_node / std::max(per_node, 1)));
  // Always: without it Slurm packs tasks by CPUs (3 + 1 on two 2-GPU nodes).
  out.push_back("--ntasks-per-node=" + std::to_string(per_node));
  if (Has(bounds, Effect::kTasksPerGpu, true)) out.push_back("--ntasks-per-gpu=1");
  if (Has(bounds, Effect::kGres, false)) {
    std::string gres_value;
    for (const GivenOption& g : bounds.given) {
      if (g.option != nullptr && g.option->effect == Effect::kGres) gres_value = g.value;
    }
    std::string joined;
    for (const std::string& o : ParseGres(gres_value).others)
      joined += (joined.empty() ? "" : ",") + o;
    if (Has(bounds, Effect::kGres, true)) {
      joined += (joined.empty() ? "gpu:" : ",gpu:") + Typed(type, shape.gpus_per_node);
    }
    if (!joined.empty()) out.push_back("--gres=" + joined);
  }
  if (shape.time_limit_s > 0) {
    // Whole minutes, never above the limit the decision was made for.
    const long minutes = std::max(1L, static_cast<long>(shape.time_limit_s / 60));
    out.push_back("--time=" + std::to_string(minutes));
  }
  if (shape.segments > 1 && launcher == Launcher::kSbatch) out.push_back("--requeue");
  if (shape.overcommit && launcher == Launcher::kSrun) out.push_back("--overcommit");
  if (!bounds.nodelist.empty()) {
    std::string list;
    const size_t n = std::min<size_t>(bounds.nodelist.size(), std::max(shape.nodes, 1));
    for (size_t i = 0; i < n; ++i) list += (i ? "," : "") + bounds.nodelist[i];
    out.push_back("--nodelist=" + list);
  }
  if (component_only) {
    std::string value = bounds.export_env.empty() ? "ALL" : bounds.export_env;
    for (const std::string& e : exports) value += "," + e;
    out.push_back("--export=" + value);
  } else if (restrict_env) {
    out.push_back("--export=" + ExportAlso(launcher, bounds.export_env, exports));
  }
  for (size_t i = end; i < argv.size(); ++i) {
    out.push_back(argv[i]);
    // srun gives a component without --export the previous component's:
    // reset it to what it had before, so the decision stays in component 0.
    if (component_only && argv[i] == ":")
      out.push_back("--export=" + (bounds.export_env.empty() ? "ALL" : bounds.export_env));
  }
  return out;
}

std::vector<std::string> ReadSelfCmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  size_t start = 0;
  while (start < all.size()) {
    size_t nul = all.find('\0', start);
    if (nul == std::string::npos) nul = all.size();
    argv.push_back(all.substr(start, nul - start));
    start = nul + 1;
  }
  return argv;
}

}  // namespace xdeep::spank
