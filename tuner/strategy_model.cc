// Per-strategy time and memory model.
//
// Sources, cited again where each formula is used:
//  [ZeRO]   Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
//           Trillion Parameter Models", SC20: 2+2+K bytes per parameter,
//           partitioning of optimizer state / gradients / parameters, and the
//           communication volume of each stage (2x, 2x, 3x the model size).
//  [MLM]    Narayanan et al., "Efficient Large-Scale Language Model Training on
//           GPU Clusters Using Megatron-LM", SC21: 1F1B and interleaved
//           schedules, bubble (p-1)/(v m), tp/dp/pp rank ordering.
//  [MLM19]  Shoeybi et al., "Megatron-LM", 2019: two all-reduces per layer in
//           forward and two in backward for tensor parallelism.
//  [ACT]    Korthikanti et al., "Reducing Activation Recomputation in Large
//           Transformer Models", MLSys 2023: activation memory per layer, its
//           split under tensor parallelism, in-flight micro-batches per stage.
//  [DDP]    Li et al., "PyTorch Distributed: Experiences on Accelerating Data
//           Parallel Training", VLDB 2020: gradient buckets (25 MB) all-reduced
//           while back-propagation goes on; the Reducer's flat bucket copy,
//           rebuilt once in the order gradients became ready (sec. 3.2.3;
//           torch/csrc/distributed/c10d/reducer.cpp, rebuild_buckets).
//  [LI19]   Li, Nicolae, Wozniak, Bosilca, SC19 workshop: back-propagation
//           overlaps the gradient all-reduce only partly.
//  [FSDP]   Zhao et al., "PyTorch FSDP", VLDB 2023: per-unit all-gather in
//           forward and backward, reduce-scatter in backward, prefetching.
//  [FA2]    Dao, "FlashAttention-2", 2023: backward ~2.5x forward FLOPs.
#include "tuner/strategy_model.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "tuner/cnn_conv_model.h"
#include "tuner/context_parallel.h"
#include "tuner/gemm_rank_shape.h"
#include "tuner/grad_sync_overlap.h"
#include "tuner/network_model.h"
#include "tuner/pipeline_engine.h"
#include "tuner/selective_recompute.h"

namespace xdeep::tuner {

namespace {

// Elements per second and SM that PyTorch's training BatchNorm statistics
// kernel reads (batch_norm_collect_statistics_channels_last_kernel: Welford's
// update, a division per element, so bound by arithmetic, not by memory).
// Profiled on one H200 at micro-batch 256 (channels_last, bf16 autocast):
// 324 G elements/s over ResNet-18/-26/-50 and Wide ResNet-50-2 (286-329 each),
// 650 GB/s of bf16 where the streaming kernels around it reach 2,300-4,400
// (bench/validate/data/checks/2026-11-27_h200x1_cnn_kernel_profile). The
// H100 is the same chip at the same clocks; elsewhere it scales with the SMs.
constexpr double kBatchNormStatisticsPerSm = 324e9 / 132;

// PyTorch's LayerNorm over the last dimension of rows of C values
// (vectorized_layer_norm_kernel and layer_norm_grad_input_kernel_vectorized,
// one block a row) takes a fixed time per row beside a time per value, so
// ConvNeXt's norms over 96-768 channels a pixel reach 10-25 % of the
// streaming bandwidth. Measured alone on one H200 (NHWC fp32, as autocast runs
// it; C 96-1152): forward 1.18 ns a row + 0.0059 ns a value, backward 0.47 +
// 0.0035 (bench/validate/data/checks/2026-11-28_h200x1_cnn_arch_check,
// calibration); per SM x 132, scaled by the card's SMs.
constexpr double kLayerNormRowFwdSmS = 1.18e-9 * 132, kLayerNormValueFwdSmS = 0.0059e-9 * 132;
constexpr double kLayerNormRowBwdSmS = 0.47e-9 * 132, kLayerNormValueBwdSmS = 0.0035e-9 * 132;

constexpr double kBucketBytes = 25.0 * 1024 * 1024;  // [DDP] default bucket_cap_mb
constexpr double kMarginFraction = 0.05;             // allocator fragmentation headroom

struct PrecisionBytes {
  double weight, grad, optimizer, compute_copy;
  DType dtype;
};

// [ZeRO] sec. 3.1: mixed precision Adam keeps 2 (fp16 weights) + 2 (fp16
// grads) + K = 12 (fp32 master, momentum, variance). PyTorch autocast keeps
// fp32 weights and gradients (4 + 4) and Adam's two fp32 moments (8), and
// creates 16-bit copies of the weights that backward keeps alive.
PrecisionBytes BytesFor(const Workload& w) {
  PrecisionBytes b{};
  const bool mixed = w.precision == Precision::kBf16Mixed;
  b.weight = mixed ? 2 : 4;
  // bf16-mixed keeps 16-bit gradients unless they are accumulated and
  // reduced in fp32 (WorkloadSettings::fp32_grad_reduce).
  b.grad = mixed && !w.settings.fp32_grad_reduce ? 2 : 4;
  b.compute_copy =
      (w.precision == Precision::kBf16Autocast || w.precision == Precision::kFp16Autocast) ? 2 : 0;
  switch (w.optimizer) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      b.optimizer = mixed ? 12 : 8;
      break;
    case OptimizerKind::kSgdMomentum:
      b.optimizer = mixed ? 8 : 4;
      break;
    case OptimizerKind::kSgd:
      b.optimizer = mixed ? 4 : 0;
      break;
  }
  if (w.precision == Precision::kFp32) {
    // PyTorch leaves TF32 off for matmuls but on for cuDNN convolutions.
    b.dtype = w.family == ModelFamily::kCnn ? DType::kTf32 : DType::kFp32;
  } else {
    b.dtype = w.precision == Precision::kFp16Autocast ? DType::kFp16 : DType::kBf16;
  }
  return b;
}

// Bytes the optimizer step reads and writes per parameter (memory bound).
// PyTorch's foreach AdamW (and its for-loop twin, the same ops one tensor at a
// time) is not fused: weight decay (8), lerp of m (12), v *= beta2 (8),
// addcmul into v (12), sqrt(v) into a temporary (8), two in-place scalings of
// it (16), addcdiv into p (16): 80 bytes. A fused kernel (fused=True; Megatron
// / Apex under kBf16Mixed) reads p, g, m, v and writes p, m, v: 28.
bool FusedOptimizer(const Workload& w) {
  return w.settings.optimizer_impl == OptimizerImpl::kFused || w.precision == Precision::kBf16Mixed;
}
// Coupled weight decay (SGD, Adam; AdamW decays the weights in place, as
// counted above) outside a fused kernel: torch.optim adds it to the gradients
// as an op of its own (grad.add(param, alpha=weight_decay)), into a new
// gradient list in a foreach step (torch._foreach_add), alive to the step's end.
bool DecayAddedToGradients(const Workload& w) {
  return w.settings.weight_decay > 0 && w.optimizer != OptimizerKind::kAdamW &&
         !FusedOptimizer(w);
}
double OptimizerTrafficBytes(const Workload& w) {
  const bool fused = FusedOptimizer(w);
  const double decay = DecayAddedToGradients(w) ? 12 : 0;  // read g and p, write the sum
  switch (w.optimizer) {
    case OptimizerKind::kAdamW:
      return fused ? 28 : 80;
    case OptimizerKind::kAdam:
      return (fused ? 28 : 80) + decay;
    case OptimizerKind::kSgdMomentum:
      return (fused ? 20 : 36) + decay;
    case OptimizerKind::kSgd:
      return (fused ? 12 : 20) + decay;
  }
  return 80;
}

// Operations the unfused optimizer issues over each parameter (foreach: one
// launch per op and chunk of tensors; for-loop: one per op and tensor):
// torch/optim/adamw.py's step count, weight decay, lerp, mul, addcmul, sqrt,
// two scalings, add of eps, addcdiv; SGD with momentum: mul, add, add.
int OptimizerOpsPerTensor(const Workload& w) {
  switch (w.optimizer) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return 10;
    case OptimizerKind::kSgdMomentum:
      return 3;
    case OptimizerKind::kSgd:
      return 1;
  }
  return 10;
}

// Figures of one pipeline rank (all its chunks), per sample where noted.
struct RankData {
  double params = 0;  // per GPU (tp-split layers divided by tp)
  double matmul_params = 0;
  // Matmul parameters of layers that full recomputation does not rebuild
  // (their 16-bit copies stay saved for backward), and the largest layer's.
  double matmul_params_kept = 0;
  double max_layer_matmul = 0;
  double act_recompute_blocks = 0;  // part of act_recompute that is a block's input
  double fsdp_units = 0;            // FSDP units on the rank (root counted once)
  double param_tensors = 0;         // parameter tensors on the rank
  double buffer_tensors = 0;        // buffers (BatchNorm statistics) on the rank
  double unit_params = 0;           // largest FSDP unit (one layer) on the rank
  double unit_pair_params = 0;      // largest two neighbouring FSDP units on the rank
  double root_params = 0;           // embedding / head: FSDP's root unit, kept gathered
  double first_layer_params = 0;    // the model's first layer (embedding), rank 0 only
  double ddp_buckets = 0;           // DDP's gradient buckets of the rank (DdpBuckets)
  double act_full = 0;              // saved activations per sample, no recomputation
  double act_recompute = 0;         // saved activations per sample with full recomputation
  double max_layer_act = 0;         // largest single layer's activations (recomputed in backward)
  double max_layer_core = 0;        // largest attention core selective recomputation rebuilds
  double input_bytes = 0;           // input batch held on the first rank
  double logits_bytes = 0;          // per sample, the rank holding the loss
  double logits_entries = 0;        // per sample: the logits' count, the same rank
  double forward_cache = 0;         // per sample: built in forward, dropped before backward
  double act_casts = 0;             // of act_full, 16-bit casts of an fp32 residual stream
  double send_bytes = 0;            // activations a chunk sends on, per sample
  double recv_bytes = 0;            // activations a chunk receives, per sample (0: first)
  int chunks = 1;
};

// Per-micro-batch times of one rank.
struct RankTimes {
  double fwd = 0, bwd = 0;  // compute
  double tp_comm_fwd = 0;   // tensor-parallel all-reduces in one forward
  double cp_comm_fwd = 0;   // context parallel: keys and values all-gathered in one forward
  double launch_fwd = 0;    // host time to launch one forward's kernels
  // DTensor's dispatch of the split Linears in one forward: host work
  // between launches (sharding propagation, wrapping, redistribution), during
  // which the GPU drains what was queued (LaunchedPass's host-only part).
  double dtensor_fwd = 0;
};

