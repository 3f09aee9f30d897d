// Summary, report and watchdog of a probe run (see probe_output.h).
#include "profiler/probe_output.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace xdeep::profiler {

void PrintSummary(const Report& r) {
  for (const auto& e : r.gemm) {
    std::printf(
        "gemm %-10s %-5s %-5s m=%-6lld n=%-6lld k=%-6lld %9.3f ms %8.1f TFLOP/s spread %.3f\n",
        e.layer.c_str(), e.pass.c_str(), e.dtype.c_str(), static_cast<long long>(e.m),
        static_cast<long long>(e.n), static_cast<long long>(e.k), e.timing.median_s * 1e3, e.tflops,
        e.timing.spread);
  }
  if (!r.gemm_algos.empty()) {
    std::map<std::pair<int, int>, int> tiles;
    for (const auto& e : r.gemm_algos) ++tiles[{e.kernel.tile_m, e.kernel.tile_n}];
    std::printf("gemm heuristic: %zu shapes, %zu tile shapes, %lld split k\n", r.gemm_algos.size(),
                tiles.size(),
                static_cast<long long>(std::count_if(r.gemm_algos.begin(), r.gemm_algos.end(),
                                                     [](const GemmEntry& e) {
                                                       return e.kernel.split_k > 1;
                                                     })));
  }
  for (const auto& e : r.attention) {
    std::printf(
        "attention b=%lld h=%lld s=%lld d=%lld %s %-5s %9.3f ms %8.1f TFLOP/s spread %.3f\n",
        static_cast<long long>(e.batch), static_cast<long long>(e.heads),
        static_cast<long long>(e.seq), static_cast<long long>(e.head_dim),
        e.causal ? "causal" : "full", e.dtype.c_str(), e.timing.median_s * 1e3, e.tflops,
        e.timing.spread);
  }
  for (const auto& e : r.bandwidth) {
    std::printf("bandwidth %-6s %-6s %-12s %12lld B %9.3f ms %8.1f GB/s spread %.3f\n",
                e.backend.c_str(), e.space.c_str(), e.kernel.c_str(),
                static_cast<long long>(e.bytes), e.timing.median_s * 1e3, e.gbps, e.timing.spread);
  }
  for (const auto& e : r.collectives) {
    std::printf("%-14s ranks=%d %12lld B %10.1f us algbw %8.2f GB/s busbw %8.2f GB/s\n",
                e.op.c_str(), e.ranks, static_cast<long long>(e.bytes), e.timing.median_s * 1e6,
                e.algbw_gbps, e.busbw_gbps);
  }
  for (const auto& e : r.errors) std::printf("error %s: %s\n", e.probe.c_str(), e.message.c_str());
  std::printf("elapsed %.2f s\n", r.elapsed_s);
}

int FinishReport(const Report& r, const std::string& out, bool write) {
  PrintSummary(r);
  if (write && !out.empty()) {
    if (absl::Status s = WriteReport(r, out); !s.ok()) {
      spdlog::error("xdeep: {}", std::string(s.message()));
      return 1;
    }
  }
  return r.errors.empty() ? 0 : 2;
}

std::unique_ptr<Watchdog> StartRunWatchdog(double seconds, std::string out, bool write) {
  return std::make_unique<Watchdog>(absl::Seconds(seconds), [seconds, out, write] {
    spdlog::error("xdeep: probe run passed its time limit of {} s; exiting", seconds);
    if (write && !out.empty()) {
      Report r = NewReport();
      r.errors.push_back(
          {"xdeep-probe", "run passed its time limit of " + std::to_string(seconds) + " s"});
      (void)WriteReport(r, out);
    }
    std::_Exit(124);
  });
}

}  // namespace xdeep::profiler
