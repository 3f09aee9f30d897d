// xdeep-probe: runs the probe sets and writes a probe report (docs/probe_report.md).
//
//   xdeep-probe compute --suite cpu|gpu|all [--shapes FILE] [--gemm MxNxK]... --out R.json
//   srun xdeep-probe collectives [--ops all] [--min-bytes 1K] [--max-bytes 1G] --out R.json
//   xdeep-probe validate R.json
//   xdeep-probe merge compute.json coll_2gpu.json --out profile.json
//   srun xdeep-probe bootstrap            (rank discovery + rendezvous only, no GPU)
//
// Exit codes: 0 all probes ran, 2 report written with errors, 1 bad usage or no report,
// 124 the whole run passed --time-limit (the watchdog wrote an error report).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "profiler/bandwidth_kernels.h"
#include "profiler/bootstrap.h"
#include "profiler/collective_math.h"
#include "profiler/deadline.h"
#include "profiler/gpu_probes.h"
#include "profiler/kokkos_kernels.h"
#include "profiler/report.h"
#include "profiler/shapes.h"
#include "profiler/suites.h"
#include "spdlog/spdlog.h"

namespace xp = xdeep::profiler;

namespace {

void PrintSummary(const xp::Report& r) {
  for (const auto& e : r.gemm) {
    std::printf(
        "gemm %-10s %-5s %-5s m=%-6lld n=%-6lld k=%-6lld %9.3f ms %8.1f TFLOP/s spread %.3f\n",
        e.layer.c_str(), e.pass.c_str(), e.dtype.c_str(), static_cast<long long>(e.m),
        static_cast<long long>(e.n), static_cast<long long>(e.k), e.timing.median_s * 1e3, e.tflops,
        e.timing.spread);
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

int Finish(const xp::Report& r, const std::string& out, bool write) {
  PrintSummary(r);
  if (write && !out.empty()) {
    if (absl::Status s = xp::WriteReport(r, out); !s.ok()) {
      spdlog::error("xdeep: {}", std::string(s.message()));
      return 1;
    }
  }
  return r.errors.empty() ? 0 : 2;
}

// Last resort against a call that ignores every deadline (a wedged driver): write an
// error report, then leave without running destructors that could block again.
std::unique_ptr<xp::Watchdog> StartWatchdog(double seconds, std::string out, bool write) {
  return std::make_unique<xp::Watchdog>(absl::Seconds(seconds), [seconds, out, write] {
    spdlog::error("xdeep: probe run passed its time limit of {} s; exiting", seconds);
    if (write && !out.empty()) {
      xp::Report r = xp::NewReport();
      r.errors.push_back(
          {"xdeep-probe", "run passed its time limit of " + std::to_string(seconds) + " s"});
      (void)xp::WriteReport(r, out);
    }
    std::_Exit(124);
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xdeep-probe: compute, bandwidth and collective probes for the xdeep tuner"};
  app.set_version_flag("--version", "xdeep-probe " XDEEP_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log debug detail");

  // compute
  auto* compute =
      app.add_subcommand("compute", "GEMM and bandwidth probes on one GPU and/or the host");
  std::string suite = "cpu", shapes_file, out, dtypes = "bf16", host_bytes = "64M",
              device_bytes = "1G";
  std::vector<std::string> gemm_args, layer_args, attention_args;
  double time_limit = 120, probe_limit = 10;
  int samples = 20, algos = 1;
  const xp::GemmProbeOptions gemm_defaults;
  double settle_ms = absl::ToDoubleMilliseconds(gemm_defaults.settle),
         warm_up_ms = absl::ToDoubleMilliseconds(gemm_defaults.warm_up),
         gemm_duty = gemm_defaults.duty;
  compute->add_option("--suite", suite,
                      "cpu (Kokkos host), gpu (cuBLASLt + CUDA, and Kokkos on its device), all, "
                      "or memory (the device bandwidth kernels alone, CUDA and Kokkos)")
      ->check(CLI::IsMember({"cpu", "gpu", "all", "memory"}));
  compute->add_option("--shapes", shapes_file, "JSON shapes file (schema xdeep.gemm_shapes/1)");
  bool anchors = true;
  compute->add_flag("!--no-anchors", anchors,
                    "with --shapes, skip the anchor GEMMs that pin the tuner's GEMM model");
  compute->add_option("--gemm", gemm_args, "Plain GEMM MxNxK (repeatable)");
  compute->add_option("--layer", layer_args,
                      "Linear layer name:tokens:in:out -> fwd, dgrad, wgrad (repeatable)");
  compute->add_option("--attention", attention_args,
                      "Attention batch:heads:seq:head_dim[:causal] (repeatable)");
  compute->add_option("--dtypes", dtypes,
                      "Comma list of bf16, fp16, tf32, fp32 (the shapes file may set it)");
  compute->add_option("--host-bytes", host_bytes, "Bytes per array for the host bandwidth probes");
  compute->add_option("--device-bytes", device_bytes,
                      "Bytes per array for the device bandwidth probes");
  bool kokkos_device = false;
  compute->add_flag("--kokkos-on-device", kokkos_device,
                    "With cpu: also run the Kokkos kernels on Kokkos' device space (an error "
                    "when this Kokkos has none; gpu, all and memory run them where it has one)");
  int64_t row_length = xp::DeviceBandwidthOptions{}.row_length;
  compute->add_option("--row-length", row_length,
                      "Row length of the layer_norm, softmax and bias_gelu bandwidth kernels "
                      "(a hidden size or sequence length; a multiple of 4)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20));
  std::vector<std::string> bandwidth_kernels;
  compute->add_option("--bandwidth-kernels", bandwidth_kernels,
                      "Comma list of copy, triad, adam_update, layer_norm, softmax, bias_gelu "
                      "(default: all on a device, the first three on the host)")
      ->delimiter(',');
  compute->add_option("--samples", samples, "Timed samples per probe")->check(CLI::Range(3, 1000));
  compute->add_option("--algos", algos, "cuBLASLt heuristic candidates to time per GEMM (1: the kernel cuBLAS runs)")
      ->check(CLI::Range(1, 32));
  compute->add_option("--settle-ms", settle_ms,
                      "Idle before each GEMM's warm-up, so each shape starts from the same power "
                      "state (0: back to back; for like-for-like baselines)")
      ->check(CLI::Range(0.0, 5000.0));
  compute->add_option("--warm-up-ms", warm_up_ms,
                      "GEMMs run back to back before each shape's timing, until clocks settle")
      ->check(CLI::Range(0.0, 5000.0));
  compute->add_option("--gemm-duty", gemm_duty,
                      "Share of the time GEMMs run while timed (1: back to back; training "
                      "interleaves them with memory-bound kernels)")
      ->check(CLI::Range(0.05, 1.0));
  compute->add_option("--probe-time-limit", probe_limit, "Seconds per probe");
  compute->add_option("--time-limit", time_limit, "Seconds for the whole run (watchdog)");
  compute->add_option("-o,--out", out, "Report file (JSON)");

  // collectives
  auto* coll = app.add_subcommand(
      "collectives", "NCCL collectives; ranks from srun or RANK/WORLD_SIZE/MASTER_ADDR");
  std::string ops = "all", min_bytes = "1K", max_bytes = "1G", coll_dtype = "fp32", coll_out;
  int factor = 4, coll_samples = 10, coll_warmup = 5;
  double init_timeout = 60, op_limit = 20, coll_time_limit = 300;
  coll->add_option(
      "--ops", ops,
      "all or a comma list of all_reduce,all_gather,reduce_scatter,broadcast,send_recv,all_to_all");
  coll->add_option("--min-bytes", min_bytes, "Smallest message (e.g. 1K)");
  coll->add_option("--max-bytes", max_bytes, "Largest message (e.g. 1G)");
  coll->add_option("--factor", factor, "Size multiplier between steps")->check(CLI::Range(2, 1024));
  coll->add_option("--dtype", coll_dtype, "bf16, fp16 or fp32");
  coll->add_option("--samples", coll_samples, "Timed samples per size")
      ->check(CLI::Range(1, 10000000));
  coll->add_option("--warmup", coll_warmup, "Untimed calls per size")->check(CLI::Range(0, 1000));
  coll->add_option("--init-timeout", init_timeout, "Seconds for rendezvous and NCCL init");
  coll->add_option("--op-time-limit", op_limit, "Seconds per operation and size");
  coll->add_option("--time-limit", coll_time_limit, "Seconds for the whole run (watchdog)");
  coll->add_option("-o,--out", coll_out, "Report file (JSON), written by rank 0");

  // bootstrap: rank discovery and the rendezvous alone, no GPU; lets CI check a Slurm
  // step's bootstrap (srun -n2 xdeep-probe bootstrap) on machines without GPUs.
  auto* boot = app.add_subcommand("bootstrap",
                                  "Check rank discovery and the rank-0 rendezvous (no GPU needed)");
  double boot_timeout = 30;
  boot->add_option("--timeout", boot_timeout, "Seconds for the rendezvous");

  // merge
  auto* merge = app.add_subcommand(
      "merge", "Merge reports of one kind of hardware into one (a hardware profile)");
  std::vector<std::string> merge_inputs;
  std::string merge_out;
  bool merge_multi_rank = false;
  merge->add_option("reports", merge_inputs, "Report files")->required();
  merge->add_option("-o,--out", merge_out, "Merged report")->required();
  merge->add_flag(
      "--multi-rank-collectives", merge_multi_rank,
      "Keep only collectives of 2 or more ranks (1-rank entries carry no communication)");

  // validate
  auto* validate = app.add_subcommand("validate", "Check that a file is a valid probe report");
  std::string validate_path;
  validate->add_option("report", validate_path, "Report file")->required();

  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);

  if (validate->parsed()) {
    absl::StatusOr<xp::Report> r = xp::ReadReport(validate_path);
    if (!r.ok()) {
      spdlog::error("xdeep: {}", std::string(r.status().message()));
      return 1;
    }
    std::printf("%s: valid %s, %zu gemm, %zu bandwidth, %zu collective entries, %zu errors\n",
                validate_path.c_str(), xp::kReportSchema, r->gemm.size(), r->bandwidth.size(),
                r->collectives.size(), r->errors.size());
    return 0;
  }

  if (merge->parsed()) {
    std::vector<xp::Report> in;
    for (const std::string& path : merge_inputs) {
      absl::StatusOr<xp::Report> r = xp::ReadReport(path);
      if (!r.ok()) {
        spdlog::error("xdeep: {}", std::string(r.status().message()));
        return 1;
      }
      in.push_back(*std::move(r));
    }
    absl::StatusOr<xp::Report> merged = xp::MergeReports(in);
    if (!merged.ok()) {
      spdlog::error("xdeep: {}", std::string(merged.status().message()));
      return 1;
    }
    if (merge_multi_rank) {
      std::erase_if(merged->collectives, [](const xp::CollectiveEntry& e) { return e.ranks < 2; });
    }
    if (absl::Status s = xp::WriteReport(*merged, merge_out); !s.ok()) {
      spdlog::error("xdeep: {}", std::string(s.message()));
      return 1;
    }
    return 0;
  }

  if (boot->parsed()) {
    absl::StatusOr<xp::DistEnv> env = xp::DistEnvFromEnvironment();
    if (!env.ok()) {
      spdlog::error("xdeep: {}", std::string(env.status().message()));
      return 1;
    }
    // Rank 0's token differs per run, so a peer can only print it by receiving it.
    const std::string token =
        std::to_string(getpid()) + "@" + xp::NewReport().host + "/" + xp::NewReport().created;
    absl::StatusOr<std::string> got =
        xp::ExchangeRootBlob(*env, env->rank == 0 ? token : "", absl::Seconds(boot_timeout));
    if (!got.ok()) {
      spdlog::error("xdeep: rank {}: {}", env->rank, std::string(got.status().message()));
      return 2;
    }
    std::printf("rank %d/%d local %d/%d nodes %d source %s master %s:%d token %s\n", env->rank,
                env->world_size, env->local_rank, env->local_size, env->nodes, env->source.c_str(),
                env->master_addr.c_str(), env->master_port, got->c_str());
    return 0;
  }

  if (compute->parsed()) {
    auto watchdog = StartWatchdog(time_limit, out, true);
    xp::ComputeSuiteOptions o;
    o.suite = suite;
    o.kokkos_device = kokkos_device;
    absl::StatusOr<std::vector<xp::DType>> dt = xp::ParseDTypeList(dtypes);
    if (!dt.ok()) {
      spdlog::error("xdeep: {}", std::string(dt.status().message()));
      return 1;
    }
    o.gemm.dtypes = *dt;
    if (!shapes_file.empty()) {
      absl::StatusOr<xp::ShapeSet> set = xp::ReadShapesFile(shapes_file);
      if (!set.ok()) {
        spdlog::error("xdeep: {}", std::string(set.status().message()));
        return 1;
      }
      o.gemm.gemms = set->gemms;
      o.attention.shapes = set->attention;
      if (!set->gemms.empty() && anchors) {
        for (xp::GemmSpec& g : xp::ModelAnchorGemms()) o.gemm.gemms.push_back(g);
      }
      if (!set->dtypes.empty() && compute->count("--dtypes") == 0) o.gemm.dtypes = set->dtypes;
    }
    for (const std::string& g : gemm_args) {
      absl::StatusOr<xp::GemmSpec> spec = xp::ParseGemmArg(g);
      if (!spec.ok()) {
        spdlog::error("xdeep: {}", std::string(spec.status().message()));
        return 1;
      }
      o.gemm.gemms.push_back(*spec);
    }
    for (const std::string& l : layer_args) {
      absl::StatusOr<std::vector<xp::GemmSpec>> specs = xp::ParseLayerArg(l);
      if (!specs.ok()) {
        spdlog::error("xdeep: {}", std::string(specs.status().message()));
        return 1;
      }
      o.gemm.gemms.insert(o.gemm.gemms.end(), specs->begin(), specs->end());
    }
    for (const std::string& a : attention_args) {
      absl::StatusOr<xp::AttentionSpec> spec = xp::ParseAttentionArg(a);
      if (!spec.ok()) {
        spdlog::error("xdeep: {}", std::string(spec.status().message()));
        return 1;
      }
      o.attention.shapes.push_back(*spec);
    }
    if (o.gemm.gemms.empty() && o.attention.shapes.empty()) {
      o.gemm.gemms = xp::DefaultGemms();
      o.attention.shapes = xp::DefaultAttention();
    }
    o.attention.dtypes = o.gemm.dtypes;
    absl::StatusOr<int64_t> hb = xp::ParseByteSize(host_bytes),
                            db = xp::ParseByteSize(device_bytes);
    if (!hb.ok() || !db.ok()) {
      spdlog::error("xdeep: bad --host-bytes or --device-bytes");
      return 1;
    }
    if (row_length % 4 != 0) {
      spdlog::error("xdeep: --row-length {} is not a multiple of 4", row_length);
      return 1;
    }
    // Whole rows of fp32: every kernel then sees the same elements.
    auto elements = [row_length](int64_t bytes) {
      return std::max<int64_t>(bytes / 4 / row_length, 1) * row_length;
    };
    o.host_bandwidth.elements = elements(*hb);
    o.device_bandwidth.elements = o.kokkos_device_bandwidth.elements = elements(*db);
    o.host_bandwidth.row_length = o.device_bandwidth.row_length =
        o.kokkos_device_bandwidth.row_length = row_length;
    if (!bandwidth_kernels.empty()) {
      for (const std::string& k : bandwidth_kernels) {
        if (!xp::FindBandwidthKernel(k)) {
          spdlog::error("xdeep: unknown --bandwidth-kernels entry '{}' (copy, triad, adam_update, "
                        "layer_norm, softmax, bias_gelu)", k);
          return 1;
        }
      }
      o.host_bandwidth.kernels = o.device_bandwidth.kernels = o.kokkos_device_bandwidth.kernels =
          bandwidth_kernels;
    }
    o.gemm.algo_candidates = algos;
    o.gemm.settle = absl::Milliseconds(settle_ms);
    o.gemm.warm_up = absl::Milliseconds(warm_up_ms);
    o.gemm.duty = gemm_duty;
    for (xp::HarnessOptions* h :
         {&o.gemm.harness, &o.attention.harness, &o.device_bandwidth.harness,
          &o.host_bandwidth.harness, &o.kokkos_device_bandwidth.harness}) {
      h->max_samples = samples;
      h->time_limit = absl::Seconds(probe_limit);
    }
    // Host kernels are slow per operation; fewer samples keep the CI run short.
    o.host_bandwidth.harness.max_samples = std::min(samples, 10);
    xp::kokkos::Runtime kokkos;
    if (!kokkos.error().empty()) {
      spdlog::error("xdeep: {}; run this xdeep-probe where its Kokkos device is visible, or "
                    "build one against a host Kokkos", kokkos.error());
      return 1;
    }
    absl::StatusOr<xp::Report> r = xp::RunComputeSuite(o);
    if (!r.ok()) {
      spdlog::error("xdeep: {}", std::string(r.status().message()));
      return 1;
    }
    watchdog->Cancel();
    return Finish(*r, out, true);
  }

  // collectives
  absl::StatusOr<xp::DistEnv> env = xp::DistEnvFromEnvironment();
  if (!env.ok()) {
    spdlog::error("xdeep: {}", std::string(env.status().message()));
    return 1;
  }
  auto watchdog = StartWatchdog(coll_time_limit, coll_out, env->rank == 0);
  xp::CollectiveOptions o;
  absl::StatusOr<std::vector<xp::CollectiveOp>> op_list = xp::ParseCollectiveOpList(ops);
  absl::StatusOr<int64_t> lo = xp::ParseByteSize(min_bytes), hi = xp::ParseByteSize(max_bytes);
  absl::StatusOr<xp::DType> dt = xp::ParseDType(coll_dtype);
  if (!op_list.ok() || !lo.ok() || !hi.ok() || !dt.ok() || *dt == xp::DType::kTf32) {
    spdlog::error("xdeep: bad --ops, --min-bytes, --max-bytes or --dtype");
    return 1;
  }
  o.ops = *op_list;
  o.min_bytes = *lo;
  o.max_bytes = *hi;
  o.factor = factor;
  o.dtype = *dt;
  o.samples = coll_samples;
  o.warmup = coll_warmup;
  o.init_timeout = absl::Seconds(init_timeout);
  o.op_time_limit = absl::Seconds(op_limit);
  spdlog::info("xdeep: rank {}/{} (local {}, {} node(s), from {}), rendezvous {}:{}", env->rank,
               env->world_size, env->local_rank, env->nodes, env->source, env->master_addr,
               env->master_port);
  absl::StatusOr<xp::Report> r = xp::RunCollectiveSuite(*env, o);
  if (!r.ok()) {
    spdlog::error("xdeep: {}", std::string(r.status().message()));
    return 1;
  }
  watchdog->Cancel();
  if (env->rank != 0) return r->errors.empty() ? 0 : 2;
  return Finish(*r, coll_out, true);
}