// A pipeline partition and the ranks that can be the worst one. Rank i is
// left out when an earlier rank j < i is at least as large in every figure the
// memory model uses: j also holds at least as many micro-batches in flight
// (the warm-up count falls with the rank), so i can never exceed j. Memory is
// non-decreasing in each figure, so this is exact, not a heuristic; for
// transformers only the first and last ranks remain.
struct Partitioned {
  std::vector<RankData> ranks;
  std::vector<int> memory_ranks;
};
struct Timed {
  std::vector<RankTimes> times;
  std::vector<int> time_ranks;  // same rule for the step-time figures
};

bool MemoryDominates(const RankData& a, const RankData& b) {
  return a.params >= b.params && a.matmul_params >= b.matmul_params &&
         a.matmul_params_kept >= b.matmul_params_kept && a.max_layer_matmul >= b.max_layer_matmul &&
         a.act_recompute_blocks >= b.act_recompute_blocks && a.unit_params >= b.unit_params &&
         a.unit_pair_params >= b.unit_pair_params && a.root_params >= b.root_params &&
         a.act_full >= b.act_full && a.act_recompute >= b.act_recompute &&
         a.max_layer_act >= b.max_layer_act && a.max_layer_core >= b.max_layer_core &&
         a.input_bytes >= b.input_bytes && a.logits_bytes >= b.logits_bytes &&
         a.forward_cache >= b.forward_cache && a.act_casts >= b.act_casts;
}

// Step time per micro-batch is non-decreasing in each of these (the overlap
// terms enter as max(compute, communication)), so dominance is exact here too.
bool TimeDominates(const RankData& a, const RankTimes& ta, const RankData& b, const RankTimes& tb) {
  return ta.fwd >= tb.fwd && ta.bwd >= tb.bwd && ta.tp_comm_fwd >= tb.tp_comm_fwd &&
         ta.dtensor_fwd >= tb.dtensor_fwd &&
         ta.cp_comm_fwd >= tb.cp_comm_fwd && ta.launch_fwd >= tb.launch_fwd &&
         a.send_bytes >= b.send_bytes && a.recv_bytes >= b.recv_bytes && a.chunks >= b.chunks &&
         a.params >= b.params && a.unit_params >= b.unit_params && a.root_params >= b.root_params &&
         a.fsdp_units >= b.fsdp_units && a.param_tensors >= b.param_tensors &&
         a.buffer_tensors >= b.buffer_tensors;
}

}  // namespace

struct StrategyModel::Impl {
  const Workload& w;
  const HardwareProfile& hw;
  PrecisionBytes pb;
  int transformer_blocks = 0;
  std::unordered_map<uint64_t, Partitioned> partitions;  // (tp, pp, v)
  std::unordered_map<uint64_t, Timed> times;             // (tp, pp, v, mb)
  std::unordered_map<uint64_t, CollectiveLine> lines;    // (op, ranks, ranks per node)

  // One-entry caches in front of the maps: a search asks for the same layout
  // and group many times in a row.
  uint64_t last_line_key[4] = {~0ull, ~0ull, ~0ull, ~0ull};
  const CollectiveLine* last_line[4] = {};
  const CollectiveLine& Line(CollectiveOp op, int ranks, int rpn) {
    const int o = static_cast<int>(op);
    const uint64_t key = (uint64_t(ranks) << 24) | uint64_t(rpn);
    if (key == last_line_key[o]) return *last_line[o];
    const uint64_t full = (uint64_t(o) << 56) | key;
    auto it = lines.find(full);
    if (it == lines.end())
      it = lines.emplace(full, CollectiveCoefficients(hw, op, ranks, rpn)).first;
    last_line_key[o] = key;
    last_line[o] = &it->second;
    return it->second;
  }
  double Coll(CollectiveOp op, double bytes, int ranks, int rpn) {
    if (ranks <= 1) return 0;
    return Line(op, ranks, rpn).At(bytes);
  }
  double ideal_per_sample = -1;

  int cp = 1;  // the context-parallel degree this model's workload is split for

  Impl(const Workload& wl, const HardwareProfile& h, int context_parallel = 1)
      : w(wl), hw(h), pb(BytesFor(wl)), cp(context_parallel) {
    // A transformer's blocks are one layer repeated: Times computes each
    // distinct layer once per (tp, micro-batch) and adds its figures again.
    layer_class.resize(w.layers.size());
    for (size_t i = 0; i < w.layers.size(); ++i) {
      layer_class[i] = static_cast<int>(i);
      if (i > 0 && SameTimes(w.layers[i], w.layers[i - 1])) layer_class[i] = layer_class[i - 1];
    }
  }
  std::vector<int> layer_class;  // index of the first of a run of layers Times sees as one

