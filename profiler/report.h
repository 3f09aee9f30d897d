// The probe report (schema xdeep.probe_report/1, docs/probe_report.md): what
// xdeep-probe writes and the daemon ingests. Plain structs plus JSON conversion.
//
// Readers reject an unknown schema string or a malformed entry with a message naming
// the field, rather than guessing: a wrong figure in a hardware profile silently skews
// every decision made from it.
#ifndef XDEEP_PROFILER_REPORT_H_
#define XDEEP_PROFILER_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "profiler/harness.h"

namespace xdeep::profiler {

inline constexpr char kReportSchema[] = "xdeep.probe_report/1";

// The statistics every entry carries (seconds per operation).
struct Timing {
  double median_s = 0;
  double min_s = 0;
  double p95_s = 0;
  double spread = 0;
  int64_t iterations = 0;
};
Timing TimingFrom(const ProbeResult& r);

struct GpuInfo {
  std::string name;
  int count = 0;
  int64_t memory_bytes = 0;
  int sm_count = 0;
  std::string compute_capability;
};

// The cuBLASLt algorithm a GEMM ran, or that the heuristic picks for it
// (cublasLtMatmulAlgoConfigGetAttribute), in the GEMM's own row-major terms:
// tile_m x tile_n output elements a thread block computes (cuBLAS's column-major
// tile turned around), split_k slices of k, a cluster of cluster_m x cluster_n
// blocks. Ids as this cuBLASLt numbers them; algo < 0 or no tile: not recorded.
struct GemmKernel {
  int algo = -1;
  int tile_id = 0, stages_id = 0, swizzle = 0, reduction = 0;
  int tile_m = 0, tile_n = 0;
  int split_k = 1;
  int cluster_m = 0, cluster_n = 0;  // 0: cuBLASLt's automatic choice
  bool known() const { return algo >= 0 && tile_m > 0 && tile_n > 0; }
};

struct GemmEntry {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;  // bf16 | fp16 | tf32 | fp32
  std::string pass;   // fwd | dgrad | wgrad | plain
  std::string layer;  // optional label
  Timing timing;      // none in Report::gemm_algos
  double tflops = 0;
  GemmKernel kernel;
};

struct AttentionEntry {
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  std::string dtype;
  bool causal = false;
  Timing timing;
  double tflops = 0;
};

struct BandwidthEntry {
  std::string kernel;   // copy | triad | adam_update
  std::string space;    // device | host
  std::string backend;  // cuda | kokkos
  int64_t bytes = 0;    // bytes moved per operation (read + written)
  Timing timing;
  double gbps = 0;
};

struct CollectiveEntry {
  std::string op;
  int ranks = 0;
  int nodes = 0;
  std::string scope;  // intra_node | inter_node
  int64_t bytes = 0;
  std::string dtype;
  Timing timing;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

// An eager framework's launch-bound forward + backward (profiler/framework_probe.py):
// a tiny model of the workloads' op mix at batch 1, where the GPU idles between
// kernels, so the wall time is the host's (Python, dispatcher, autograd, launch).
struct FrameworkEntry {
  std::string name;  // torch
  std::string version;
  std::string device = "cuda";  // cpu: a smoke run, no launch cost of a GPU
  std::string model;            // gpt or resnet: the shape below
  int ranks = 1;                // processes (one per GPU) that ran the passes side by side
  int batch = 0;
  int layers = 0, hidden = 0, heads = 0, ffn = 0, seq = 0, vocab = 0;  // gpt
  int depth = 0, image = 0, classes = 0;                               // resnet
  int64_t kernels = 0;           // launched in one forward + backward (torch.profiler)
  Timing timing;                 // forward + backward, wall time
  double gpu_busy_fraction = 0;  // kernel time over wall time: near 0 when launch bound
  // The same pass with the model wrapped in DistributedDataParallel and in
  // FSDP2 (on this entry's ranks, in turns with the plain pass): what DDP's
  // reducer and FSDP's hooks add on the host. 0: not measured.
  double ddp_median_s = 0;
  double fsdp_median_s = 0;
  // Host time of the AdamW step after the pass (its calls, not its kernels),
  // plain and over FSDP2's sharded parameters. 0: not measured.
  double step_host_s = 0;
  double fsdp_step_host_s = 0;
  // GPU time of the pass's elementwise kernels (norms, activations, casts, the
  // loss), for the GPT the probe runs at a training size, memory-bound. 0: not
  // measured (the launch-bound entries).
  double elementwise_s = 0;
  // Of that memory-bound GPT's pass: its attention kernels' GPU time, and the
  // elementwise kernels of its loss alone (cross-entropy over logits of the
  // pass's shape, timed apart): the blocks' own elementwise rate and
  // attention's told from the loss's. Kept by merge for analysis; the tuner
  // does not read them (bench/validate/README.md, h21k). 0: not measured.
  double attention_s = 0;
  double loss_s = 0;
  // The GPT's pass with its blocks split by torch.distributed.tensor.parallel
  // over this entry's ranks (tp_linears split Linears), and its AdamW step's
  // host time: what DTensor's dispatch adds per split Linear. 0: not measured.
  double tp_median_s = 0;
  double tp_step_host_s = 0;
  int tp_linears = 0;
  // Beside it, on the same ranks just after its turns, a Llama-style decoder of
  // the GPT's shape (q, k, v, o, gate, up, down bias-free Linears, RMSNorm,
  // rotary, SwiGLU), plain and split by library_suite.py's plan (q, k, v,
  // gate, up column-wise; o, down row-wise; llama_tp_linears of them): a
  // Llama block's TP cost, which the tuner scales from the GPT's
  // (bench/validate/README.md, h21t and h21x). Kept by merge as data; the
  // tuner does not read them: timed for a fifth of the GPT's turns, they moved
  // 60 % between calls and over-predicted TP on a same-host check (h22t,
  // session 22). 0: not measured.
  double llama_median_s = 0;
  double llama_tp_median_s = 0;
  int llama_tp_linears = 0;
  // The GPT's plain pass timed again in a second window after the other
  // networks' turns (late_after_s after its first window ended): the host's
  // speed a few seconds later. Kept by merge as data for a host reading from
  // several windows; the tuner does not read them (bench/validate/README.md,
  // "h24h, session 24"). 0: not measured.
  double late_median_s = 0;
  double late_min_s = 0;
  double late_p95_s = 0;
  double late_after_s = 0;
  // On one rank, transformers' decoders of the GPT's shape (GPT2LMHeadModel,
  // LlamaForCausalLM, GPTNeoXForCausalLM, as bench/validate/library_suite.py
  // builds and trains them) taking turns with the GPT's plain pass: per decoder
  // its median and fastest pass, its fused AdamW step's host time, its kernels
  // and forward nn.Module calls; the GPT's median in those turns and its own
  // module calls. A same-window reading of library code's host cost beside the
  // bare-PyTorch GPT (transformers' decoders ran 1.07-1.5x the step-time
  // model's ratio to the GPT's pass, by host: bench/validate/README.md, "h25h,
  // session 25" and "h26h, session 26"). Kept by merge as data; the tuner does
  // not read them. 0: not measured.
  double hf_gpt_median_s = 0;
  double hf_gpt2_median_s = 0, hf_gpt2_min_s = 0, hf_gpt2_step_host_s = 0;
  double hf_llama_median_s = 0, hf_llama_min_s = 0, hf_llama_step_host_s = 0;
  double hf_gpt_neox_median_s = 0, hf_gpt_neox_min_s = 0, hf_gpt_neox_step_host_s = 0;
  int module_calls = 0;
  int hf_gpt2_kernels = 0, hf_gpt2_module_calls = 0;
  int hf_llama_kernels = 0, hf_llama_module_calls = 0;
  int hf_gpt_neox_kernels = 0, hf_gpt_neox_module_calls = 0;
  // Entries of several ranks: the slowest rank's plain pass over the ranks'
  // mean, averaged over the turns they ran together. 0: one rank.
  double straggle = 0;
};

struct ErrorEntry {
  std::string probe;
  std::string message;
};

struct Report {
  std::string schema = kReportSchema;
  std::string created;  // RFC 3339 UTC
  std::string host;
  std::optional<GpuInfo> gpu;
  std::map<std::string, std::string> versions;
  int nodes = 1;
  int ranks = 1;
  int gpus_per_node = 0;
  double elapsed_s = 0;  // wall time of the whole probe run
  std::vector<GemmEntry> gemm;
  // The heuristic's kernel for shapes it was asked about, nothing timed
  // (xdeep-probe compute --suite gemm-heuristic).
  std::vector<GemmEntry> gemm_algos;
  std::vector<AttentionEntry> attention;
  std::vector<BandwidthEntry> bandwidth;
  std::vector<CollectiveEntry> collectives;
  std::vector<FrameworkEntry> framework;
  std::vector<ErrorEntry> errors;
};

nlohmann::json ToJson(const Report& r);
absl::StatusOr<Report> ReportFromJson(const nlohmann::json& j);
absl::StatusOr<Report> ParseReport(const std::string& text);
// Writes atomically (temporary file, then rename) so the daemon never ingests half a file.
absl::Status WriteReport(const Report& r, const std::string& path);
absl::StatusOr<Report> ReadReport(const std::string& path);

// A report with created/host filled in.
Report NewReport();

// One report from several runs on the same hardware (the compute set and the
// collective sets of each node count), as one hardware profile wants them: sections
// and errors concatenated, versions united, the largest nodes / ranks /
// gpus_per_node, elapsed_s summed. Fails when the reports name different GPUs, since
// figures of two kinds of hardware must never feed one profile.
absl::StatusOr<Report> MergeReports(const std::vector<Report>& reports);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_REPORT_H_
