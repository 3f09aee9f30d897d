// The subcommands of xdeep-probe, one class each: the constructor registers
// the subcommand and its options on the app, Run() does the work after
// parsing and returns the exit code (main.cc lists them).
//
// Exit codes: 0 all probes ran, 2 report written with errors, 1 bad usage or
// no report, 124 the whole run passed --time-limit (the watchdog wrote an
// error report).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "profiler/suites.h"

namespace xdeep::profiler {

// compute: GEMM, attention and bandwidth probes on one GPU and/or the host.
class ComputeCommand {
 public:
  explicit ComputeCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run() const;

 private:
  // The suite's options from the command line; InvalidArgument names the option.
  absl::StatusOr<ComputeSuiteOptions> SuiteOptions() const;

  CLI::App* command_;
  std::string suite_ = "cpu", shapes_file_, out_, dtypes_ = "bf16", host_bytes_ = "64M",
              device_bytes_ = "1G";
  std::vector<std::string> gemm_args_, layer_args_, attention_args_, bandwidth_kernels_;
  bool anchors_ = true, kokkos_device_ = false;
  int64_t row_length_;
  double time_limit_ = 120, probe_limit_ = 10;
  int samples_ = 20, algos_ = 1;
  double settle_ms_, warm_up_ms_, gemm_duty_;
};

// collectives: NCCL collectives over the ranks of a Slurm step (or RANK/WORLD_SIZE).
class CollectivesCommand {
 public:
  explicit CollectivesCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run() const;

 private:
  CLI::App* command_;
  std::string ops_ = "all", min_bytes_ = "1K", max_bytes_ = "1G", dtype_ = "fp32", out_;
  int factor_ = 4, samples_ = 10, warmup_ = 5;
  double init_timeout_ = 60, op_limit_ = 20, time_limit_ = 300;
};

// bootstrap: rank discovery and the rank-0 rendezvous alone, no GPU; lets CI
// check a Slurm step's bootstrap (srun -n2 xdeep-probe bootstrap) without GPUs.
class BootstrapCommand {
 public:
  explicit BootstrapCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run() const;

 private:
  CLI::App* command_;
  double timeout_ = 30;
};

// merge: reports of one kind of hardware into one (a hardware profile).
class MergeCommand {
 public:
  explicit MergeCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run() const;

 private:
  CLI::App* command_;
  std::vector<std::string> inputs_;
  std::string out_;
  bool multi_rank_ = false;
};

// validate: is a file a valid probe report?
class ValidateCommand {
 public:
  explicit ValidateCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run() const;

 private:
  CLI::App* command_;
  std::string path_;
};

}  // namespace xdeep::profiler