  // Whether two layers' figures in Times are the same (every field it reads).
  static bool SameTimes(const LayerCost& a, const LayerCost& b) {
    auto same_gemms = [](const std::vector<GemmShape>& x, const std::vector<GemmShape>& y) {
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (x[i].m_per_sample != y[i].m_per_sample || x[i].n != y[i].n || x[i].k != y[i].k)
          return false;
      }
      return true;
    };
    return same_gemms(a.gemms, b.gemms) && a.grouped_convs == b.grouped_convs &&
           a.tp_split_n == b.tp_split_n && a.tp_split_m == b.tp_split_m &&
           a.tp_capable == b.tp_capable && a.vocab_parallel == b.vocab_parallel &&
           a.attention_flops == b.attention_flops &&
           a.attention_core_recomputed == b.attention_core_recomputed &&
           a.saved_activation_bytes == b.saved_activation_bytes &&
           a.tp_split_activation_bytes == b.tp_split_activation_bytes &&
           a.extra_traffic_fwd_bytes == b.extra_traffic_fwd_bytes &&
           a.extra_traffic_bwd_bytes == b.extra_traffic_bwd_bytes && a.kernels == b.kernels &&
           a.fused_kernels == b.fused_kernels && a.library_kernels == b.library_kernels &&
           a.cp_kv_bytes == b.cp_kv_bytes && a.tp_allreduces_fwd == b.tp_allreduces_fwd &&
           a.tp_comm_bytes == b.tp_comm_bytes && a.input_gradient == b.input_gradient &&
           a.batch_norm_statistics_elements == b.batch_norm_statistics_elements &&
           a.layer_norm_rows == b.layer_norm_rows && a.layer_norm_width == b.layer_norm_width &&
           a.elementwise_fwd_passes == b.elementwise_fwd_passes &&
           a.elementwise_bwd_passes == b.elementwise_bwd_passes;
  }

  // Contiguous chunks: transformer blocks evenly ([MLM]; embedding with the
  // first chunk, head with the last); other tables greedily by FLOPs.
  double chunk_total_flops = -1;  // the table's FLOPs summed once, not per layout
  std::vector<std::pair<int, int>> Chunks(int n) {
    std::vector<std::pair<int, int>> out;
    const int L = static_cast<int>(w.layers.size());
    if (w.family == ModelFamily::kTransformer && w.settings.pipeline_ends_as_layers) {
      // The embedding and the head take a block's place: all L layers evenly.
      for (int i = 0; i < n; ++i)
        out.push_back({int(int64_t{i} * L / n), int(int64_t{i + 1} * L / n)});
      return out;
    }
    if (w.family == ModelFamily::kTransformer) {
      const int blocks = L - 2;
      const int per = std::max(1, blocks / n);
      for (int i = 0; i < n; ++i) {
        int lo = 1 + i * per, hi = (i == n - 1) ? L - 1 : 1 + (i + 1) * per;
        if (i == 0) lo = 0;
        if (i == n - 1) hi = L;
        out.push_back({lo, hi});
      }
      return out;
    }
    if (chunk_total_flops < 0) {
      chunk_total_flops = 0;
      for (const LayerCost& l : w.layers) chunk_total_flops += l.fwd_flops + 1;
    }
    const double total = chunk_total_flops;
    int lo = 0;
    double acc = 0;
    for (int i = 0; i < L && static_cast<int>(out.size()) < n - 1; ++i) {
      acc += w.layers[i].fwd_flops + 1;
      const int remaining_layers = L - (i + 1);
      const int remaining_chunks = n - 1 - static_cast<int>(out.size());
      if (acc >= total * (out.size() + 1) / n || remaining_layers == remaining_chunks) {
        out.push_back({lo, i + 1});
        lo = i + 1;
      }
    }
    out.push_back({lo, L});
    return out;
  }

  uint64_t last_partition_key = ~0ull;
  const Partitioned* last_partition = nullptr;
  const Partitioned& Partition(int tp, int pp, int v) {
    const uint64_t key = (uint64_t(tp) << 40) | (uint64_t(pp) << 16) | uint64_t(v);
    if (key == last_partition_key) return *last_partition;
    auto it = partitions.find(key);
    if (it != partitions.end()) {
      last_partition_key = key;
      last_partition = &it->second;
      return it->second;
    }
    std::vector<RankData> ranks(pp);
    const auto chunks = Chunks(pp * v);
    const int L = static_cast<int>(w.layers.size());
    // A unit split by a stage boundary counts per stage. Keys view the
    // workload's own strings (a generic table names a unit per layer: 100k).
    absl::flat_hash_map<std::string_view, double> unit_sum;
    for (int c = 0; c < static_cast<int>(chunks.size()); ++c) {
      RankData& r = ranks[c % pp];
      r.chunks = v;
      unit_sum.clear();
      unit_sum.reserve(chunks[c].second - chunks[c].first);
      const std::string* current_unit = nullptr;
      double previous_unit = 0;  // the neighbour FSDP prefetches next to the current unit
      for (int i = chunks[c].first; i < chunks[c].second; ++i) {
        const LayerCost& l = w.layers[i];
        const double div = TpWays(l, w.settings.tensor_parallel, tp);
        r.params += l.params / div;
        r.matmul_params += l.matmul_params / div;
        r.param_tensors += ParamTensors(l);
        r.buffer_tensors += l.buffer_tensors;
        const bool recomputed = l.recompute_saved_bytes < l.saved_activation_bytes;
        if (recomputed) {
          r.max_layer_matmul = std::max(r.max_layer_matmul, l.matmul_params / div);
          r.act_recompute_blocks += l.recompute_saved_bytes;
        } else {
          r.matmul_params_kept += l.matmul_params / div;
        }
        if (l.unit.empty()) {
          if (r.root_params == 0 && l.params > 0) r.fsdp_units += 1;
          r.root_params += l.params / div;
        } else {
          double& sum = unit_sum[l.unit];
          if (sum == 0) r.fsdp_units += 1;
          if (current_unit != nullptr && *current_unit != l.unit) {
            previous_unit = unit_sum[*current_unit];
          }
          current_unit = &l.unit;
          sum += l.params / div;
          r.unit_params = std::max(r.unit_params, sum);
          r.unit_pair_params = std::max(r.unit_pair_params, sum + previous_unit);
        }
        const double act = (l.saved_activation_bytes - l.tp_split_activation_bytes) +
                           l.tp_split_activation_bytes / tp +
                           (l.memory_only_saved_bytes - l.memory_only_tp_split_bytes) +
                           l.memory_only_tp_split_bytes / tp;
        r.act_full += act;
        r.forward_cache += l.forward_cache_bytes / div;
        r.act_casts += l.memory_only_cast_bytes;
        r.act_recompute += l.recompute_saved_bytes;
        r.max_layer_act = std::max(r.max_layer_act, act);
        if (l.attention_core_recomputed) {
          r.max_layer_core = std::max(r.max_layer_core, l.attention_core_bytes / div);
        }
        if (i == 0) {
          r.input_bytes = w.input_bytes_per_sample;
          r.first_layer_params = l.params / div;
        }
        if (i == L - 1 && w.family == ModelFamily::kTransformer) {
          // A classifier's head (head_tokens) makes one row of logits per pooled token.
          const int rows = w.transformer.head_tokens > 0
                               ? std::min(w.transformer.head_tokens, w.transformer.seq_len)
                               : w.transformer.seq_len;
          r.logits_entries = double(rows) * w.transformer.vocab / div;
          r.logits_bytes =
              r.logits_entries * LogitsBytesPerEntry(w.precision, w.settings.fp32_logits);
        }
        if (i == chunks[c].second - 1 && i != L - 1) {
          r.send_bytes = std::max(r.send_bytes, l.output_bytes);
        }
        if (i == chunks[c].first && i != 0) {
          r.recv_bytes = std::max(r.recv_bytes, w.layers[i - 1].output_bytes);
        }
      }
    }
    // DDP's buckets, each rank's gradients in the order backward makes them:
    // its last chunk's last layer first.
    for (int rank = 0; rank < pp; ++rank) {
      DdpBuckets buckets;
      for (int c = static_cast<int>(chunks.size()) - 1; c >= 0; --c) {
        if (c % pp != rank) continue;
        for (int i = chunks[c].second - 1; i >= chunks[c].first; --i) {
          const LayerCost& l = w.layers[i];
          buckets.Add(l.params / TpWays(l, w.settings.tensor_parallel, tp) * pb.grad, ParamTensors(l));
        }
      }
      ranks[rank].ddp_buckets = buckets.count();
    }
    // A tied head on another stage than the embedding holds its own copy of
    // the shared matrix (Megatron-LM's last stage allocates one and
    // all-reduces its gradient with the first stage's; a model split by
    // torch.distributed.pipelining simply has two): weights, gradients and
    // optimizer state there too (2x H100, Qwen2-0.5B's last stage at PP=2
    // -24..-28 % without it, bench/validate/data/calibration).
    const int n_chunks = static_cast<int>(chunks.size());
    if (w.family == ModelFamily::kTransformer && w.transformer.tied_embeddings && L > 0 &&
        n_chunks > 1 && (n_chunks - 1) % pp != 0) {
      const LayerCost& head = w.layers[L - 1];
      RankData& r = ranks[(n_chunks - 1) % pp];
      r.params += double(w.transformer.vocab) * w.transformer.hidden /
                  TpWays(head, w.settings.tensor_parallel, tp);
      r.param_tensors += 1;
    }
    Partitioned out;
    for (int i = 0; i < pp; ++i) {
      bool dominated = false;
      for (int j : out.memory_ranks) dominated = dominated || MemoryDominates(ranks[j], ranks[i]);
      if (!dominated) out.memory_ranks.push_back(i);
    }
    out.ranks = std::move(ranks);
    return partitions.emplace(key, std::move(out)).first->second;
  }

  // GEMM time; shapes repeat across layers and configurations, so results
  // are memoised (the model itself is cheap, the hash cheaper). Open
  // addressing with absl's hash: the lookup is most of a search's time, and
  // shape doubles (whole numbers: zero low mantissa bits) need its mixing.
  absl::flat_hash_map<std::array<double, 4>, double> gemm_cache;
  GemmModel gemm_model{hw, pb.dtype};
  // The last shape per layout in front of the map: layers alike in a row
  // (transformer blocks, a generic table) ask for the same shapes again.
  std::array<double, 4> last_gemm_key[3] = {};
  double last_gemm[3] = {-1, -1, -1};
  double Gemm(double m, double n, double k, GemmLayout layout = GemmLayout::kForward) {
    const std::array<double, 4> key{m, n, k, static_cast<double>(layout)};
    const int slot = static_cast<int>(layout);
    if (last_gemm[slot] >= 0 && last_gemm_key[slot] == key) return last_gemm[slot];
    auto it = gemm_cache.find(key);
    double t;
    if (it != gemm_cache.end()) {
      t = it->second;
    } else {
      t = gemm_model.Seconds(m, n, k, layout);
      gemm_cache.emplace(key, t);
    }
    last_gemm_key[slot] = key;
    last_gemm[slot] = t;
    return t;
  }

  uint64_t last_times_key = ~0ull;
  const Timed* last_times = nullptr;
  // Open-addressing index in front of the map (whose nodes stay put): a
  // search looks these up per group. (A direct-mapped table of every small
  // key cost a 512 KB clear per model, a tenth of an uncached decision.)
  absl::flat_hash_map<uint64_t, const Timed*> times_index;
  const Timed& Times(int tp, int pp, int v, int mb) {
    const uint64_t key =
        (uint64_t(tp) << 48) | (uint64_t(pp) << 32) | (uint64_t(v) << 24) | uint64_t(mb);
    if (key == last_times_key) return *last_times;
    if (auto hit = times_index.find(key); hit != times_index.end()) {
      last_times_key = key;
      last_times = hit->second;
      return *last_times;
    }
    auto it = times.find(key);
    if (it != times.end()) {
      last_times_key = key;
      last_times = &it->second;
      times_index.emplace(key, last_times);
      return it->second;
    }
    std::vector<RankTimes> out(pp);
    const auto chunks = Chunks(pp * v);
    const double elementwise_bw =
        std::max(1.0, hw.elementwise_bandwidth_gbps > 0 ? hw.elementwise_bandwidth_gbps
                                                        : hw.memory_bandwidth_gbps) *
        1e9;
    const double host_per_kernel =
        w.family != ModelFamily::kCnn         ? hw.host_overhead_per_kernel_s
        : hw.host_overhead_per_kernel_cnn_s > 0 ? hw.host_overhead_per_kernel_cnn_s
                                                : hw.host_overhead_per_kernel_s * hw.cnn_host_op_ratio;
    const double tp_host_per_linear = hw.tp_host_per_linear_s > 0
                                          ? hw.tp_host_per_linear_s
                                          : hw.tp_linear_host_kernels * host_per_kernel;
    // The profile's attention efficiency is FlashAttention's (the probe runs
    // sdpa at 16 bits). The memory-efficient kernel (xformers' CUTLASS
    // kernel) reaches about half of FlashAttention-2's forward + backward
    // throughput at head sizes 64-128 (Dao 2023, fig. 4-5, A100).
    const double attention_rate =
        w.family == ModelFamily::kTransformer && ResolvedAttention(w) == AttentionKernel::kEfficient
            ? 0.5
            : 1.0;
    // torch.compile fuses each chain of elementwise ops into one kernel that
    // reads its inputs once and writes its outputs once, where eager writes
    // and rereads every intermediate (ElementwiseBytes counts ~4x a saved
    // activation forward): about half the traffic, and fewer launches.
    const bool compiled = w.settings.compile;
    const double fused_traffic = compiled ? 0.5 : 1.0;
    const ConvDevice conv_device{elementwise_bw, std::max(1, hw.sm_count),
                                 ActivationBytes(w.precision)};
    const GemmTimeFn gemm_seconds = [this](double m, double n, double k, GemmLayout layout) {
      return Gemm(m, n, k, layout);
    };
    // One layer's figures; each addend kept apart, so a repeated layer adds
    // exactly what computing it again would.
    struct LayerFigures {
      double fwd = 0, bwd = 0, launch = 0, dtensor_launch = 0, cp_comm = 0, tp_comm = 0;
    };
    auto layer_figures = [&](const LayerCost& l) {
      LayerFigures out_l;
      const int t = TpWays(l, w.settings.tensor_parallel, tp);
      double fwd = 0, bwd = 0, core_fwd = 0;
      for (size_t g = 0; g < l.gemms.size(); ++g) {
        const auto [m, n, k, split_m] = RankGemmShape(l, g, mb, t);
        const double f = Gemm(m, n, k, GemmLayout::kForward);
        fwd += f;
        if (split_m) core_fwd += f;  // attention's batched GEMMs over heads
        // dgrad (tokens x in x out) and wgrad (out x in x tokens), oriented
        // and stored as xdeep-probe measures a layer (profiler/shapes.cc
        // LayerGemms): which dimensions lead decides their alignment.
        if (l.input_gradient) bwd += Gemm(m, k, n, GemmLayout::kDgrad);
        bwd += Gemm(n, k, m, GemmLayout::kWgrad);
      }
      // Depthwise and grouped convolutions (CNNs beyond ResNet / VGG): their
      // own kernels, not GEMMs (tuner/cnn_conv_model.h).
      for (const GroupedConv& gc : l.grouped_convs) {
        fwd += GroupedConvSeconds(gc, mb, ConvPass::kForward, conv_device, gemm_seconds);
        if (l.input_gradient) {
          bwd += GroupedConvSeconds(gc, mb, ConvPass::kDgrad, conv_device, gemm_seconds);
        }
        bwd += GroupedConvSeconds(gc, mb, ConvPass::kWgrad, conv_device, gemm_seconds);
      }
      // [ACT] sec. 5: selective recomputation runs the core's GEMMs forward
      // again in backward (its elementwise passes are in the layer's traffic).
      if (l.attention_core_recomputed) bwd += core_fwd;
      if (l.attention_flops > 0) {
        double ref = 100.0;  // TFLOP/s; only for a table row with attention but no GEMM
        if (!l.gemms.empty()) {
          const double m = l.gemms[0].m_per_sample * mb, n = double(l.gemms[0].n) / t,
                       k = double(l.gemms[0].k);
          ref = 2.0 * m * n * k / Gemm(m, n, k) / 1e12;
        }
        const double rate = ref * hw.attention_efficiency * attention_rate * 1e12;
        const double fa = l.attention_flops * mb / t / rate;
        fwd += fa;
        bwd += 2.5 * fa;  // [FA2] five matmuls in backward against two forward
      }
      // Elementwise work is memory bound, at the bandwidth eager kernels reach.
      const ElementwiseTraffic e = ElementwiseBytes(l, t);
      fwd += fused_traffic * e.fwd * mb / elementwise_bw;
      bwd += fused_traffic * e.bwd * mb / elementwise_bw;
      // BatchNorm's statistics pass: one of those passes, at the rate its
      // arithmetic allows where that is slower than the memory (eager only:
      // torch.compile generates its own reduction).
      if (l.batch_norm_statistics_elements > 0 && !compiled) {
        const double elements = l.batch_norm_statistics_elements * mb;
        const double streamed = elements * ActivationBytes(w.precision) / elementwise_bw;
        const double counted = elements / (kBatchNormStatisticsPerSm * std::max(1, hw.sm_count));
        fwd += std::max(0.0, counted - streamed);
      }
      if (l.layer_norm_rows > 0) {
        const double rows = l.layer_norm_rows * mb / std::max(1, hw.sm_count);
        fwd += rows * (kLayerNormRowFwdSmS + kLayerNormValueFwdSmS * l.layer_norm_width);
        bwd += rows * (kLayerNormRowBwdSmS + kLayerNormValueBwdSmS * l.layer_norm_width);
      }
      out_l.fwd = fwd;
      out_l.bwd = bwd;
      // Host time: the ops the framework issues (a library's own launches
      // inside one of them cost the host little).
      const int kernels =
          compiled && l.fused_kernels > 0 ? l.fused_kernels : l.kernels - l.library_kernels;
      out_l.launch = kernels * host_per_kernel;
      // cuDNN's own host work on its sliced grouped path, per step (a third
      // to the forward, whose launches the step counts 3x).
      for (const GroupedConv& gc : l.grouped_convs) {
        out_l.launch += GroupedConvHostOps(gc) / 3 * host_per_kernel;
      }
      if (t > 1 && w.settings.tensor_parallel == TensorParallel::kDTensor) {
        // Each split Linear's DTensor dispatch, over forward and backward
        // (backward's launches are counted at twice the forward's), at the
        // probe's figure per split Linear on its ranks. The block's other
        // launches run at the host's own speed: on one 2x H200 host a
        // transformers Llama block under TP=2 cost its plain launches side by
        // side plus 7 times what TP adds to the probe's GPT block per split
        // Linear (1.0x within 10 %), and the ranks' meetings are one per split
        // Linear, not a factor on every launch (the two-rank minus one-rank
        // add per split Linear is the same for the GPT and a Llama block:
        // bench/validate/data/checks/2026-11-28_h200x2_tp_host_check,
        // 2026-11-28_h200x2_host_depth_tp).
        const int linears =
            l.tp_split_linears > 0 ? l.tp_split_linears : static_cast<int>(l.gemms.size());
        out_l.dtensor_launch = static_cast<double>(linears) * tp_host_per_linear / 3;
      }
      if (cp > 1 && l.cp_kv_bytes > 0) {
        // Keys and values of the whole sequence gathered before attention
        // (Llama 3 sec. 3.3.2: all-gather, not overlapped); cp ranks sit
        // next to the tensor-parallel group in rank order.
        const int cp_rpn = std::clamp(hw.gpus_per_node / std::max(1, tp), 1, cp);
        out_l.cp_comm = Coll(CollectiveOp::kAllGather, l.cp_kv_bytes * mb, cp, cp_rpn);
      }
      if (t > 1 && l.tp_allreduces_fwd > 0) {
        // [MLM19] all-reduces of the layer output inside the tp group.
        out_l.tp_comm =
            l.tp_allreduces_fwd * Coll(CollectiveOp::kAllReduce, l.tp_comm_bytes * mb, t, t);
      }
      return out_l;
    };
    std::vector<LayerFigures> figures(w.layers.size());
    std::vector<char> known(w.layers.size(), 0);
    for (int c = 0; c < static_cast<int>(chunks.size()); ++c) {
      RankTimes& r = out[c % pp];
      for (int i = chunks[c].first; i < chunks[c].second; ++i) {
        const int k = layer_class[i];
        if (!known[k]) {
          figures[k] = layer_figures(w.layers[i]);
          known[k] = 1;
        }
        const LayerFigures& f = figures[k];
        r.fwd += f.fwd;
        r.bwd += f.bwd;
        r.launch_fwd += f.launch;
        r.dtensor_fwd += f.dtensor_launch;
        r.cp_comm_fwd += f.cp_comm;
        r.tp_comm_fwd += f.tp_comm;
      }
    }
    if (mb > 1) {
      // Time per sample never rises with the micro-batch: mb samples can
      // always run as two micro-batches of half the size, one after the
      // other. A GEMM time extrapolated super-linearly beyond the probed
      // shapes would say otherwise (issue 19); memory, the one thing that
      // grows, is the memory model's to judge.
      const int half = mb / 2;
      const std::vector<RankTimes> smaller = Times(tp, pp, v, half).times;  // copy: the map grows
      const double scale = double(mb) / half;
      for (int i = 0; i < pp; ++i) {
        out[i].fwd = std::min(out[i].fwd, scale * smaller[i].fwd);
        out[i].bwd = std::min(out[i].bwd, scale * smaller[i].bwd);
      }
    }
    const Partitioned& part = Partition(tp, pp, v);
    Timed timed;
    for (int i = 0; i < pp; ++i) {
      bool dominated = false;
      for (int j : timed.time_ranks) {
        dominated = dominated || TimeDominates(part.ranks[j], out[j], part.ranks[i], out[i]);
      }
      if (!dominated) timed.time_ranks.push_back(i);
    }
    timed.times = std::move(out);
    return times.emplace(key, std::move(timed)).first->second;
  }
};

