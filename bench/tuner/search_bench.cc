// Benchmark: the full configuration search for a 70 B-parameter transformer
// (Llama-2-70B shape) on a 1024-node, 8-GPU-per-node H100 cluster, against
// the 200 ms target on one core. Prints candidates evaluated per second and,
// as the baseline measured in the same run, the rate of scoring the same
// configurations one by one without the search's memoisation (Evaluate()).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/workload.h"

namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// CPU time of this thread: the search is single-threaded, so this is its time
// on one core even when the machine is shared (wall time is printed too).
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xdeep::tuner;
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 1024;
  auto w = PresetWorkload("llama-70b");
  auto hw = BuiltinHardwareProfile("h100-sxm");
  if (!w.ok() || !hw.ok()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  // 4 M tokens per step (1024 sequences of 4096), 2 T tokens; the batch may
  // range from 512 to 4096 sequences with a gradient noise scale.
  w->reference_global_batch = 1024;
  w->min_global_batch = 512;
  w->max_global_batch = 4096;
  w->batch_may_change = true;
  w->b_noise = 2048;
  w->samples = 2e12 / w->transformer.seq_len;
  w->max_micro_batch = 16;
  SearchLimits limits;
  limits.max_nodes = nodes;
  limits.price_per_gpu_hour = 2.5;

  std::vector<double> times, walls;
  SearchResult last;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuSeconds();
    auto r = Search(*w, *hw, limits);
    const double c1 = ThreadCpuSeconds();
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.ok()) {
      std::fprintf(stderr, "search failed: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    times.push_back(c1 - c0);
    walls.push_back(Seconds(t1 - t0));
    last = *std::move(r);
  }
  std::sort(times.begin(), times.end());
  std::sort(walls.begin(), walls.end());
  const double median = times[times.size() / 2];

  // Baseline: Evaluate() each of a sample of configurations from scratch.
  std::vector<Configuration> sample;
  sample.push_back(last.best.config);
  for (const Candidate& c : last.alternatives) sample.push_back(c.config);
  for (const Candidate& c : last.pareto) sample.push_back(c.config);
  const double b0 = ThreadCpuSeconds();
  int n_base = 0;
  double sink = 0;
  while (ThreadCpuSeconds() - b0 < 0.5) {
    for (const Configuration& c : sample) {
      sink += Evaluate(*w, *hw, limits, c).step_time_s;
      ++n_base;
    }
  }
  const double base_rate = n_base / (ThreadCpuSeconds() - b0);
  const double considered = static_cast<double>(last.evaluated + last.pruned);
  const double rate = considered / median;

  std::printf("workload: %s (%.1f B parameters), hardware: %s, up to %d nodes x %d GPUs\n",
              w->name.c_str(), w->Parameters() / 1e9, last.hardware_label.c_str(), nodes,
              hw->gpus_per_node);
  std::printf("best: %s on %d nodes x %d GPUs, mb %d, accumulation %d, global batch %lld%s\n",
              StrategyName(last.best.config).c_str(), last.best.config.nodes,
              last.best.config.gpus_per_node, last.best.config.micro_batch,
              last.best.config.grad_accum, static_cast<long long>(last.best.config.global_batch),
              last.best.config.recompute ? ", recompute" : "");
  std::printf("  step %.3f s, %.1f days, cost %.0f, %.1f GiB per GPU\n",
              last.best.prediction.step_time_s, last.best.prediction.time_to_solution_s / 86400,
              last.best.prediction.cost, last.best.prediction.memory_per_gpu_bytes / 1073741824.0);
  std::printf(
      "considered %.0f configurations: %llu scored (%llu feasible), %llu ruled out by the "
      "memory bound; pareto front %zu\n",
      considered, static_cast<unsigned long long>(last.evaluated),
      static_cast<unsigned long long>(last.feasible), static_cast<unsigned long long>(last.pruned),
      last.pareto.size());
  std::printf(
      "search: median %.1f ms CPU of %zu runs (min %.1f ms; wall median %.1f ms), "
      "%.2f M candidates/s\n",
      median * 1e3, times.size(), times.front() * 1e3, walls[walls.size() / 2] * 1e3, rate / 1e6);
  std::printf(
      "baseline (Evaluate one by one, no memoisation): %.3f M candidates/s -> "
      "%.1f s for the same search; speed-up %.0fx\n",
      base_rate / 1e6, considered / base_rate, rate / base_rate);
  std::printf("target 200 ms: %s (%.2f of target)%s\n", median <= 0.2 ? "MET" : "MISSED",
              median / 0.2, sink < 0 ? "" : "");
  return median <= 0.2 ? 0 : 2;
}
