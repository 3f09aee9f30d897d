// Benchmark: the largest search a large site asks (bench/scale/large_site.py's
// last request, run in-process): llama-70b on up to N nodes x 8 H100 of a DGX
// H100 SuperPOD fabric, least time. Prints the thread's CPU time per search
// (median of the repetitions) against the 200 ms target, and the pick.
//
//   largest_search_bench [--nodes 10000] [--reps 5]
//   largest_search_bench --picks     # the picks of a fixed set of requests,
//                                    # one line each, to compare two builds
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "tuner/fabric.h"
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/workload.h"

namespace {

using namespace xdeep::tuner;

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

HardwareProfile SiteProfile() {
  auto hw = BuiltinHardwareProfile("h100-sxm");
  auto fabric = BuiltinFabric("dgx-h100-superpod");
  if (!hw.ok() || !fabric.ok()) {
    std::fprintf(stderr, "largest_search_bench: built-in profile or fabric missing\n");
    std::exit(1);
  }
  hw->fabric = *fabric;
  return *hw;
}

SearchLimits SiteLimits(int nodes, Objective objective) {
  SearchLimits l;
  l.max_nodes = nodes;
  l.max_gpus_per_node = 8;
  l.price_per_gpu_hour = 2.5;
  l.objective = objective;
  return l;
}

std::string Describe(const absl::StatusOr<SearchResult>& r) {
  if (!r.ok()) return "error: " + std::string(r.status().message()).substr(0, 60);
  const Configuration& c = r->best.config;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s nodes %d x %d mb %d ga %d batch %lld rc %d src %d | time %.9g s cost %.9g "
                "| feasible %llu evaluated %llu",
                StrategyName(c).c_str(), c.nodes, c.gpus_per_node, c.micro_batch, c.grad_accum,
                static_cast<long long>(c.global_batch), c.recompute, c.selective_recompute,
                r->best.prediction.time_to_solution_s, r->best.prediction.cost,
                static_cast<unsigned long long>(r->feasible),
                static_cast<unsigned long long>(r->evaluated));
  return buf;
}

// A fixed set of requests: presets as the daemon builds them, a changeable
// batch, a memory-tight one, every objective the search ranks by.
int Picks() {
  const HardwareProfile hw = SiteProfile();
  struct Req {
    const char* preset;
    int nodes;
    Objective objective;
    bool changeable_batch;
  };
  const Req reqs[] = {
      {"gpt-1.3b", 64, Objective::kCost, false},     {"gpt-1.3b", 2000, Objective::kTime, false},
      {"llama-7b", 512, Objective::kTime, false},    {"llama-7b", 2000, Objective::kCost, true},
      {"llama-13b", 64, Objective::kCost, false},    {"llama-13b", 2000, Objective::kTime, true},
      {"llama-70b", 2, Objective::kTime, false},     {"llama-70b", 512, Objective::kCost, false},
      {"llama-70b", 10000, Objective::kTime, false}, {"llama-70b", 4000, Objective::kTime, true},
  };
  for (const Req& q : reqs) {
    auto w = PresetWorkload(q.preset);
    if (!w.ok()) return 1;
    if (q.changeable_batch) {
      w->batch_may_change = true;
      w->min_global_batch = w->reference_global_batch / 2;
      w->max_global_batch = w->reference_global_batch * 8;
      w->b_noise = static_cast<double>(w->reference_global_batch) * 2;
    }
    const auto r = Search(*w, hw, SiteLimits(q.nodes, q.objective));
    std::printf("%-9s N=%-5d %-4s %s: %s\n", q.preset, q.nodes,
                q.objective == Objective::kTime ? "time" : "cost",
                q.changeable_batch ? "batch 0.5-8x" : "batch fixed", Describe(r).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 10000, reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--picks") return Picks();
    if (a == "--nodes" && i + 1 < argc) {
      nodes = std::atoi(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: largest_search_bench [--nodes N] [--reps R] | --picks\n");
      return 2;
    }
  }
  auto w = PresetWorkload("llama-70b");
  if (!w.ok() || nodes < 1 || reps < 1) return 2;
  const HardwareProfile hw = SiteProfile();
  std::vector<double> cpu;
  absl::StatusOr<SearchResult> last;
  for (int i = 0; i < reps; ++i) {
    const double t0 = ThreadCpuSeconds();
    last = Search(*w, hw, SiteLimits(nodes, Objective::kTime));
    cpu.push_back(ThreadCpuSeconds() - t0);
  }
  std::sort(cpu.begin(), cpu.end());
  std::printf(
      "largest search: llama-70b, up to %d nodes x 8 H100 (dgx-h100-superpod), least time\n",
      nodes);
  std::printf("  CPU time per search: median %.1f ms, min %.1f, max %.1f (%d runs; target 200)\n",
              1e3 * cpu[cpu.size() / 2], 1e3 * cpu.front(), 1e3 * cpu.back(), reps);
  std::printf("  pick: %s\n", Describe(last).c_str());
  return 0;
}