namespace {
// Time of a pass whose kernels take `device` seconds on the GPU and `host`
// seconds to launch. Launches are asynchronous, so the larger bounds it; but
// a pass mixes launch-bound kernels (norms, activations) with GPU-bound ones
// (GEMMs) and the host cannot run ahead of the GPU by more than the work
// queued, so near the crossover both show: an L2 combination, which on 2x
// H200 puts GPT-1.3B micro-batches 2-16 within 2 % and GPT-125M's
// crossover (micro-batch 4) within 10 % where the larger alone is 25 % short
// (bench/validate/data/calibration/2026-11-26_h200x2_calibration).
double HostAndDevice(double device, double host) {
  return std::sqrt(device * device + host * host);
}

// A forward pass whose host also runs work that launches none of its kernels
// (FSDP2's pre-forward hooks between units): the host does not wait for the
// GPU there, so the GPU drains the kernels queued before -- the GPU time that
// the launches' combination (HostAndDevice) leaves unhidden hides behind that
// work first. Backward keeps the plain combination: there each unit's
// post-backward hook makes the compute stream wait for the previous unit's
// reduce-scatter (FSDP2's reduce_scatter_state event), so the GPU's queue
// does not run ahead of the collectives.
double LaunchedPass(double device, double launches, double host_only) {
  return std::max(HostAndDevice(device, launches), launches + host_only);
}

// E[max of n independent standard normal draws]: n * integral of x phi(x)
// Phi(x)^(n-1), by the trapezoid rule over [-8, 8] (exact to ~1e-9 here).
double ExpectedMaxOfNormals(int n) {
  if (n <= 1) return 0;
  constexpr int kSteps = 1600;
  constexpr double kLo = -8, kHi = 8, h = (kHi - kLo) / kSteps;
  double sum = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double x = kLo + i * h;
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    sum += (i == 0 || i == kSteps ? 0.5 : 1.0) * x * phi * std::pow(cdf, n - 1);
  }
  return n * sum * h;
}

}  // namespace

// A synchronous step of n ranks ends when the slowest rank's host has
// launched its work: where launch-bound, its host time is the expected
// maximum of n draws of one host's pass-to-pass spread (normal, coefficient
// of variation cv) -- the straggler effect of synchronous SGD (Chen et al.,
// "Revisiting Distributed Synchronous SGD", 2016).
double StragglerFactor(int ranks, double cv) {
  constexpr int kMaxLog2 = 12;                     // 4096 ranks; beyond, the maximum grows slowly
  static const std::vector<double> kByLog2 = [] {  // E[max of 2^k draws]
    std::vector<double> t;
    for (int k = 0; k <= kMaxLog2; ++k) t.push_back(ExpectedMaxOfNormals(1 << k));
    return t;
  }();
  if (ranks <= 1 || cv <= 0) return 1;
  // Between powers of two, linear in log2(ranks).
  const double lg = std::min<double>(std::log2(ranks), kMaxLog2);
  const int lo = std::min(static_cast<int>(lg), kMaxLog2 - 1);
  const double e = kByLog2[lo] + (lg - lo) * (kByLog2[lo + 1] - kByLog2[lo]);
  return 1 + cv * e;
}

struct StrategyModel::Variant {
  int key = 0;
  std::unique_ptr<Workload> workload;  // Impl keeps a reference: a stable address
  std::unique_ptr<Impl> impl;
};

StrategyModel::StrategyModel(const Workload& w, const HardwareProfile& hw)
    : w_(w), hw_(hw), impl_(std::make_unique<Impl>(w, hw)) {}
StrategyModel::~StrategyModel() = default;

StrategyModel::Impl& StrategyModel::For(const Configuration& c) {
  const bool sp = c.sequence_parallel && c.tp > 1;
  const bool selective = c.selective_recompute && !c.recompute;
  if (c.cp <= 1 && !sp && !selective) return *impl_;
  const int key = std::max(1, c.cp) * 4 + (sp ? 2 : 0) + (selective ? 1 : 0);
  if (key == last_variant_key_) return *last_variant_;
  for (const auto& v : variants_) {
    if (v->key == key) {
      last_variant_key_ = key;
      last_variant_ = v->impl.get();
      return *last_variant_;
    }
  }
  auto v = std::make_unique<Variant>();
  v->key = key;
  Workload per_rank = PerRankWorkload(w_, std::max(1, c.cp), sp);
  v->workload = std::make_unique<Workload>(selective ? WithSelectiveRecompute(per_rank)
                                                     : std::move(per_rank));
  v->impl = std::make_unique<Impl>(*v->workload, hw_, std::max(1, c.cp));
  last_variant_key_ = key;
  last_variant_ = v->impl.get();
  variants_.push_back(std::move(v));
  return *last_variant_;
}

namespace {

int VirtualStages(const Configuration& c) {
  return (c.pp > 1 && c.schedule == PipelineSchedule::kInterleaved) ? std::max(1, c.virtual_stages)
                                                                    : 1;
}

// Ranks of one group on a node. [MLM] sec. 3.2 orders ranks tp first, then dp,
// then pp, so tp stays inside a node and dp groups span nodes last.
int DpRanksPerNode(const Configuration& c) {
  return std::max(1, std::min(c.dp, c.gpus_per_node / std::max(1, c.tp)));
}
int PpRanksPerNode(const Configuration& c) { return c.tp * c.dp < c.gpus_per_node ? 2 : 1; }

// Micro-batches whose activations a pipeline rank holds at once.
double InFlight(const Configuration& c, int rank, int v) {
  const int p = c.pp, m = c.grad_accum;
  if (p == 1) return 1;
  if (v == 1) return std::min(p - rank, m);  // [MLM] 1F1B: p - rank warm-up micro-batches
  // [MLM] interleaved (Megatron's schedule): (p - rank - 1) * 2 + (v - 1) * p
  // warm-up chunk-micro-batches plus the one in progress, each 1/v of the
  // rank's layers; never more than all m * v of them.
  const double warm = std::min<double>((p - rank - 1) * 2.0 + (v - 1) * double(p) + 1, m * v);
  return warm / v;
}

}  // namespace

template <bool kBreakdown>
double StrategyModel::MemoryCore(const Configuration& given, MemoryBreakdown* out) {
  Impl& im = For(given);
  Configuration folded;
  const Configuration& c = given.cp > 1 ? (folded = FoldContextParallel(given)) : given;
  const int v = VirtualStages(c);
  const Partitioned& part = im.Partition(c.tp, c.pp, v);
  const auto& ranks = part.ranks;
  const PrecisionBytes& pb = im.pb;
  const double d = std::max(1, c.dp);
  const bool z1 = c.sharding != Sharding::kNone;
  const bool z2 = c.sharding == Sharding::kZero2 || c.sharding == Sharding::kZero3;
  const bool z3 = c.sharding == Sharding::kZero3;
  MemoryBreakdown worst;
  worst.peak_allocated = -1;
  double worst_peak = -1;
  // Loop invariants, hoisted by hand (the compiler cannot prove w_ unchanged).
  const bool gather16 = pb.compute_copy > 0 && w_.fsdp_16bit_params;
  const double copy_bytes = gather16 ? pb.compute_copy : pb.weight;
  const bool adam = w_.optimizer == OptimizerKind::kAdam || w_.optimizer == OptimizerKind::kAdamW;
  const bool ddp_buckets =
      c.dp > 1 && c.sharding != Sharding::kZero2 && w_.precision != Precision::kBf16Mixed;
  const double residual16 = gather16 ? 1 - pb.compute_copy / ResidualBytes(w_.precision) : 0;
  const bool grads_alive = c.grad_accum > 1 || c.pp > 1;
  // Bytes per parameter of this rank after partitioning over dp.
  const double weight_per_param = pb.weight / (z3 ? d : 1);
  const double grad_per_param = pb.grad / (z2 ? d : 1);
  const double optimizer_per_param = pb.optimizer / (z1 ? d : 1);
  // Foreach Adam's sqrt(v) list (below); the fused kernel keeps no temporary
  // and the for-loop one only the tensor at hand's.
  const bool foreach_temps =
      adam && !FusedOptimizer(w_) && w_.settings.optimizer_impl == OptimizerImpl::kForeach;
  // And a foreach step's copy of the gradients with coupled weight decay
  // added (DecayAddedToGradients; 2x H100, torchvision's CNNs under SGD with
  // weight decay 1e-4 at micro-batch 1, where the step's state is the peak:
  // measured 18-33 % over the model without it, VGG-16 0.52 GiB,
  // bench/validate/data/calibration).
  const bool decay_copy = DecayAddedToGradients(w_) &&
                          w_.settings.optimizer_impl == OptimizerImpl::kForeach;
  const double step_temp_per_param =
      ((foreach_temps ? 4 : 0) + (decay_copy ? pb.grad : 0)) / (z1 ? d : 1);
  // FSDP reduce-scatters each unit's gradient in the reduce dtype.
  const double reduce_bytes = gather16 && w_.fsdp_16bit_reduce ? pb.compute_copy : pb.grad;
  // DeepSpeed's bf16 pipeline keeps an fp32 gradient buffer beside the bf16
  // gradients (pipeline_engine.h).
  const double accumulation_buffer = EngineTraits(w_, c).accumulation_buffer_bytes;
  for (int i : part.memory_ranks) {
    const RankData& r = ranks[i];
    MemoryBreakdown m;
    // [ZeRO] fig. 1: stage 1 partitions optimizer state, 2 adds gradients,
    // 3 adds parameters, each over the dp group.
    m.weights = r.params * weight_per_param;
    m.gradients = r.params * (grad_per_param + accumulation_buffer);
    m.optimizer = r.params * optimizer_per_param;
    // 16-bit gathered parameters unless FSDP gathers fp32 and autocast casts
    // (gather16 / copy_bytes above).
    if (z3) {
      // [FSDP] sec. 3.3: the unit being computed and the prefetched next one
      // (its neighbour in layer order) are gathered in the compute dtype; the
      // root unit (embedding, head) stays gathered from forward to the end of
      // backward; a unit's full gradient exists until its reduce-scatter
      // finishes. Neighbours, not twice the largest: ResNet-50's layer4 (15 M
      // parameters) is prefetched next to layer3 (7 M).
      m.comm_buffers = (r.root_params + r.unit_pair_params) * copy_bytes +
                       r.unit_params * (copy_bytes + reduce_bytes);
      if (!gather16) {
        // fp32 units under autocast: its weight cache keeps a 16-bit copy of
        // every layer from forward to backward, as without sharding.
        m.compute_weights =
            (c.recompute ? r.matmul_params_kept + r.max_layer_matmul : r.matmul_params) *
            pb.compute_copy;
      }
    } else {
      // Autocast's 16-bit weight copies: made in forward, kept by autograd
      // for the input-gradient GEMMs, freed during backward.
      // Under full recomputation the copies made in forward are not saved
      // (the checkpointed region keeps only its input) and autocast's cache
      // dies with the autocast region, so only the layers outside recomputation
      // and the one being recomputed hold copies (measured: 1.3B, -2.4 GB).
      m.compute_weights =
          (c.recompute ? r.matmul_params_kept + r.max_layer_matmul : r.matmul_params) *
          pb.compute_copy;
      // [DDP] sec. 3.2.3: the Reducer all-reduces flat bucket copies of the
      // gradients (gradient_as_bucket_view=False, the default). DDP's
      // constructor allocates them and they live as long as the model, so
      // they are there at the optimizer step too (measured in one process per
      // configuration, bench/memory_validation/data/ddp_fresh.json: +4 bytes
      // per parameter right after wrapping and after every step, 16 instead
      // of 12). Megatron style (kBf16Mixed) reduces the gradient buffer in
      // place.
      if (ddp_buckets) m.comm_buffers = r.params * pb.grad;
    }
    // [DDP] reducer.cpp: at the second iteration's forward the Reducer
    // rebuilds its buckets in the order gradients became ready; the new set
    // is allocated while the old one can still be referenced (most likely by
    // ProcessGroupNCCL's record of the first iteration's all-reduces, which
    // its watchdog thread drops asynchronously). Measured: in 7 of 29 fresh
    // two-rank runs one rank's forward/backward peak held one more set (4
    // bytes per parameter) than the other rank's, at random. That is not the
    // peak max_memory_allocated reports on a typical rank (peak_allocated),
    // but it can happen to any rank once, so what must fit (Total()) carries
    // it in forward and backward (ddp_rebuild).
    const double stale_buckets = (ddp_buckets && !z3) ? m.comm_buffers : 0;
    const double workspace = static_cast<double>(hw_.allocator_workspace_bytes);
    m.workspace = workspace;
    const double held = InFlight(c, i, v);
    double per_sample = c.recompute ? r.act_recompute : r.act_full;
    if (c.recompute && z3 && gather16) {
      // FSDP's 16-bit parameter policy makes the residual stream 16-bit, so
      // the checkpointed block inputs are too (LayerNorm still saves an fp32
      // cast of its input, which is why the unrecomputed count keeps r = 4).
      per_sample -= r.act_recompute_blocks * residual16;
    }
    // A 16-bit residual stream feeds every Linear the same 16-bit tensor: no
    // per-Linear casts (transformers' Llama-style blocks under FSDP's 16-bit
    // parameters), and the rotary keys follow the stream's dtype.
    if (!c.recompute && z3 && gather16) per_sample -= r.act_casts;
    const double cache_per_sample = (z3 && gather16) ? 0.5 * r.forward_cache : r.forward_cache;
    m.activations =
        held * c.micro_batch * per_sample + (i == 0 ? c.micro_batch * r.input_bytes * held : 0);
    // [ACT] sec. 4: with full recomputation one layer's activations are
    // rebuilt at a time during backward.
    // Selective recomputation rebuilds one layer's attention core at a time.
    const double recompute_peak =
        c.recompute ? c.micro_batch * r.max_layer_act : c.micro_batch * r.max_layer_core;
    const double logits = c.micro_batch * r.logits_bytes;
    // torch.distributed.pipelining's last stage keeps each micro-batch's
    // output, its 16-bit logits, until the step returns them (2x H100, the
    // library suite's PP=2 over 4 micro-batches: GPT-2 medium's last stage
    // 5.4 GiB over the model at micro-batch 16 where 3 logits are 4.9,
    // bench/validate/data/calibration), the current micro-batch's too while
    // its loss runs backward: `logits` counts the loss's own tensors only
    // (a script that drops the model's output frees its 16-bit logits first).
    const double kept_outputs =
        c.pp > 1 && w_.settings.pipeline_parallel == PipelineParallel::kTorch
            ? c.grad_accum * c.micro_batch * r.logits_entries * ActivationBytes(w_.precision)
            : 0;
    // Optimizer step temporaries: PyTorch's foreach Adam builds the
    // denominator sqrt(v) + eps as one fp32 tensor list over the local shard.
    const double step_temp = r.params * step_temp_per_param;
    m.transient = std::max(logits + recompute_peak, step_temp);
    // Gradients already exist at the start of a backward pass when earlier
    // micro-batches of the step have accumulated into them; otherwise
    // zero_grad(set_to_none=True) has freed them.
    const double start_of_backward = m.weights + m.compute_weights + m.optimizer + m.comm_buffers +
                                     m.activations + logits + recompute_peak + kept_outputs +
                                     (grads_alive ? m.gradients : 0) + workspace;
    // The end of the forward pass, where the model's own forward builds a
    // cache beside the activations (transformers' key/value cache under
    // use_cache; pp == 1 only: a pipeline stage runs the blocks without it),
    // at the loss: the 16-bit logits, their fp32 upcast and the log-softmax
    // output (the gradients of backward's peak not yet; 1x H200,
    // memory_census.py: Sheared-LLaMA-1.3B's step peaks here, 3.58 GB a
    // sample against backward's 3.24).
    double end_of_forward = 0;
    if (cache_per_sample > 0 && c.pp == 1) {
      const double forward_logits =
          c.micro_batch * r.logits_entries *
          (ActivationBytes(w_.precision) + 4 + (w_.precision != Precision::kFp32 ? 4 : 0));
      end_of_forward = start_of_backward - logits - recompute_peak + forward_logits +
                       c.micro_batch * cache_per_sample;
    }
    // The end of backward: every gradient and the communication buffers, the
    // activations and 16-bit copies freed.
    const double end_of_backward =
        m.weights + m.gradients + m.optimizer + m.comm_buffers + workspace + kept_outputs;
    // FSDP's gathered units are freed by now; DDP's buckets are not.
    const double step =
        m.weights + m.gradients + m.optimizer + step_temp + (z3 ? 0 : m.comm_buffers) + workspace;
    m.peak_allocated = std::max({start_of_backward, end_of_forward, end_of_backward, step});
    m.ddp_rebuild =
        std::max(start_of_backward + stale_buckets, m.peak_allocated) - m.peak_allocated;
    m.worst_rank = i;
    if (m.peak_allocated + m.ddp_rebuild > worst_peak) {
      worst_peak = m.peak_allocated + m.ddp_rebuild;
      if constexpr (kBreakdown) worst = m;
    }
  }
  const double reserved = static_cast<double>(hw_.reserved_bytes);
  const double margin = kMarginFraction * static_cast<double>(hw_.memory_bytes);
  if constexpr (kBreakdown) {
    worst.reserved = reserved;
    worst.margin = margin;
    *out = worst;
  }
  return worst_peak + reserved + margin;  // == MemoryBreakdown::Total()
}

MemoryBreakdown StrategyModel::Memory(const Configuration& c) {
  MemoryBreakdown m;
  MemoryCore<true>(c, &m);
  return m;
}

double StrategyModel::MemoryTotal(const Configuration& c) { return MemoryCore<false>(c, nullptr); }

StepTime StrategyModel::Time(const Configuration& given, StepTerms* terms) {
  Impl& im = For(given);
  Configuration folded;
  const Configuration& c = given.cp > 1 ? (folded = FoldContextParallel(given)) : given;
  const int v = VirtualStages(c);
  const auto& ranks = im.Partition(c.tp, c.pp, v).ranks;
  const Timed& timed = im.Times(c.tp, c.pp, v, c.micro_batch);
  const auto& rt = timed.times;
  const PrecisionBytes& pb = im.pb;
  const HardwareProfile& hw = hw_;
  const int dp_rpn = DpRanksPerNode(c);
  const double copy_bytes =
      (pb.compute_copy > 0 && w_.fsdp_16bit_params) ? pb.compute_copy : pb.weight;
  const double grad_bytes = pb.grad;
  const double bw = std::max(1.0, hw.memory_bandwidth_gbps) * 1e9;
  StepTime st;
  double t_mb = 0, t_mb_device = 0, t_b_last = 0, t_b_idle = 0, grad_params = 0, grad_tensors = 0,
         dp_exposed = 0;
  const int world = c.dp * c.tp * c.pp;
  // Compute lost to NCCL's blocks while data-parallel traffic across nodes
  // overlaps it (network_model.h).
  const double overlap_share =
      OverlapComputeShare(hw.fabric, hw.gpus_per_node, hw.sm_count, dp_rpn);
  const double in_node_share = InNodeOverlapComputeShare(hw.sm_count);
  const double straggle = StragglerFactor(world, hw.host_step_cv);
  const PipelineEngineTraits engine = EngineTraits(w_, c);
  // Launches are timed at one process's speed: a second process issuing
  // beside it does not slow it (two single-GPU lanes side by side,
  // bench/validate/data/checks/2026-11-26_h100x2_lanes_check), and the
  // two-rank probe's plain passes over the one-rank probe's
  // (HardwareProfile::side_by_side_host_factor) are the host's speed in two
  // processes minutes apart: applied to DDP, TP and PP launches it raised each
  // mode's error over the 266 calibration configurations (DDP 10.4 -> 11.1 %,
  // TP 8.3 -> 9.9, PP 9.5 -> 11.7; bench/validate/compare_all.py). FSDP's
  // launches do not follow it either: on 2x H200 (run 13) it read 1.48x, from
  // a one-rank ResNet-50 pass of 15.2 ms where every other library run's took
  // 19-25 (the two-rank one, 25.6, as usual), and that run's FSDP steps of
  // SmolLM-135M and ViT-B/16 at micro-batch 1 were over-predicted by 46 and
  // 32 % while their single-GPU steps read +1 and -19 %; at one
  // process's speed, FSDP over all 96 calibration and run-13 configurations
  // 12.6 -> 11.8 % (bench/validate/README.md, h20s session 20).
  // FSDP's own host work (per unit and tensor) stays the two-rank process's,
  // measured against that process's plain pass.
  for (int i : timed.time_ranks) {
    const RankTimes& r = rt[i];
    const RankData& d = ranks[i];
    // The GPU cannot run ahead of the host launching its kernels: a pass
    // takes at least its launch time (backward launches about twice the
    // forward's kernels) -- what bounds small micro-batches in eager mode.
    double launch_f = r.launch_fwd, launch_b = 2 * r.launch_fwd;
    if (c.sharding == Sharding::kNone && c.dp > 1) {
      // DDP's reducer copies each gradient into its bucket and scales it as
      // backward produces it, and copies each buffer out of the broadcast that
      // starts every forward (PyTorch's profile: 2 launches per parameter
      // tensor and 1 per buffer more than single-GPU training, on 2x H200).
      // Each bucket's all-reduce is an NCCL call whose host work runs on the
      // same thread between the gradients' hooks: 131-136 us a bucket in three
      // host-bound training steps on 2x H200, ~7 reducer launches
      // (HardwareProfile::ddp_bucket_host_launches; bench/validate/data/
      // checks/2026-11-28_h200x2_ddp_bucket_check), measured without a
      // pipeline: under one the engines reduce from their own gradient
      // buffers, some once a step after the flush (pipeline_engine.h), and
      // where those calls fall was not measured, so they are not charged.
      const double bucket_calls = c.pp == 1 ? d.ddp_buckets : 0;
      launch_b += (2 * d.param_tensors + bucket_calls * hw.ddp_bucket_host_launches) *
                  hw.ddp_host_per_launch_s;
      launch_f += d.buffer_tensors * hw.ddp_host_per_launch_s;
    }
    double hooks_f = 0, hooks_b = 0;
    if (c.sharding == Sharding::kZero3 && c.dp > 1) {
      // FSDP2's host work per unit (pre/post hooks, all-gather copy-in and
      // copy-out, reduce-scatter staging) and per parameter tensor (its views
      // into the gathered storage, its sharded gradient): a third in forward.
      // The probe's figures price it where the probe timed FSDP on several
      // ranks. Timed on one rank, each unit's all-gather and reduce-scatter
      // met no other process, and the figures fall short of any multi-rank
      // step: the 2x H100 probes of 2026-11-26 / 11-27 that ran FSDP on one
      // rank read 1.3-1.5 ms a unit where every two-rank probe read 2.4-3.4,
      // and those folders' FSDP rows were all under-predicted (-17.5 to
      // -19.1 % signed; GPT-2 medium mb1 -34 %). Then the built-in kernel
      // counts, fitted to two-rank FSDP training on 2x H200, at the probe's
      // measured host speed (bench/validate/README.md, "h24f, session 24").
      const bool measured = (hw.fsdp_host_per_unit_s > 0 || hw.fsdp_host_per_tensor_s > 0) &&
                            hw.fsdp_host_ranks != 1;
      const double s = measured ? d.fsdp_units * hw.fsdp_host_per_unit_s +
                                      d.param_tensors * hw.fsdp_host_per_tensor_s
                                : (d.fsdp_units * hw.fsdp_unit_host_kernels +
                                   d.param_tensors * hw.fsdp_tensor_host_kernels) *
                                      hw.host_overhead_per_kernel_s;
      hooks_f = straggle * s / 3;
      hooks_b = straggle * s * 2 / 3;
    }
    launch_f *= straggle;
    launch_b *= straggle;
    // DTensor's dispatch is host work that launches none of the kernels it
    // waits behind: the GPU drains the queue meanwhile, so a TP step's device
    // time hides behind it (one 2x H200 host: Danube-1.8B's TP=2 step 292.8 ms
    // at micro-batch 1, 308.8 at 8). Its collectives are functional
    // all-reduces the host never waits for: in the GPU's own time line.
    const double dtensor_f = straggle * r.dtensor_fwd, dtensor_b = 2 * dtensor_f;
    const double tp_in_pass = r.dtensor_fwd > 0 ? r.tp_comm_fwd : 0;
    // Autocast casts every matmul weight to 16 bits in each forward (read 4,
    // write 2 bytes; FSDP with 16-bit parameters gathers them cast already)
    // and each weight gradient back to the fp32 parameter's type in backward.
    double cast_f = 0, cast_b = 0;
    if (pb.compute_copy > 0) {
      const bool gathered_16bit =
          c.sharding == Sharding::kZero3 && c.dp > 1 && w_.fsdp_16bit_params;
      if (!gathered_16bit) cast_f = d.matmul_params * (pb.weight + pb.compute_copy) / bw;
      cast_b = d.matmul_params * (pb.compute_copy + pb.grad) / bw;
    }
    const double f_device = r.fwd + cast_f + tp_in_pass;
    const double f_launched = LaunchedPass(f_device, launch_f, hooks_f + dtensor_f);
    double f = f_launched + (r.tp_comm_fwd - tp_in_pass) + r.cp_comm_fwd;
    const double b_device = r.bwd + cast_b + tp_in_pass;
    const double b_launched = LaunchedPass(b_device, launch_b + hooks_b, dtensor_b);
    // [MLM19] as many all-reduces; context parallel: keys and values gathered
    // again and their gradients reduce-scattered.
    double b = b_launched + (r.tp_comm_fwd - tp_in_pass) + 2 * r.cp_comm_fwd;
    if (c.recompute) b += f;                // [ACT] full recomputation: forward again
    const double before_p2p = f + b;  // for StepTerms
    if (c.pp > 1 && !engine.partitioned_p2p) {
      // Activations and their gradients cross each chunk boundary once per
      // micro-batch; send/recv is on the critical path in Megatron's schedule.
      // Megatron sends 1 / tp of each (pipeline_engine.h). A pass exchanges
      // once, at whichever boundary it has (the last stage receives its input
      // and sends that gradient back).
      const double bytes = std::max(d.send_bytes, d.recv_bytes) * c.micro_batch;
      double p2p =
          im.Coll(CollectiveOp::kSendRecv, bytes / engine.p2p_shards, 2, PpRanksPerNode(c));
      if (engine.p2p_gathered) p2p += im.Coll(CollectiveOp::kAllGather, bytes, c.tp, c.tp);
      const int transfers = engine.serial_exchange ? 2 : 1;
      double p2p_f = transfers * p2p, p2p_b = transfers * p2p;
      if (engine.overlapped_p2p) {
        // Asynchronous transfers run beside the neighbouring chunk's compute:
        // only what outlasts one chunk's pass waits.
        p2p_f = std::max(0.0, p2p_f - r.fwd / d.chunks);
        p2p_b = std::max(0.0, p2p_b - r.bwd / d.chunks);
      }
      f += p2p_f * d.chunks;
      b += p2p_b * d.chunks;
    } else if (c.pp > 1) {
      // DeepSpeed (pipeline_engine.h): a forward step receives its input and
      // sends the last gradient back, a backward step sends the last output
      // on and receives its gradient (the first stage has only the second,
      // the last only the first), 1 / tp of each across the link,
      // all-gathering each partitioned one over tp; backward also rebuilds
      // its own output that way.
      auto exchange = [&](double per_sample, bool backward) {
        if (per_sample <= 0) return 0.0;
        const double bytes = per_sample * c.micro_batch;
        const double link = im.Coll(CollectiveOp::kSendRecv, bytes / c.tp, 2, PpRanksPerNode(c));
        const double gather = im.Coll(CollectiveOp::kAllGather, bytes, c.tp, c.tp);
        return 2 * link + gather + (backward ? gather : 0);
      };
      f += exchange(d.recv_bytes, false) * d.chunks;
      b += exchange(d.send_bytes, true) * d.chunks;
      // DeepSpeed of 2021's PartitionedTensor copies (pipeline_engine.h):
      // forward, full() of the input and three shard copies, the output's
      // partition; backward, two full()s with a shard copy each, the input
      // gradient's partition.
      const double in = d.recv_bytes * c.micro_batch, out = d.send_bytes * c.micro_batch;
      const double full = engine.partition_full_traffic, shard = engine.partition_shard_traffic;
      f += (full * in + shard * (3 * in + out) / c.tp) / bw * d.chunks;
      b += (2 * full * out + shard * (2 * out + in) / c.tp) / bw * d.chunks;
    }
    // bf16 under DeepSpeed's engine, and Megatron-LM before gradient
    // accumulation fusion: each micro-batch's gradients are added into the
    // accumulated ones by a memory-bound pass over the stage.
    const double p2p_s = f + b - before_p2p;
    const double accumulation_s = AccumulationSeconds(engine, d.params, bw);
    b += accumulation_s;
    double z3_exposed = 0;
    if (c.sharding == Sharding::kZero3 && c.dp > 1) {
      // [FSDP] gather parameters before forward and again before backward,
      // reduce-scatter gradients after; prefetching hides them behind compute
      // except the first unit's gather. [ZeRO] sec. 7: 1.5x DP's volume.
      const double ag = im.Coll(CollectiveOp::kAllGather, d.params * copy_bytes, c.dp, dp_rpn);
      // Gradients travel in the reduce dtype (MixedPrecisionPolicy's
      // reduce_dtype), parameters in the parameter dtype: fp32 parameters
      // double the all-gathers' bytes.
      const double reduce = pb.compute_copy > 0 && w_.fsdp_16bit_params && w_.fsdp_16bit_reduce
                                ? pb.compute_copy
                                : grad_bytes;
      const double rs = im.Coll(CollectiveOp::kReduceScatter, d.params * reduce, c.dp, dp_rpn);
      const double first =
          im.Coll(CollectiveOp::kAllGather, std::max(d.unit_params, d.root_params) * copy_bytes,
                  c.dp, dp_rpn);
      z3_exposed = std::max(0.0, ag - r.fwd) + std::max(0.0, ag + rs - r.bwd) + 2 * first;
      // The root unit (embedding, head) reduce-scatters its gradient when the
      // whole backward has ended -- its post-backward hook runs last -- and
      // the step waits for it before the optimizer (FSDP2's final callback),
      // like DDP's last bucket.
      if (d.root_params > 0) {
        z3_exposed += im.Coll(CollectiveOp::kReduceScatter, d.root_params * reduce, c.dp, dp_rpn);
      }
      // Across nodes the hidden gathers take NCCL's SMs from the compute
      // they overlap (OverlapComputeShare).
      if (dp_rpn < c.dp) {
        z3_exposed += overlap_share * (std::min(ag, r.fwd) + std::min(ag + rs, r.bwd));
      }
    } else if (c.sharding == Sharding::kZero2 && c.dp > 1) {
      // ZeRO-2 reduce-scatters each micro-batch's gradients (it keeps no full
      // gradient buffer to accumulate into), overlapped with that backward
      // (grad_sync_overlap.h): in buckets, or FSDP2's one unit at a time.
      const double bytes = d.params * grad_bytes;
      ReductionBesideBackward overlap;
      overlap.whole_s = im.Coll(CollectiveOp::kReduceScatter, bytes, c.dp, dp_rpn);
      overlap.backward_s = r.bwd;
      double last_bytes = std::min(bytes, kBucketBytes);
      if (engine.reduce_scatter_per_unit) {
        const UnitReduceOrder order =
            Fsdp2ReduceOrder(d.params, d.fsdp_units, d.unit_params, d.root_params);
        overlap.backward_before_first_s = order.first_backward_share * r.bwd;
        last_bytes = order.last_params * grad_bytes;
      }
      overlap.last_s = im.Coll(CollectiveOp::kReduceScatter, last_bytes, c.dp, dp_rpn);
      const double rs = overlap.whole_s;
      z3_exposed = ExposedReduction(overlap);
      // The backward it overlaps loses NCCL's SMs for as long: across nodes
      // the NICs' channels, inside one node NVLink's ring channels
      // (network_model.h). Measured on 2x H200 over NVLink (bench/scale,
      // zero2_reduce_frequency.py, session 22): a 12.8 GB fp32 reduce-scatter
      // in 16 buckets beside a 14.0 ms backward every micro-batch left 18.1 ms;
      // the overlap alone says 14.9 with the buckets' 4.7 ms of accumulation
      // beside it, 17.4 with the ring's 24 of 132 SMs taken.
      z3_exposed += (dp_rpn < c.dp ? overlap_share : in_node_share) * std::min(rs, r.bwd);
    }
    const double total = f + b + z3_exposed;
    // The same micro-batch with the host's launches taken out: what a
    // neighbouring pipeline stage waits for.
    const double device = total - (f_launched - f_device) - (b_launched - b_device);
    t_mb_device = std::max(t_mb_device, device);
    if (total > t_mb) {
      t_mb = total;
      // The components learning corrects apart (StepTime::Passes).
      st.passes = {float(f_device), float(launch_f),         float(hooks_f + dtensor_f),
                   float(b_device), float(launch_b + hooks_b), float(device),
                   c.recompute ? 2 : 1,  float(dtensor_b)};
      t_b_last = b;
      t_b_idle = b_launched - b_device;
      grad_params = d.params;
      grad_tensors = d.param_tensors;
      if (terms != nullptr) {
        const int fwds = c.recompute ? 2 : 1;
        terms->forward_s = f_launched;
        terms->backward_s = b_launched;
        terms->recompute_s = c.recompute ? f_launched : 0;
        terms->tp_comm_s = (fwds + 1) * r.tp_comm_fwd;
        terms->cp_comm_s = (fwds + 2) * r.cp_comm_fwd;
        terms->pp_comm_s = p2p_s;
        terms->sharded_dp_s = z3_exposed;
        terms->accumulation_s = accumulation_s;
      }
    }
  }
  st.per_micro_batch_s = t_mb;
  if (engine.first_accumulation_free) {
    st.first_accumulation_s = AccumulationSeconds(engine, grad_params, bw);
  }
  if (c.pp > 1) {
    // [MLM] eq. (1) and sec. 2.2.2: bubble = (p - 1) / v micro-batch times,
    // of the GPU's: a stage's host issues its receives and kernels without
    // waiting for them (NCCL's wait orders streams, not the host), so where
    // the host bounds a micro-batch the fill and drain cost only the
    // neighbour's device time (2x H100, torch.distributed.pipelining 1F1B at
    // micro-batch 1: the launch-bound bubble over-predicted the step by
    // 47-58 %, bench/validate/data/calibration/2026-11-27_h100x2_library_heldout,
    // calibration since).
    st.fill_drain_s = (c.pp - 1) * t_mb_device / v;
    // torch.distributed.pipelining never waits on the host for a transfer,
    // so a launch-bound stage's host runs ahead of its GPU by what each
    // micro-batch's launches take beyond its kernels, and the fill and drain
    // hide in that lead (WithAccumulation: the step is the longer of the
    // host's chain and the GPU's chain with its bubble). Megatron's batched
    // p2p synchronises the device after each exchange, so its hosts keep no
    // lead.
    if (w_.settings.pipeline_parallel == PipelineParallel::kTorch) {
      st.host_lead_per_micro_batch_s = std::max(0.0, t_mb - t_mb_device);
    }
  }
  if (c.dp > 1 && (c.sharding == Sharding::kNone || c.sharding == Sharding::kZero1)) {
    // [DDP] buckets are reduced as soon as they fill, overlapping the last
    // micro-batch's backward; the last bucket never overlaps ([LI19]: the
    // overlap is partial). ZeRO-1 reduce-scatters the same volume ([ZeRO]).
    const CollectiveOp op =
        c.sharding == Sharding::kZero1 ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
    const double bytes = grad_params * grad_bytes;
    const double all = im.Coll(op, bytes, c.dp, dp_rpn);
    // The reducer fills buckets in reverse registration order, so the model's
    // first layer (a transformer's embedding) is in the last bucket, and its
    // gradient is the last one backward produces; a tensor larger than the
    // cap is a bucket of its own ([DDP] sec. 3.2.3, Reducer's
    // compute_bucket_assignment_by_size): that bucket's reduction starts
    // after backward and cannot overlap it.
    const double first_bytes = ranks.front().first_layer_params * grad_bytes;
    const double last =
        im.Coll(op, std::max(std::min(bytes, kBucketBytes), std::min(bytes, first_bytes)), c.dp,
                dp_rpn);
    // [DDP] gradients are copied into the buckets, scaled by 1/world and
    // copied back after the reduction: three read-write passes.
    const double copies = 6 * bytes / bw;
    if (!engine.overlaps_gradient_reduction) {
      // DeepSpeed's engine and Megatron-LM before megatron-core reduce after
      // the pipeline has drained (pipeline_engine.h).
      dp_exposed = all + copies;
    } else if (dp_rpn >= c.dp) {
      // Inside one node the collective's kernels run on the same SMs and HBM
      // as the backward they overlap, both bandwidth-bound: they hide only in
      // the time the GPU waits for the host's launches. On 2x H200 DDP minus
      // single-GPU step time is the whole all-reduce plus the bucket copies at
      // micro-batch 16, ~30 % less at 4 (bench/validate/data/calibration/2026-11-26_h200x2_*).
      // DDP's bucket copies are kernels of the same backward and hide there
      // too: in host-bound steps of four small models the GPU's tail after
      // the host's last call was the plain step's, 0.1-1.4 ms, where the
      // copies alone are 0.4-1.8 ms (bench/validate/data/checks/
      // 2026-11-28_h200x2_ddp_step_split).
      dp_exposed = c.sharding == Sharding::kNone
                       ? std::max(last, all + copies - t_b_idle)
                       : std::max(last, all - t_b_idle) + copies;
    } else {
      dp_exposed = std::max(last, all - t_b_last) + overlap_share * std::min(all, t_b_last) + copies;
    }
  }
  if (terms != nullptr) terms->dp_reduce_s = dp_exposed;
  if (c.dp > 1 && (c.sharding == Sharding::kZero1 || c.sharding == Sharding::kZero2)) {
    // Updated parameter shards are all-gathered after the step, not overlapped.
    dp_exposed += im.Coll(CollectiveOp::kAllGather, grad_params * pb.weight, c.dp, dp_rpn);
  }
  if (terms != nullptr) terms->dp_gather_s = dp_exposed - terms->dp_reduce_s;
  if (c.pp > 1 && engine.reduces_tied_pair && w_.family == ModelFamily::kTransformer &&
      w_.transformer.tied_embeddings) {
    // The first stage's embedding and the last stage's head are one matrix
    // held twice: their gradients are all-reduced between the two stages
    // after backward (Megatron's embedding group, DeepSpeed's
    // ReduceTiedGrads), not overlapped.
    const double tied = double(w_.transformer.vocab) * w_.transformer.hidden / c.tp * grad_bytes;
    dp_exposed += im.Coll(CollectiveOp::kAllReduce, tied, 2, PpRanksPerNode(c));
  }
  st.exposed_comm_s = dp_exposed;
  if (terms != nullptr) terms->tied_s = dp_exposed - terms->dp_reduce_s - terms->dp_gather_s;
  const double local = grad_params / (c.sharding != Sharding::kNone ? std::max(1, c.dp) : 1);
  // The step's kernels are memory-bound; its host work (a loop over the
  // parameter tensors, and over FSDP's DTensors a dispatch per tensor and op)
  // shows where it outlasts them, as in a pass (HostAndDevice).
  const StepHostCost& probed = c.sharding == Sharding::kZero3 && c.dp > 1
                                    ? hw.fsdp_optimizer_host
                                    : hw.optimizer_host;
  // The probe times the default, foreach AdamW (kProbedOptimizerOps ops per
  // tensor), as a fixed part (each op's call over the tensor lists) and a part
  // per tensor (FitStepHost). A foreach step makes one call per op over the
  // tensor lists, so another optimizer's host time scales with its ops (SGD
  // with momentum: 3 of AdamW's 10; 2x H100, torchvision's ResNet-101 / -152
  // at micro-batch 1 over-predicted by 9-14 ms when charged AdamW's,
  // bench/validate/data/calibration); a fused step makes one call where
  // foreach makes one per op; a for-loop step launches every op for every
  // tensor on its own, each at the host's time per kernel.
  constexpr double kProbedOptimizerOps = 10;
  double step_host = probed.For(grad_tensors);
  if (FusedOptimizer(w_)) {
    step_host /= kProbedOptimizerOps;
  } else if (w_.settings.optimizer_impl == OptimizerImpl::kForLoop) {
    step_host = std::max(step_host,
                         grad_tensors * OptimizerOpsPerTensor(w_) * hw.host_overhead_per_kernel_s);
  } else {
    step_host *= OptimizerOpsPerTensor(w_) / kProbedOptimizerOps;
  }
  const double optimizer_bw =
      hw.optimizer_bandwidth_gbps > 0 ? hw.optimizer_bandwidth_gbps * 1e9 : bw;
  st.optimizer_s =
      HostAndDevice(local * OptimizerTrafficBytes(w_) / optimizer_bw, step_host);
  return WithAccumulation(st, c.grad_accum);
}

StepTime StrategyModel::WithAccumulation(StepTime st, int grad_accum) {
  // Nothing else in a step depends on the number of micro-batches.
  st.compute_s = grad_accum * st.per_micro_batch_s - st.first_accumulation_s;
  st.bubble_s = std::max(0.0, st.fill_drain_s - grad_accum * st.host_lead_per_micro_batch_s);
  st.total_s = st.compute_s + st.bubble_s + st.exposed_comm_s + st.optimizer_s;
  st.micro_batches = grad_accum;
  return st;
}

namespace {
// A micro-batch's passes as Time() combines them, with the kernel and host
// times scaled.
double CombinedPasses(const StepTime::Passes& p, double kf, double hf) {
  return p.forwards * LaunchedPass(kf * p.fwd_kernel_s, hf * p.fwd_host_s, hf * p.fwd_host_only_s) +
         LaunchedPass(kf * p.bwd_kernel_s, hf * p.bwd_host_s, hf * p.bwd_host_only_s);
}
}  // namespace

double StepTime::launched_s() const { return micro_batches * CombinedPasses(passes, 1, 1); }

StepTime StrategyModel::ScaledCompute(StepTime st, double kernel_factor, double host_factor) {
  StepTime::Passes& p = st.passes;
  const double kf = kernel_factor, hf = host_factor;
  // Differences of the same rule on the same parts: exactly 0 at factors 1.
  const double d_launched = CombinedPasses(p, kf, hf) - CombinedPasses(p, 1, 1);
  const double d_device = (kf - 1) * (p.forwards * double(p.fwd_kernel_s) + p.bwd_kernel_s);
  // A pipeline's fill and drain are the device's time of a micro-batch; a
  // host's lead over its GPU what the launches take beyond the kernels.
  if (p.device_s > 0) st.fill_drain_s *= (p.device_s + d_device) / p.device_s;
  if (st.host_lead_per_micro_batch_s > 0) {
    st.host_lead_per_micro_batch_s =
        std::max(0.0, st.host_lead_per_micro_batch_s + d_launched - d_device);
  }
  st.per_micro_batch_s += d_launched;
  p.fwd_kernel_s = float(kf * p.fwd_kernel_s);
  p.bwd_kernel_s = float(kf * p.bwd_kernel_s);
  p.fwd_host_s = float(hf * p.fwd_host_s);
  p.fwd_host_only_s = float(hf * p.fwd_host_only_s);
  p.bwd_host_s = float(hf * p.bwd_host_s);
  p.bwd_host_only_s = float(hf * p.bwd_host_only_s);
  p.device_s = float(p.device_s + d_device);
  return WithAccumulation(st, st.micro_batches);
}

int StrategyModel::MemoryAccumulation(const Configuration& c) const {
  // Memory depends on the accumulation count only through "gradients alive
  // between micro-batches" (> 1) and the in-flight micro-batches of a
  // pipeline rank, min(warm-up, m), which stop growing at rank 0's warm-up;
  // under torch.distributed.pipelining also through the outputs its last
  // stage keeps, one per micro-batch.
  if (c.pp == 1) return std::min(c.grad_accum, 2);
  if (w_.settings.pipeline_parallel == PipelineParallel::kTorch) return c.grad_accum;
  const int v = VirtualStages(c);
  if (v == 1) return std::min(c.grad_accum, c.pp);
  const int warm0 = (c.pp - 1) * 2 + (v - 1) * c.pp + 1;
  return std::min(c.grad_accum, (warm0 + v - 1) / v);
}

double StrategyModel::IdealTimePerSample() {
  if (impl_->ideal_per_sample >= 0) return impl_->ideal_per_sample;
  double best = 0;
  for (int mb = 1; mb <= std::max(1, w_.max_micro_batch); mb *= 2) {
    const auto& rt = impl_->Times(1, 1, 1, mb).times;
    const double t = (rt[0].fwd + rt[0].bwd) / mb;
    if (best == 0 || t < best) best = t;
  }
  impl_->ideal_per_sample = best;
  return best;
}

MemoryBreakdown EstimateMemory(const Workload& w, const HardwareProfile& hw,
                               const Configuration& c) {
  StrategyModel m(w, hw);
  return m.Memory(c);
}

StepTime EstimateStepTime(const Workload& w, const HardwareProfile& hw, const Configuration& c) {
  StrategyModel m(w, hw);
  return m.Time(c);
}

std::string StructuralProblem(const Workload& w, const Configuration& c) {
  if (c.nodes < 1 || c.gpus_per_node < 1 || c.dp < 1 || c.tp < 1 || c.pp < 1 || c.cp < 1 ||
      c.micro_batch < 1 || c.grad_accum < 1) {
    return "every count must be at least 1";
  }
  if (int64_t{c.nodes} * c.gpus_per_node != int64_t{c.dp} * c.tp * c.pp * c.cp) {
    return absl::StrCat(
        c.cp > 1 ? "dp x tp x pp x cp = " : "dp x tp x pp = ", int64_t{c.dp} * c.tp * c.pp * c.cp,
        " but the allocation has ", c.nodes * c.gpus_per_node, " GPUs");
  }
  if (c.cp > 1) {
    if (w.family != ModelFamily::kTransformer) {
      return "context parallelism is modelled for transformers only";
    }
    // Each rank takes two chunks of 1/(2 cp) of the sequence, one from each
    // end, so causal attention's work is balanced (Megatron-Core, Llama 3).
    if (MaterialisesScores(ResolvedAttention(w))) {
      return "context parallelism needs a fused attention kernel (flash or memory-efficient)";
    }
    if (w.transformer.seq_len % (2 * c.cp) != 0) {
      return absl::StrCat("cp ", c.cp, ": 2 x cp must divide the sequence length (",
                          w.transformer.seq_len, ")");
    }
  }
  if (c.sequence_parallel && c.tp < 2) return "sequence parallelism needs tp > 1";
  if (std::string engine = PipelineEngineProblem(w, c); !engine.empty()) return engine;
  if (c.recompute && c.selective_recompute) {
    return "full and selective recomputation exclude each other";
  }
  if (c.gpus_per_node % c.tp != 0)
    return "tp must divide the GPUs per node (tp stays inside a node)";
  if (c.global_batch != int64_t{c.dp} * c.micro_batch * c.grad_accum) {
    return "global batch must equal dp x micro-batch x accumulation";
  }
  if (c.sharding != Sharding::kNone && c.dp == 1) return "sharding needs dp > 1";
  const int v = VirtualStages(c);
  if (c.tp > 1) {
    if (w.family != ModelFamily::kTransformer) {
      return "tensor parallelism is modelled for transformers only";
    }
    const TransformerShape& t = w.transformer;
    if (t.heads % c.tp != 0 || t.kv_heads % c.tp != 0 || t.ffn % c.tp != 0) {
      return absl::StrCat("tp ", c.tp, " does not divide heads (", t.heads, "), kv-heads (",
                          t.kv_heads, ") and ffn (", t.ffn, ")");
    }
  }
  if (c.pp > 1) {
    if (w.family == ModelFamily::kTransformer) {
      const bool ends = w.settings.pipeline_ends_as_layers;
      if ((w.transformer.layers + (ends ? 2 : 0)) % (c.pp * v) != 0) {
        return absl::StrCat("pp x virtual stages (", c.pp * v, ") must divide the layers (",
                            w.transformer.layers, ends ? " + embedding + head" : "", ")");
      }
    } else if (static_cast<int>(w.layers.size()) < c.pp * v) {
      return "more pipeline stages than layers";
    }
    if (v > 1 && c.grad_accum % c.pp != 0) {
      return "the interleaved schedule needs micro-batches per step divisible by pp";
    }
  } else if (c.schedule == PipelineSchedule::kInterleaved && c.virtual_stages > 1) {
    return "interleaving needs pp > 1";
  }
  return "";
}

}  // namespace xdeep::tuner
