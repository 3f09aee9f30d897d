// Workload parsing (TOML), presets and per-layer tables.
//
// Transformer counts follow Narayanan et al., "Efficient Large-Scale Language
// Model Training on GPU Clusters Using Megatron-LM" (SC21), eq. (2)-(3) for
// parameters and FLOPs, and Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models" (MLSys 2023), section 4.1, for
// saved activations; the byte counts are redone for PyTorch autocast (fp32
// residual stream and LayerNorm, 16-bit matmul inputs, fused attention).
#include "tuner/workload.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "toml++/toml.h"
#include "tuner/cnn_archs.h"
#include "tuner/parallel_table.h"
#include "tuner/toml_text.h"

namespace xdeep::tuner {

std::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16Autocast:
      return "bf16-autocast";
    case Precision::kFp16Autocast:
      return "fp16-autocast";
    case Precision::kBf16Mixed:
      return "bf16-mixed";
  }
  return "?";
}

std::string_view OptimizerName(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::kAdamW:
      return "adamw";
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kSgdMomentum:
      return "sgd-momentum";
    case OptimizerKind::kSgd:
      return "sgd";
  }
  return "?";
}

std::string_view OptimizerImplName(OptimizerImpl o) {
  switch (o) {
    case OptimizerImpl::kForeach:
      return "foreach";
    case OptimizerImpl::kFused:
      return "fused";
    case OptimizerImpl::kForLoop:
      return "for-loop";
  }
  return "?";
}

std::string_view AttentionKernelName(AttentionKernel a) {
  switch (a) {
    case AttentionKernel::kSdpa:
      return "sdpa";
    case AttentionKernel::kFlash:
      return "flash";
    case AttentionKernel::kEfficient:
      return "efficient";
    case AttentionKernel::kMath:
      return "math";
    case AttentionKernel::kEager:
      return "eager";
  }
  return "?";
}

std::string_view MemoryFormatName(MemoryFormat m) {
  return m == MemoryFormat::kChannelsLast ? "channels_last" : "contiguous";
}

std::string_view CheckpointingName(Checkpointing c) {
  switch (c) {
    case Checkpointing::kOff:
      return "false";
    case Checkpointing::kOn:
      return "true";
    case Checkpointing::kTuned:
      return "tuned";
  }
  return "?";
}

std::string_view TensorParallelName(TensorParallel t) {
  return t == TensorParallel::kMegatron ? "megatron" : "dtensor";
}

std::string_view PipelineParallelName(PipelineParallel p) {
  switch (p) {
    case PipelineParallel::kDeepSpeed:
      return "deepspeed";
    case PipelineParallel::kTorch:
      return "torch";
    case PipelineParallel::kMegatron:
      break;
  }
  return "megatron";
}

std::string_view MegatronReleaseName(MegatronRelease r) {
  switch (r) {
    case MegatronRelease::k2022:
      return "2022";
    case MegatronRelease::k2021:
      return "2021";
    case MegatronRelease::kCore:
      break;
  }
  return "core";
}

std::string_view DeepSpeedReleaseName(DeepSpeedRelease r) {
  return r == DeepSpeedRelease::k2021 ? "2021" : "current";
}

std::string_view NormName(Norm n) {
  switch (n) {
    case Norm::kLayerNorm:
      return "layernorm";
    case Norm::kRmsNormEager:
      return "rmsnorm_eager";
  }
  return "?";
}

std::string_view ActivationName(Activation a) {
  switch (a) {
    case Activation::kGelu:
      return "gelu";
    case Activation::kRelu:
      return "relu";
    case Activation::kSilu:
      return "silu";
    case Activation::kGeluTanhUnfused:
      return "gelu_new";
  }
  return "?";
}

AttentionKernel ResolvedAttention(const Workload& w) {
  if (w.settings.attention != AttentionKernel::kSdpa) return w.settings.attention;
  // PyTorch's sdp_utils.cpp: flash needs fp16/bf16 inputs and a head size of
  // at most 256; otherwise the memory-efficient kernel, which takes fp32.
  const TransformerShape& t = w.transformer;
  const int head_dim = t.heads > 0 ? t.hidden / t.heads : 0;
  const bool sixteen_bit = w.precision != Precision::kFp32;
  return sixteen_bit && head_dim <= 256 ? AttentionKernel::kFlash : AttentionKernel::kEfficient;
}

bool MaterialisesScores(AttentionKernel a) {
  return a == AttentionKernel::kMath || a == AttentionKernel::kEager;
}

int ActivationBytes(Precision p) { return p == Precision::kFp32 ? 4 : 2; }
int ResidualBytes(Precision p) { return p == Precision::kBf16Mixed ? 2 : 4; }
// The 16-bit logits (a), the fp32 log-softmax output kept for backward (4),
// and the fp32 gradient of the loss and its log-softmax gradient (4 + 4), less
// the fp32 upcast (freed once log-softmax ran; 4 at its peak in forward, which
// is lower): a + 10 at the start of backward. The measured slope of peak
// memory over micro-batch size agrees (12 bytes per entry for bf16 logits).
// An fp32 copy made by the script itself (4 per entry) outlives the loss: the
// model's output holds it.
int LogitsBytesPerEntry(Precision p, bool fp32_logits) {
  return ActivationBytes(p) + 10 + (fp32_logits && p != Precision::kFp32 ? 4 : 0);
}

int64_t Workload::Parameters() const {
  int64_t total = 0;
  for (const LayerCost& l : layers) total += l.params;
  return total;
}

double Workload::ForwardFlopsPerSample() const {
  double total = 0;
  for (const LayerCost& l : layers) total += l.fwd_flops;
  return total;
}

void BuildTransformerLayers(Workload& w) { (void)BuildTransformerLayers(w, nullptr); }

absl::Status BuildTransformerLayers(Workload& w, const BuildPoll& poll) {
  const TransformerShape& t = w.transformer;
  const double s = t.seq_len, h = t.hidden, v = t.vocab, f = t.ffn;
  const int a = ActivationBytes(w.precision), r = ResidualBytes(w.precision);
  const int kv = t.kv_heads > 0 ? t.kv_heads : t.heads;
  const int64_t head_dim = t.hidden / std::max(1, t.heads);
  const int64_t kv_dim = head_dim * kv;
  w.layers.clear();

  LayerCost embed;
  embed.name = "embedding";
  embed.params = static_cast<int64_t>(v * h + (t.learned_positions ? s * h : 0));
  embed.matmul_params = 0;  // looked up, never multiplied: no 16-bit copy
  embed.output_bytes = s * h * r;
  embed.kernels = 3;        // token and position lookups, add
  embed.fused_kernels = 1;  // the lookups and their add, fused
  embed.param_tensors = t.learned_positions ? 2 : 1;
  // Megatron splits the table over the vocabulary (VocabParallelEmbedding);
  // DTensor plans leave it whole (TpWays).
  embed.tp_capable = true;
  embed.vocab_parallel = true;
  if (t.token_types) {
    // BERT's type_vocab_size 2 table: one more lookup and add (fused: none).
    embed.params += 2 * int64_t{t.hidden};
    embed.kernels += 2;
    embed.param_tensors += 1;
  }
  if (t.embedding_norm) {
    // LayerNorm and dropout over the sum, in the residual precision; the
    // LayerNorm's input is kept for its backward. Compiled: one more kernel.
    embed.params += 2 * int64_t{t.hidden};
    embed.kernels += 2;
    embed.fused_kernels += 1;
    embed.param_tensors += 2;
    embed.saved_activation_bytes += s * h * r;
  }
  w.layers.push_back(embed);

  const AttentionKernel attention = ResolvedAttention(w);
  const bool scores = MaterialisesScores(attention);
  const bool bias = w.settings.linear_bias;
  for (int i = 0; i < t.layers; ++i) {
    if (poll && i % kLayersPerPoll == kLayersPerPoll - 1) {
      if (absl::Status s = poll(); !s.ok()) {
        w.layers.clear();  // never a half-built table
        return s;
      }
    }
    LayerCost b;
    b.name = absl::StrCat("block", i);
    const int64_t attn = t.hidden * (t.hidden + 2 * kv_dim) + int64_t{t.hidden} * t.hidden;
    const int64_t mlp = int64_t{t.gated_mlp ? 3 : 2} * t.hidden * t.ffn;
    b.matmul_params = attn + mlp;
    // nn.Linear's biases: QKV, out-projection, MLP in and out (gate and up for SwiGLU).
    const int64_t mlp_in = int64_t{t.ffn} * (t.gated_mlp ? 2 : 1);
    const int64_t biases = bias ? (t.hidden + 2 * kv_dim) + t.hidden + mlp_in + t.hidden : 0;
    // Biased Linears: QKV (three if separate), out-projection, MLP in and out.
    const int biased_linears = (t.separate_qkv ? 3 : 1) + 1 + (t.gated_mlp ? 2 : 1) + 1;
    b.params = b.matmul_params + 4 * int64_t{t.hidden} + biases;  // two LayerNorms (weight + bias)
    // Forward GEMMs per sample (m = tokens): QKV, attention output, MLP.
    if (t.separate_qkv) {
      b.gemms.push_back({s, t.hidden, t.hidden});
      b.tp_split_n.push_back(true);
      b.gemms.push_back({s, kv_dim, t.hidden});
      b.tp_split_n.push_back(true);
      b.gemms.push_back({s, kv_dim, t.hidden});
      b.tp_split_n.push_back(true);
    } else {
      b.gemms.push_back({s, t.hidden + 2 * kv_dim, t.hidden});
      b.tp_split_n.push_back(true);
    }
    b.gemms.push_back({s, t.hidden, t.hidden});
    b.tp_split_n.push_back(false);
    b.gemms.push_back({s, mlp_in, t.hidden});
    b.tp_split_n.push_back(true);
    b.gemms.push_back({s, t.hidden, t.ffn});
    b.tp_split_n.push_back(false);
    double gemm_flops = 0;
    for (const GemmShape& g : b.gemms) gemm_flops += 2.0 * g.m_per_sample * g.n * g.k;
    // Attention scores and weighted sum: 2 * 2 * s^2 * h per sample. A fused
    // kernel (flash or memory-efficient) under a causal mask skips its half
    // (FlashAttention-2, Dao 2023, sec. 3). Math and eager attention run two
    // batched GEMMs over every head, masked half included: q k^T (heads x s
    // rows of s scores, d deep) and the scores times v (heads x s rows of d).
    if (scores) {
      // Batched over heads: tensor parallelism splits the heads (rows).
      b.tp_split_m.assign(b.gemms.size(), false);
      b.gemms.push_back({double(t.heads) * s, t.seq_len, head_dim});
      b.tp_split_n.push_back(true);
      b.tp_split_m.push_back(true);
      b.gemms.push_back({double(t.heads) * s, head_dim, t.seq_len});
      b.tp_split_n.push_back(true);
      b.tp_split_m.push_back(true);
      b.attention_flops = 0;
      b.fwd_flops = gemm_flops + 4.0 * s * s * h;
    } else {
      b.attention_flops = 4.0 * s * s * h * (t.causal ? 0.5 : 1.0);
      b.fwd_flops = gemm_flops + b.attention_flops;
    }
    // Saved activations per token (Korthikanti et al. sec. 4.1, redone for
    // autocast): LN inputs in residual precision (2 r h); QKV and fc1 inputs
    // (2 a h); q,k,v and the output kept by the fused attention kernel
    // (a (h + 2 kv_dim) + a h) -- the kernel writes its output in (b, s,
    // heads, d) order, so the out-projection's input is a view of it, not a
    // second copy (Korthikanti count it twice); MLP: GELU input and fc2 input
    // (2 a f), or for SwiGLU gate, up, SiLU output and product (4 a f). For
    // GPT-2 shapes this is 36 h bytes per token and layer, what
    // bench/memory_validation measured on PyTorch 2.11.
    const double unsplit = 2.0 * r * h + 2.0 * a * h;
    double split = a * (h + 2.0 * kv_dim) + a * h + (t.gated_mlp ? 4.0 : 2.0) * a * f;
    if (scores) {
      // Unfused attention keeps the softmax output (fp32: autocast runs
      // softmax in fp32) and its 16-bit cast for the second GEMM, s scores
      // per head and token (Korthikanti's 5 a s / h term, for autocast).
      split += (4.0 + a) * t.heads * s;
      b.attention_core_bytes = s * (4.0 + a) * t.heads * s;
    }
    // The activation (on the gate for SwiGLU): a ReLU's output is both what
    // it keeps and the next Linear's input, one tensor instead of two. HF's
    // "gelu_new", 0.5 x (1 + tanh(c (x + 0.044715 x^3))) in eager ops: pow
    // runs in fp32 under autocast and promotes the rest, so beyond the two
    // 16-bit tensors kept as with GELU it keeps tanh's fp32 output, the fp32
    // (1 + tanh) factor and the 16-bit 0.5 x: 10 bytes more per element.
    const Activation act = w.settings.activation;
    if (act == Activation::kRelu && !t.gated_mlp) split -= a * f;
    // Megatron-style layers fuse SwiGLU into one function that keeps only its
    // input (gate and up) and recomputes the SiLU in backward
    // (megatron/core/fusions/fused_bias_swiglu.py): 3 a f, not eager's 4.
    if (t.gated_mlp && w.settings.tensor_parallel == TensorParallel::kMegatron) split -= a * f;
    if (act == Activation::kGeluTanhUnfused) split += (4.0 + 4.0 + a) * f;
    b.saved_activation_bytes = s * (unsplit + split);
    b.tp_split_activation_bytes = s * split;
    b.recompute_saved_bytes = s * h * r;
    b.output_bytes = s * h * r;
    b.tp_capable = true;
    b.unit = b.name;
    // Eager PyTorch, per block: 2 LayerNorms, 4 GEMMs with their 4 weight and
    // 2 input casts (autocast), attention, activation, 2 residual adds.
    // Unfused attention: two batched GEMMs, scale, mask, softmax and cast in
    // place of one kernel. torch.compile fuses each elementwise chain between
    // two library calls: LayerNorm with its cast, the residual add with the
    // next LayerNorm, the activation with its cast (the weight casts, GEMMs
    // and attention stay): 4 fewer (SwiGLU: gate and product fused too).
    b.kernels = 17 + (t.gated_mlp ? 3 : 0) + (scores ? 5 : 0);
    b.fused_kernels = b.kernels - 4 - (t.gated_mlp ? 1 : 0) - (scores ? 3 : 0);
    // gelu_new's eight kernels (pow, two scalings, add, tanh, add, two
    // products) for GELU's one, and their fp32 result's cast for fc2;
    // compiled, one kernel as GELU.
    if (act == Activation::kGeluTanhUnfused) {
      b.kernels += 8;
      const bool autocast =
          w.precision == Precision::kBf16Autocast || w.precision == Precision::kFp16Autocast;
      if (autocast && !w.settings.compile) {
        // Under autocast pow runs in fp32 and promotes the chain: forward
        // moves 76 bytes an element (pow's input cast 6, pow, two scalings,
        // tanh and the 1 + tanh 8 each, the add of the 16-bit input 10, 0.5 x
        // 4, the product 10, fc2's cast back 6), backward 118 (three casts
        // 18, the product's two gradients 28, tanh's 12, three scalings 20,
        // pow's 28, the sum of x's three 16-bit gradients 12): 72 and 112
        // beyond GELU's one kernel each way. The 10 saved bytes above count 40 and 80 of
        // them at a transformer's 4 and 8 passes; the rest, 32 each way.
        // (2x H100, HF GPT-2 at micro-batch 16, GPU-bound: -14..-17 % on
        // every calibration run and mode where ReLU's OPT-125m, the same
        // shape, was -5 %; bench/validate/data/calibration.) Compiled, the
        // chain is one kernel (as GELU), so none of this.
        b.extra_traffic_fwd_bytes += s * 32.0 * f;
        b.extra_traffic_bwd_bytes += s * 32.0 * f;
      }
    }
    if (w.settings.norm == Norm::kRmsNormEager) {
      // Two RMSNorms of six kernels each over the fp32 residual stream
      // (pow, mean, add, rsqrt, two products) where LayerNorm is one: five
      // more per norm, each reading and writing 4 bytes an element (twice
      // that in backward), and the fp32 normalised input kept for the
      // weight's product. Compiled, one kernel as LayerNorm.
      b.kernels += 10;
      b.extra_traffic_fwd_bytes += s * 2 * 5 * 8.0 * h;
      b.extra_traffic_bwd_bytes += s * 2 * 5 * 16.0 * h;
      b.saved_activation_bytes += s * 2 * 4.0 * h;
    }
    if (!t.learned_positions) {
      // Rotary positions applied in eager ops, as transformers' Llama-style
      // models do (q * cos + rotate_half(q) * sin, rotate_half slicing,
      // negating and concatenating): five kernels each for q and k, each
      // reading and writing its 16-bit tensor; compiled, one.
      b.kernels += 10;
      b.fused_kernels += 1;
      b.extra_traffic_fwd_bytes += s * 5 * 2.0 * a * (h + kv_dim);
      b.extra_traffic_bwd_bytes += s * 5 * 4.0 * a * (h + kv_dim);
    }
    if (t.separate_qkv) {
      // Three Linears where one was: two more GEMMs, their two weight casts,
      // and two more casts of the (fp32) LayerNorm output, since autocast
      // caches only the casts of leaf tensors. Each Linear keeps its own
      // 16-bit input for its weight gradient; backward sums the three input
      // gradients (two adds in the residual precision). Compiled, the input
      // casts fuse into the LayerNorm; the GEMMs and weight casts stay.
      b.kernels += 6;
      b.fused_kernels += 4;
      b.saved_activation_bytes += s * 2.0 * a * h;
      b.extra_traffic_fwd_bytes += s * 2.0 * (r + a) * h;
      b.extra_traffic_bwd_bytes += s * 2.0 * 3.0 * r * h;
    }
    if (bias) {
      // The bias add rides in cuBLASLt's epilogue; backward reduces each
      // output gradient over the tokens, one kernel per biased Linear, which
      // the model counts as half as many forward launches (backward launches
      // twice the forward's), and reads that gradient once.
      b.kernels += biased_linears / 2;
      b.fused_kernels += biased_linears / 2;
      b.extra_traffic_bwd_bytes += s * biases * a;
    }
    // 2 LayerNorms, QKV (three if separate), out, MLP; a bias per Linear.
    b.param_tensors = 4 + (t.separate_qkv ? 4 : 2) + (t.gated_mlp ? 3 : 2);
    if (bias) b.param_tensors += biased_linears;
    // Megatron-LM (Shoeybi et al. 2019, fig. 3): one all-reduce after the
    // attention block and one after the MLP in forward, two in backward.
    b.tp_comm_bytes = s * h * a;
    b.tp_allreduces_fwd = 2;
    // The Linears a tensor-parallel plan splits, each dispatched through
    // DTensor: transformers' gated MLPs project gate and up with two modules
    // (gate_proj, up_proj) where the model runs one GEMM for both (2x H100,
    // Llama-style TP at micro-batch 1-8 under by 14-20 % with one,
    // bench/validate/data/calibration/2026-11-27_h100x2_library_run5).
    b.tp_split_linears = (t.separate_qkv ? 3 : 1) + 1 + (t.gated_mlp ? 2 : 1) + 1;
    w.layers.push_back(std::move(b));
  }

  // The tokens the output layer projects and the loss reads (a classifier
  // pools one: its logits are a row per sample, not per position).
  const double ht = t.head_tokens > 0 ? std::min<double>(t.head_tokens, s) : s;
  LayerCost head;
  head.name = "head";
  head.params = (t.tied_embeddings ? 0 : static_cast<int64_t>(v * h)) + 2 * int64_t{t.hidden};
  head.matmul_params = static_cast<int64_t>(v * h);
  head.gemms.push_back({ht, t.vocab, t.hidden});
  head.tp_split_n.push_back(true);
  head.fwd_flops = 2.0 * ht * v * h;
  head.saved_activation_bytes = s * h * r + ht * h * a;  // final LN input, projection input
  head.recompute_saved_bytes = head.saved_activation_bytes;
  head.tp_capable = true;  // vocabulary-parallel output layer (Megatron)
  head.vocab_parallel = true;
  head.kernels = 8;        // LayerNorm, casts, GEMM, fp32 cast, log-softmax, NLL
  head.fused_kernels = 5;  // compiled: LayerNorm with its cast, the loss as one kernel
  head.param_tensors = t.tied_embeddings ? 2 : 3;  // final LayerNorm, projection
  // Cross-entropy over the vocabulary runs in fp32 under autocast, per logit:
  // cast from 16 bits (read 2, write 4) and log-softmax (two reads, one
  // write of 4) forward; NLL's gradient (write 4), log-softmax backward (two
  // reads, one write) and the cast back (read 4, write 2) backward.
  head.extra_traffic_fwd_bytes = ht * v * (6 + 12);
  head.extra_traffic_bwd_bytes = ht * v * (4 + 12 + 6);
  if (t.head_transform) {
    // BERT's MLM transform before the projection: a biased hidden x hidden
    // Linear (input cast, weight cast, GEMM) and the activation, ahead of
    // the LayerNorm the head already counts; it keeps its 16-bit input and
    // the activation's input. Compiled: the activation fuses with the norm.
    const int64_t dense = int64_t{t.hidden} * t.hidden;
    head.params += dense + t.hidden;
    head.matmul_params += dense;
    head.gemms.insert(head.gemms.begin(), {ht, t.hidden, t.hidden});
    head.tp_split_n.insert(head.tp_split_n.begin(), false);
    head.fwd_flops += 2.0 * ht * h * h;
    head.saved_activation_bytes += ht * h * 2.0 * a;
    head.recompute_saved_bytes = head.saved_activation_bytes;
    head.kernels += 4;
    head.fused_kernels += 2;
    head.param_tensors += 2;
  }
  w.layers.push_back(std::move(head));
  w.input_bytes_per_sample = s * 8 * 2;  // int64 token ids and targets
  return absl::OkStatus();
}

namespace {

// ---------------------------------------------------------------- CNN tables

struct CnnBuilder {
  int a;  // activation bytes
  int hw;
  int c;
  std::vector<LayerCost> layers;
  std::string unit;            // FSDP unit of the layers added next (empty: root)
  bool channels_last = false;  // model and input in NHWC (memory_format)

  // conv (+ BN) (+ ReLU). Saved for backward: the BN input (the conv output)
  // and the ReLU output, which is also the next conv's saved input; without
  // BN only the ReLU output (in-place ReLU on the conv output).
  // `groups` > 1: a grouped convolution (ResNeXt's 3x3), timed as one
  // (GroupedConv) instead of as a GEMM.
  void Conv(const std::string& name, int cout, int k, int stride, bool bn, bool relu,
            bool changes_state = true, int groups = 1) {
    const int out_hw = (hw + 2 * (k / 2) - k) / stride + 1;
    LayerCost l;
    l.name = name;
    l.matmul_params = int64_t{c} / groups * cout * k * k;
    l.params = l.matmul_params + (bn ? 2 * cout : cout);
    const double out = double{1} * cout * out_hw * out_hw;
    if (groups == 1) {
      l.gemms.push_back({double{1} * out_hw * out_hw, cout, int64_t{c} * k * k});
    } else {
      l.grouped_convs.push_back(
          {double{1} * hw * hw, double{1} * out_hw * out_hw, c, cout, k, groups});
    }
    l.fwd_flops = 2.0 * out * (c / groups) * k * k;
    l.saved_activation_bytes = out * a * ((bn ? 1 : 0) + (relu ? 1 : 0));
    if (!bn && !relu) l.saved_activation_bytes = out * a;
    l.output_bytes = out * a;
    l.recompute_saved_bytes = l.output_bytes;
    l.unit = unit.empty() ? std::string() : unit;
    // Weight cast, conv, BN, ReLU; cuDNN runs 16-bit convolutions in NHWC on
    // tensor cores, so an NCHW model pays a layout transform in and out of
    // each conv (PyTorch's profile of ResNet-50 on H200: ~920 kernels per
    // step, bench/validate/data/calibration/2026-11-26_h200x2_calibration): each reads and
    // writes the tensor, forward (input, output) and backward (the output's
    // gradient in, the input's out, the input again for the weight gradient:
    // twice the forward's). A channels_last model skips them. torch.compile
    // lays convolutions out in NHWC itself (inductor's layout optimisation)
    // and fuses BN's normalisation with the ReLU (its statistics stay one
    // reduction): weight cast, conv, statistics, normalise-and-ReLU.
    const bool transforms = !channels_last;
    l.kernels = 2 + (transforms ? 2 : 0) + (bn ? 1 : 0) + (relu ? 1 : 0);
    l.fused_kernels = 2 + (bn ? 2 : (relu ? 1 : 0));
    // The transforms run inside cuDNN's convolution call: a channels_last
    // model issues as many ops from the host (2x H100: torchvision's
    // ResNet-50 channels_last trained at micro-batch 1 in 24.7-28.8 ms where
    // the probe's NCHW one took 25.2 forward + backward,
    // bench/validate/data/calibration/2026-11-26_h100x2_library_heldout{,2}, calibration).
    l.library_kernels = transforms ? 2 : 0;
    if (transforms) {
      const double in = double{1} * c * hw * hw;
      l.extra_traffic_fwd_bytes = 2.0 * (in + out) * a;
      l.extra_traffic_bwd_bytes = 4.0 * (in + out) * a;
    }
    if (bn) {
      // cuDNN's training BatchNorm reads its input for the statistics and
      // again to normalise, writing the output (3 passes over the conv
      // output), an in-place ReLU reads and writes it (2): 5 passes over 2
      // saved tensors forward. Backward: the ReLU's gradient reads the
      // gradient and its output and writes one (3), BN's reads gradient and
      // input for its reductions and again for the input gradient (5): 8.
      // A transformer's chains of casts and adds make about 4 and 8 per saved
      // byte; counted so, torchvision's ResNets trained GPU-bound at 2x H100
      // were over-predicted by 10-17 % (bench/validate/data/calibration).
      const double saved = relu ? 2.0 : 1.0;
      l.elementwise_fwd_passes = (relu ? 5.0 : 3.0) / saved;
      l.elementwise_bwd_passes = (relu ? 8.0 : 5.0) / saved;
      l.batch_norm_statistics_elements = out;
    } else {
      // A biased conv without BN (VGG): PyTorch adds the bias after cuDNN's
      // call, in place (2 passes over the output), the in-place ReLU reads
      // and writes it (2); backward, the ReLU's gradient reads the gradient
      // and the output and writes one (3), the bias gradient reduces it (1).
      // The transformer's 4 and 8 counted 8 backward: VGG-16 trained
      // GPU-bound at 2x H100 over-predicted +16 / +37 % at micro-batch 32 / 256
      // (bench/validate/data/calibration/2026-11-27_h100x2_library_run7).
      l.elementwise_fwd_passes = relu ? 4.0 : 2.0;
      l.elementwise_bwd_passes = relu ? 4.0 : 1.0;
    }
    l.param_tensors = bn ? 3 : 2;  // weight and BN's scale and shift, or a bias
    l.buffer_tensors = bn ? 3 : 0;
    layers.push_back(std::move(l));
    if (changes_state) {
      hw = out_hw;
      c = cout;
    }
  }
  void MaxPool(const std::string& name, int k, int stride, int pad) {
    const int out_hw = (hw + 2 * pad - k) / stride + 1;
    LayerCost l;
    l.name = name;
    const double out = double{1} * c * out_hw * out_hw;
    l.saved_activation_bytes = out * 8;  // int64 argmax indices; the input is saved upstream
    l.output_bytes = out * a;
    // Its traffic is not passes over the indices: forward reads the input
    // and writes the output and the indices; backward reads the output's
    // gradient and the indices and writes the input's gradient.
    const double in = double{1} * c * hw * hw;
    l.elementwise_fwd_passes = l.elementwise_bwd_passes = 0;
    l.extra_traffic_fwd_bytes = in * a + out * (a + 8.0);
    l.extra_traffic_bwd_bytes = in * a + out * (a + 8.0);
    l.kernels = 1;
    l.fused_kernels = 1;
    l.recompute_saved_bytes = l.output_bytes;
    layers.push_back(std::move(l));
    hw = out_hw;
  }
  void Linear(const std::string& name, int in, int out, bool relu_dropout) {
    LayerCost l;
    l.name = name;
    l.matmul_params = int64_t{in} * out;
    l.params = l.matmul_params + out;
    l.gemms.push_back({1.0, out, in});
    l.fwd_flops = 2.0 * in * out;
    // Input (16-bit) saved by the matmul; ReLU output and a dropout mask (1 B).
    l.saved_activation_bytes = double{1} * in * a + (relu_dropout ? out * (a + 1.0) : 0);
    l.output_bytes = double{1} * out * a;
    l.recompute_saved_bytes = l.output_bytes;
    l.kernels = relu_dropout ? 5 : 3;
    l.fused_kernels = relu_dropout ? 3 : 2;  // weight cast, GEMM (+ ReLU and dropout fused)
    l.param_tensors = 2;
    layers.push_back(std::move(l));
  }
};

// He et al., "Deep Residual Learning for Image Recognition" (2016), table 1.
// `wide`: the bottleneck's inner width over ResNet's (Zagoruyko & Komodakis,
// "Wide Residual Networks", 2016, as torchvision's wide_resnet50_2 and
// wide_resnet101_2 build it: 2x the 1x1 and 3x3 convolutions' channels, the
// block's output as in ResNet).
// `groups`: ResNeXt's cardinality (Xie et al., "Aggregated Residual
// Transformations for Deep Neural Networks", 2017, as torchvision's
// resnext50_32x4d / resnext101_32x8d / resnext101_64x4d build it: the 3x3
// convolution grouped, inner width planes x width_per_group / 64 x groups,
// passed here as `wide` = that over ResNet's planes).
std::vector<LayerCost> ResNet(int depth, int image, int classes, int a, bool channels_last,
                              int wide = 1, int groups = 1) {
  // timm's resnet26: bottlenecks, two a stage (timm.models.resnet).
  const bool bottleneck = depth >= 50 || depth == 26;
  std::vector<int> blocks;
  switch (depth) {
    case 18:
    case 26:
      blocks = {2, 2, 2, 2};
      break;
    case 34:
      blocks = {3, 4, 6, 3};
      break;
    case 50:
      blocks = {3, 4, 6, 3};
      break;
    case 101:
      blocks = {3, 4, 23, 3};
      break;
    case 200:  // He et al. 2016, "Identity Mappings in Deep Residual Networks" (timm's resnet200)
      blocks = {3, 24, 36, 3};
      break;
    default:
      blocks = {3, 8, 36, 3};
      break;
  }
  CnnBuilder b{a, image, 3, {}, {}, channels_last};
  b.Conv("conv1", 64, 7, 2, true, true);
  b.layers.back().input_gradient = false;
  // The 16-bit copy of the input image that conv1 saves.
  b.layers.back().saved_activation_bytes += 3.0 * image * image * a;
  b.MaxPool("maxpool", 3, 2, 1);
  const int widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int i = 0; i < blocks[stage]; ++i) {
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      const std::string p = absl::StrCat("layer", stage + 1, ".", i);
      b.unit = absl::StrCat("layer", stage + 1);  // torchvision's stages, FSDP's usual units
      const int out_c = bottleneck ? widths[stage] * 4 : widths[stage];
      const int in_c = b.c;
      const int in_hw = b.hw;
      if (bottleneck) {
        b.Conv(p + ".conv1", widths[stage] * wide, 1, 1, true, true);
        b.Conv(p + ".conv2", widths[stage] * wide, 3, stride, true, true, true, groups);
        b.Conv(p + ".conv3", out_c, 1, 1, true, true);
      } else {
        b.Conv(p + ".conv1", widths[stage], 3, stride, true, true);
        b.Conv(p + ".conv2", out_c, 3, 1, true, true);
      }
      // The residual add (read both, write the sum) before the last ReLU;
      // backward adds the shortcut's gradient to the block input's.
      b.layers.back().extra_traffic_fwd_bytes += 3.0 * b.c * b.hw * b.hw * a;
      b.layers.back().extra_traffic_bwd_bytes += 3.0 * double{1} * in_c * in_hw * in_hw * a;
      if (stride != 1 || in_c != out_c) {
        // Projection shortcut, computed from the block input.
        const int hw_after = b.hw, c_after = b.c;
        b.hw = in_hw;
        b.c = in_c;
        b.Conv(p + ".downsample", out_c, 1, stride, true, false);
        b.hw = hw_after;
        b.c = c_after;
      }
    }
  }
  b.unit.clear();
  LayerCost pool;
  pool.name = "avgpool";
  pool.output_bytes = double{1} * b.c * a;
  pool.saved_activation_bytes = 0;
  pool.recompute_saved_bytes = pool.output_bytes;
  pool.kernels = 1;
  pool.fused_kernels = 1;
  b.layers.push_back(pool);
  b.Linear("fc", b.c, classes, false);
  return std::move(b.layers);
}

// Simonyan & Zisserman (2015), configuration D.
std::vector<LayerCost> Vgg16(int image, int classes, int a, bool channels_last) {
  CnnBuilder b{a, image, 3, {}, {}, channels_last};
  const int cfg[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  int conv = 0, pool = 0;
  for (int v : cfg) {
    if (v == 0) {
      b.MaxPool(absl::StrCat("pool", ++pool), 2, 2, 0);
    } else {
      b.unit = absl::StrCat("conv", conv + 1);
      b.Conv(absl::StrCat("conv", ++conv), v, 3, 1, false, true);
    }
  }
  b.layers.front().saved_activation_bytes += 3.0 * image * image * a;
  b.layers.front().input_gradient = false;
  const int flat = b.c * b.hw * b.hw;
  b.layers.front().unit.clear();  // the first conv stays with the root
  b.Linear("fc1", flat, 4096, true);
  b.layers.back().unit = "fc1";
  b.Linear("fc2", 4096, 4096, true);
  b.Linear("fc3", 4096, classes, false);
  return std::move(b.layers);
}

// ---------------------------------------------------------------- presets

struct TransformerPreset {
  const char* name;
  TransformerShape shape;
};

// GPT sizes from Brown et al. (2020) table 2.1 (seq 1024 as GPT-2 here, vocab
// 50257, tied embeddings); Llama-2 sizes from Touvron et al. (2023).
const TransformerPreset kTransformers[] = {
    {"gpt-125m", {12, 768, 12, 12, 3072, 1024, 50257, false, true, true}},
    {"gpt-350m", {24, 1024, 16, 16, 4096, 1024, 50257, false, true, true}},
    {"gpt-760m", {24, 1536, 16, 16, 6144, 1024, 50257, false, true, true}},
    {"gpt-1.3b", {24, 2048, 16, 16, 8192, 1024, 50257, false, true, true}},
    {"gpt-2.7b", {32, 2560, 32, 32, 10240, 2048, 50257, false, true, true}},
    {"gpt-6.7b", {32, 4096, 32, 32, 16384, 2048, 50257, false, true, true}},
    {"llama-7b", {32, 4096, 32, 32, 11008, 4096, 32000, true, false, false}},
    {"llama-13b", {40, 5120, 40, 40, 13824, 4096, 32000, true, false, false}},
    {"llama-70b", {80, 8192, 64, 8, 28672, 4096, 32000, true, false, false}},
};

const char* const kCnnArchs[] = {"resnet18",        "resnet26",         "resnet34",
                                 "resnet50",        "resnet101",        "resnet152",
                                 "resnet200",       "wide_resnet50_2", "wide_resnet101_2", "vgg16"};
// Architectures a workload file names (arch) that are not presets: a preset's
// GEMMs are asked of the probe's cuBLASLt heuristic on every probe
// (probe_shapes.cc), which these need not widen.
const char* const kCnnArchsNotPresets[] = {"resnext50_32x4d", "resnext101_32x8d",
                                           "resnext101_64x4d"};

void SetDefaultsForTransformer(Workload& w) {
  const int64_t tokens_per_batch = 512 * 1024;  // ~0.5 M tokens, GPT-3 small's batch
  w.reference_global_batch = std::max<int64_t>(1, tokens_per_batch / w.transformer.seq_len);
  w.min_global_batch = w.max_global_batch = w.reference_global_batch;
  w.samples = 300e9 / w.transformer.seq_len;  // GPT-3's 300 B tokens
  w.max_micro_batch = 64;
}

}  // namespace

std::vector<std::string> CnnArchNames() {
  std::vector<std::string> names(std::begin(kCnnArchs), std::end(kCnnArchs));
  names.insert(names.end(), std::begin(kCnnArchsNotPresets), std::end(kCnnArchsNotPresets));
  for (const std::string& n : ModernCnnArchNames()) names.push_back(n);
  return names;
}

absl::StatusOr<std::vector<LayerCost>> CnnLayerTable(std::string_view arch, int image_size,
                                                     int num_classes, Precision precision,
                                                     MemoryFormat memory_format,
                                                     double stochastic_depth) {
  const int a = ActivationBytes(precision);
  const bool nhwc = memory_format == MemoryFormat::kChannelsLast;
  if (image_size < 32 || num_classes < 1) {
    return absl::InvalidArgumentError("image_size must be >= 32 and num_classes >= 1");
  }
  if (arch == "resnet18") return ResNet(18, image_size, num_classes, a, nhwc);
  if (arch == "resnet26") return ResNet(26, image_size, num_classes, a, nhwc);
  if (arch == "resnet34") return ResNet(34, image_size, num_classes, a, nhwc);
  if (arch == "resnet50") return ResNet(50, image_size, num_classes, a, nhwc);
  if (arch == "resnet101") return ResNet(101, image_size, num_classes, a, nhwc);
  if (arch == "resnet152") return ResNet(152, image_size, num_classes, a, nhwc);
  if (arch == "resnet200") return ResNet(200, image_size, num_classes, a, nhwc);
  if (arch == "wide_resnet50_2") return ResNet(50, image_size, num_classes, a, nhwc, 2);
  if (arch == "wide_resnet101_2") return ResNet(101, image_size, num_classes, a, nhwc, 2);
  if (arch == "vgg16") return Vgg16(image_size, num_classes, a, nhwc);
  if (arch == "resnext50_32x4d") return ResNet(50, image_size, num_classes, a, nhwc, 2, 32);
  if (arch == "resnext101_32x8d") return ResNet(101, image_size, num_classes, a, nhwc, 4, 32);
  if (arch == "resnext101_64x4d") return ResNet(101, image_size, num_classes, a, nhwc, 4, 64);
  if (IsModernCnn(arch)) {
    return ModernCnnTable(arch, image_size, num_classes, precision, nhwc, stochastic_depth);
  }
  return absl::NotFoundError(absl::StrCat("unknown CNN architecture '", std::string(arch),
                                          "'; use one of ", absl::StrJoin(CnnArchNames(), ", ")));
}

std::vector<std::string> PresetWorkloadNames() {
  std::vector<std::string> names;
  for (const auto& p : kTransformers) names.emplace_back(p.name);
  for (const char* c : kCnnArchs) names.emplace_back(c);
  return names;
}

absl::StatusOr<Workload> PresetWorkload(std::string_view name) {
  for (const auto& p : kTransformers) {
    if (name == p.name) {
      Workload w;
      w.name = p.name;
      w.family = ModelFamily::kTransformer;
      w.transformer = p.shape;
      SetDefaultsForTransformer(w);
      BuildTransformerLayers(w);
      return w;
    }
  }
  std::string arch(name);
  if (arch == "resnet-50") arch = "resnet50";
  for (const char* c : kCnnArchs) {
    if (arch == c) {
      Workload w;
      w.name = arch;
      w.family = ModelFamily::kCnn;
      w.cnn_arch = arch;
      auto layers = CnnLayerTable(arch, w.image_size, w.num_classes, w.precision);
      if (!layers.ok()) return layers.status();
      w.layers = *std::move(layers);
      w.input_bytes_per_sample = 3.0 * w.image_size * w.image_size * 4 + 8;
      // ImageNet-1k, 90 epochs at batch 256 (Goyal et al. 2017's baseline).
      w.samples = 90.0 * 1281167;
      w.reference_global_batch = w.min_global_batch = w.max_global_batch = 256;
      w.max_micro_batch = 256;
      return w;
    }
  }
  return absl::NotFoundError(absl::StrCat("unknown workload preset '", std::string(name),
                                          "'; use one of ",
                                          absl::StrJoin(PresetWorkloadNames(), ", ")));
}

// ---------------------------------------------------------------- TOML

namespace {

class TomlReader {
 public:
  explicit TomlReader(absl::string_view source) : source_(source) {}

  absl::Status Error(const toml::node* node, absl::string_view what, absl::string_view fix) const {
    const int line = node != nullptr ? static_cast<int>(node->source().begin.line) : 1;
    return absl::InvalidArgumentError(absl::StrCat(source_, ":", line, ": ", what, "; ", fix));
  }

  // Rejects keys of `table` not in `allowed`.
  absl::Status CheckKeys(const toml::table& table, absl::string_view where,
                         const std::set<std::string>& allowed) const {
    for (const auto& [key, node] : table) {
      if (!allowed.count(std::string(key.str()))) {
        return Error(
            &node, absl::StrCat("unknown key '", std::string(key.str()), "' in ", where),
            absl::StrCat("use one of: ", absl::StrJoin(allowed.begin(), allowed.end(), ", ")));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<double>> Number(const toml::table& t, absl::string_view key,
                                               double min, double max) const {
    const toml::node* n = t.get(std::string(key));
    if (n == nullptr) return std::optional<double>();
    double v;
    if (auto i = n->value_exact<int64_t>()) {
      v = static_cast<double>(*i);
    } else if (auto d = n->value_exact<double>()) {
      v = *d;
    } else {
      return Error(n, absl::StrCat("'", key, "' must be a number"),
                   absl::StrCat("write e.g. ", key, " = ", min > 1 ? min : 1));
    }
    if (!(v >= min && v <= max)) {
      return Error(n, absl::StrCat("'", key, "' = ", v, " is out of range"),
                   absl::StrCat("use a value between ", min, " and ", max));
    }
    return std::optional<double>(v);
  }

  absl::StatusOr<std::optional<int64_t>> Integer(const toml::table& t, absl::string_view key,
                                                 int64_t min, int64_t max) const {
    const toml::node* n = t.get(std::string(key));
    if (n == nullptr) return std::optional<int64_t>();
    std::optional<int64_t> v = n->value_exact<int64_t>();
    if (!v) {
      // Allow 1e9-style floats that are whole numbers.
      if (auto d = n->value_exact<double>(); d && std::floor(*d) == *d && std::abs(*d) < 9e18) {
        v = static_cast<int64_t>(*d);
      } else {
        return Error(n, absl::StrCat("'", key, "' must be an integer"),
                     absl::StrCat("write e.g. ", key, " = ", std::max<int64_t>(min, 1)));
      }
    }
    if (*v < min || *v > max) {
      return Error(n, absl::StrCat("'", key, "' = ", *v, " is out of range"),
                   absl::StrCat("use a value between ", min, " and ", max));
    }
    return v;
  }

  absl::StatusOr<std::optional<bool>> Bool(const toml::table& t, absl::string_view key) const {
    const toml::node* n = t.get(std::string(key));
    if (n == nullptr) return std::optional<bool>();
    if (auto b = n->value_exact<bool>()) return std::optional<bool>(*b);
    return Error(n, absl::StrCat("'", key, "' must be true or false"),
                 absl::StrCat("write ", key, " = true or ", key, " = false"));
  }

  absl::StatusOr<std::optional<std::string>> String(const toml::table& t,
                                                    absl::string_view key) const {
    const toml::node* n = t.get(std::string(key));
    if (n == nullptr) return std::optional<std::string>();
    if (auto s = n->value_exact<std::string>()) return std::optional<std::string>(*s);
    return Error(n, absl::StrCat("'", key, "' must be a string"),
                 absl::StrCat("quote it: ", key, " = \"...\""));
  }

 private:
  std::string source_;
};

#define XDEEP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = *std::move(tmp)
#define XDEEP_CONCAT_INNER(a, b) a##b
#define XDEEP_CONCAT(a, b) XDEEP_CONCAT_INNER(a, b)
#define ASSIGN_OR_RETURN(lhs, expr) \
  XDEEP_ASSIGN_OR_RETURN_IMPL(XDEEP_CONCAT(status_or_, __LINE__), lhs, expr)

const toml::table kEmptyTable;

// The keys that say how the script trains (docs/workload.md), each absent one
// at PyTorch 2.x's default. Runs before the layer tables are built: they
// depend on the attention kernel, the biases and the memory format.
absl::Status ParseTrainingSettings(const TomlReader& rd, const toml::table& model,
                                   const toml::table& training, Workload& w) {
  TrainingSettings& st = w.settings;
  st = TrainingSettings{};
  st.linear_bias = true;                              // nn.Linear(bias=True)
  st.activation_checkpointing = Checkpointing::kOff;  // nothing is checkpointed unless asked
  struct Choice {
    const char* name;
    int value;
  };
  // A string key of `table` that must be one of `choices`; *out keeps its value when absent.
  auto choose = [&](const toml::table& table, const char* key,
                    std::initializer_list<Choice> choices, int* out) -> absl::Status {
    auto v = rd.String(table, key);
    if (!v.ok()) return v.status();
    if (!v->has_value()) return absl::OkStatus();
    std::vector<std::string> names;
    for (const Choice& c : choices) {
      if (**v == c.name) {
        *out = c.value;
        return absl::OkStatus();
      }
      names.push_back(absl::StrCat("\"", c.name, "\""));
    }
    return rd.Error(table.get(key), absl::StrCat("unknown ", key, " '", **v, "'"),
                    absl::StrCat("use ", absl::StrJoin(names, ", ")));
  };
  int impl = static_cast<int>(st.optimizer_impl);
  if (auto s = choose(training, "optimizer_impl",
                      {{"foreach", int(OptimizerImpl::kForeach)},
                       {"fused", int(OptimizerImpl::kFused)},
                       {"for-loop", int(OptimizerImpl::kForLoop)}},
                      &impl);
      !s.ok()) {
    return s;
  }
  st.optimizer_impl = static_cast<OptimizerImpl>(impl);
  int attention = static_cast<int>(st.attention);
  if (auto s = choose(model, "attention",
                      {{"sdpa", int(AttentionKernel::kSdpa)},
                       {"flash", int(AttentionKernel::kFlash)},
                       {"efficient", int(AttentionKernel::kEfficient)},
                       {"math", int(AttentionKernel::kMath)},
                       {"eager", int(AttentionKernel::kEager)}},
                      &attention);
      !s.ok()) {
    return s;
  }
  st.attention = static_cast<AttentionKernel>(attention);
  int format = static_cast<int>(st.memory_format);
  if (auto s = choose(model, "memory_format",
                      {{"contiguous", int(MemoryFormat::kContiguous)},
                       {"channels_last", int(MemoryFormat::kChannelsLast)}},
                      &format);
      !s.ok()) {
    return s;
  }
  st.memory_format = static_cast<MemoryFormat>(format);
  int activation = static_cast<int>(st.activation);
  if (auto s = choose(model, "activation",
                      {{"gelu", int(Activation::kGelu)},
                       {"relu", int(Activation::kRelu)},
                       {"silu", int(Activation::kSilu)},
                       {"gelu_new", int(Activation::kGeluTanhUnfused)}},
                      &activation);
      !s.ok()) {
    return s;
  }
  st.activation = static_cast<Activation>(activation);
  int norm = static_cast<int>(st.norm);
  if (auto s = choose(
          model, "norm",
          {{"layernorm", int(Norm::kLayerNorm)}, {"rmsnorm_eager", int(Norm::kRmsNormEager)}},
          &norm);
      !s.ok()) {
    return s;
  }
  st.norm = static_cast<Norm>(norm);
  int tensor_parallel = static_cast<int>(st.tensor_parallel);
  if (auto s = choose(model, "tensor_parallel",
                      {{"dtensor", int(TensorParallel::kDTensor)},
                       {"megatron", int(TensorParallel::kMegatron)}},
                      &tensor_parallel);
      !s.ok()) {
    return s;
  }
  st.tensor_parallel = static_cast<TensorParallel>(tensor_parallel);
  int pipeline_parallel = static_cast<int>(st.pipeline_parallel);
  if (auto s = choose(model, "pipeline_parallel",
                      {{"megatron", int(PipelineParallel::kMegatron)},
                       {"deepspeed", int(PipelineParallel::kDeepSpeed)},
                       {"torch", int(PipelineParallel::kTorch)}},
                      &pipeline_parallel);
      !s.ok()) {
    return s;
  }
  st.pipeline_parallel = static_cast<PipelineParallel>(pipeline_parallel);
  auto fp32_logits = rd.Bool(model, "fp32_logits");
  if (!fp32_logits.ok()) return fp32_logits.status();
  if (*fp32_logits) st.fp32_logits = **fp32_logits;
  auto ends = rd.Bool(model, "pipeline_ends_as_layers");
  if (!ends.ok()) return ends.status();
  if (*ends) st.pipeline_ends_as_layers = **ends;
  auto async_p2p = rd.Bool(model, "pipeline_async_p2p");
  if (!async_p2p.ok()) return async_p2p.status();
  if (*async_p2p) st.pipeline_async_p2p = **async_p2p;
  if (st.pipeline_async_p2p && st.pipeline_parallel != PipelineParallel::kMegatron) {
    return rd.Error(model.get("pipeline_async_p2p"),
                    "pipeline_async_p2p is megatron-core's overlap_p2p_comm: the deepspeed and "
                    "torch pipeline engines have no such option",
                    "remove pipeline_async_p2p, or set pipeline_parallel = \"megatron\"");
  }
  int release = static_cast<int>(st.megatron_release);
  if (auto s = choose(model, "megatron_release",
                      {{"core", int(MegatronRelease::kCore)},
                       {"2022", int(MegatronRelease::k2022)},
                       {"2021", int(MegatronRelease::k2021)}},
                      &release);
      !s.ok()) {
    return s;
  }
  st.megatron_release = static_cast<MegatronRelease>(release);
  if (st.megatron_release != MegatronRelease::kCore &&
      st.pipeline_parallel != PipelineParallel::kMegatron) {
    return rd.Error(model.get("megatron_release"),
                    "megatron_release describes Megatron-LM's own data-parallel wrapper: the "
                    "deepspeed and torch pipeline engines reduce gradients their own way",
                    "remove megatron_release, or set pipeline_parallel = \"megatron\"");
  }
  int ds_release = static_cast<int>(st.deepspeed_release);
  if (auto s = choose(
          model, "deepspeed_release",
          {{"current", int(DeepSpeedRelease::kCurrent)}, {"2021", int(DeepSpeedRelease::k2021)}},
          &ds_release);
      !s.ok()) {
    return s;
  }
  st.deepspeed_release = static_cast<DeepSpeedRelease>(ds_release);
  if (st.deepspeed_release != DeepSpeedRelease::kCurrent &&
      st.pipeline_parallel != PipelineParallel::kDeepSpeed) {
    return rd.Error(model.get("deepspeed_release"),
                    "deepspeed_release describes DeepSpeed's pipeline engine: the megatron and "
                    "torch engines are not DeepSpeed's",
                    "remove deepspeed_release, or set pipeline_parallel = \"deepspeed\"");
  }
  auto bias = rd.Bool(model, "linear_bias");
  if (!bias.ok()) return bias.status();
  if (*bias) st.linear_bias = **bias;
  auto weight_decay = rd.Number(training, "weight_decay", 0, 1);
  if (!weight_decay.ok()) return weight_decay.status();
  if (*weight_decay) st.weight_decay = **weight_decay;
  auto compile = rd.Bool(training, "compile");
  if (!compile.ok()) return compile.status();
  if (*compile) st.compile = **compile;
  // true, false, or "tuned" (the script follows XDEEP_RECOMPUTE).
  if (const toml::node* n = training.get("activation_checkpointing"); n != nullptr) {
    if (auto b = n->value_exact<bool>()) {
      st.activation_checkpointing = *b ? Checkpointing::kOn : Checkpointing::kOff;
    } else if (auto t = n->value_exact<std::string>(); t && *t == "tuned") {
      st.activation_checkpointing = Checkpointing::kTuned;
    } else {
      return rd.Error(n, "'activation_checkpointing' must be true, false or \"tuned\"",
                      "write true if every block is checkpointed, \"tuned\" if the script "
                      "checkpoints when XDEEP_RECOMPUTE=1");
    }
  }
  // FSDP2's MixedPrecisionPolicy: param_dtype None keeps the parameters'
  // own dtype (fp32) and reduce_dtype None follows param_dtype.
  const bool autocast16 =
      w.precision == Precision::kBf16Autocast || w.precision == Precision::kFp16Autocast;
  const char* sixteen = w.precision == Precision::kFp16Autocast ? "fp16" : "bf16";
  auto dtype = [&](const char* key, bool* out) -> absl::Status {
    auto v = rd.String(training, key);
    if (!v.ok()) return v.status();
    if (!v->has_value()) return absl::OkStatus();
    if (**v == "fp32") {
      *out = false;
    } else if (**v == sixteen && autocast16) {
      *out = true;
    } else {
      return rd.Error(training.get(key),
                      absl::StrCat(key, " '", **v, "' does not go with precision ",
                                   std::string(PrecisionName(w.precision))),
                      autocast16 ? absl::StrCat("use \"fp32\" or \"", sixteen, "\"")
                                 : std::string("use \"fp32\" (16-bit FSDP dtypes need bf16- or "
                                               "fp16-autocast precision)"));
    }
    return absl::OkStatus();
  };
  auto fp32_reduce = rd.Bool(training, "fp32_grad_reduce");
  if (!fp32_reduce.ok()) return fp32_reduce.status();
  if (*fp32_reduce) {
    if (**fp32_reduce && w.precision != Precision::kBf16Mixed) {
      return rd.Error(
          training.get("fp32_grad_reduce"),
          absl::StrCat("fp32_grad_reduce does not go with precision ",
                       std::string(PrecisionName(w.precision)), ": its gradients are fp32 already"),
          "remove fp32_grad_reduce, or set precision = \"bf16-mixed\" if the "
          "weights and gradients are 16-bit");
    }
    // DeepSpeed of 2021 had no bf16 of its own (pipeline_engine.h): there
    // fp32 accumulation is the run's choice, as for Megatron.
    if (**fp32_reduce && st.pipeline_parallel == PipelineParallel::kDeepSpeed &&
        st.deepspeed_release != DeepSpeedRelease::k2021) {
      return rd.Error(training.get("fp32_grad_reduce"),
                      "fp32_grad_reduce with pipeline_parallel = \"deepspeed\": DeepSpeed's "
                      "engine accumulates bf16 gradients in its own fp32 buffer already",
                      "remove fp32_grad_reduce (the deepspeed engine's fp32 buffer is modelled), "
                      "or set [model] deepspeed_release = \"2021\" for the engine of 2021");
    }
    st.fp32_grad_reduce = **fp32_reduce;
  }
  w.fsdp_16bit_params = false;
  if (auto s = dtype("fsdp_param_dtype", &w.fsdp_16bit_params); !s.ok()) return s;
  w.fsdp_16bit_reduce = w.fsdp_16bit_params;
  if (auto s = dtype("fsdp_reduce_dtype", &w.fsdp_16bit_reduce); !s.ok()) return s;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Workload> ParseWorkloadToml(std::string_view toml_text, std::string_view source_view,
                                           const BuildPoll& poll) {
  const std::string source_name(source_view);
  if (auto st = CheckTomlText(toml_text, source_name); !st.ok()) return st;
  TomlReader rd(source_name);
  toml::table root;
  try {
    root = toml::parse(toml_text, std::string_view(source_name));
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ":", e.source().begin.line, ": ", std::string(e.description()),
                     "; fix the TOML syntax (see examples/workloads/*.toml)"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ":1: ", e.what(), "; fix the TOML syntax"));
  }
  if (auto st =
          rd.CheckKeys(root, "the top level", {"name", "model", "training", "batch", "parallel"});
      !st.ok()) {
    return st;
  }
  for (const char* section : {"model", "training", "batch", "parallel"}) {
    const toml::node* n = root.get(section);
    if (n != nullptr && !n->is_table()) {
      return rd.Error(n, absl::StrCat("'", section, "' must be a table"),
                      absl::StrCat("write it as a [", section, "] section"));
    }
  }
  const toml::table* model = root["model"].as_table();
  if (model == nullptr) {
    return rd.Error(nullptr, "missing [model] section",
                    "add [model] with family = \"transformer\" | \"cnn\" | \"generic\" or "
                    "preset = \"gpt-125m\"");
  }
  const toml::table& training =
      root["training"].as_table() ? *root["training"].as_table() : kEmptyTable;
  const toml::table& batch = root["batch"].as_table() ? *root["batch"].as_table() : kEmptyTable;

  if (auto st = rd.CheckKeys(*model, "[model]",
                             {"family",
                              "preset",
                              "layers",
                              "hidden",
                              "heads",
                              "kv_heads",
                              "ffn",
                              "seq_len",
                              "vocab",
                              "gated_mlp",
                              "tied_embeddings",
                              "attention",
                              "linear_bias",
                              "learned_positions",
                              "separate_qkv",
                              "token_types",
                              "embedding_norm",
                              "head_transform",
                              "head_tokens",
                              "causal",
                              "memory_format",
                              "activation",
                              "norm",
                              "tensor_parallel",
                              "pipeline_parallel",
                              "fp32_logits",
                              "pipeline_ends_as_layers",
                              "pipeline_async_p2p",
                              "megatron_release",
                              "deepspeed_release",
                              "arch",
                              "image_size",
                              "num_classes",
                              "stochastic_depth",
                              "parameters",
                              "forward_flops_per_sample",
                              "activation_bytes_per_sample",
                              "num_layers",
                              "input_bytes_per_sample"});
      !st.ok()) {
    return st;
  }
  if (auto st = rd.CheckKeys(
          training, "[training]",
          {"precision", "optimizer", "optimizer_impl", "weight_decay", "activation_checkpointing",
           "compile", "fsdp_param_dtype", "fsdp_reduce_dtype", "fp32_grad_reduce", "samples",
           "tokens", "epochs", "dataset_size"});
      !st.ok()) {
    return st;
  }
  if (auto st = rd.CheckKeys(batch, "[batch]",
                             {"global", "min", "max", "may_change", "b_noise", "max_micro"});
      !st.ok()) {
    return st;
  }

  Workload w;
  ASSIGN_OR_RETURN(std::optional<std::string> name, rd.String(root, "name"));
  ASSIGN_OR_RETURN(std::optional<std::string> preset, rd.String(*model, "preset"));
  ASSIGN_OR_RETURN(std::optional<std::string> family, rd.String(*model, "family"));
  if (preset) {
    auto p = PresetWorkload(*preset);
    if (!p.ok()) {
      return rd.Error(model->get("preset"), std::string(p.status().message()),
                      "pick a preset from that list or describe the model with family = ...");
    }
    w = *std::move(p);
  }
  // Precision first: the layer tables depend on it.
  ASSIGN_OR_RETURN(std::optional<std::string> precision, rd.String(training, "precision"));
  if (precision) {
    if (*precision == "fp32")
      w.precision = Precision::kFp32;
    else if (*precision == "bf16" || *precision == "bf16-autocast")
      w.precision = Precision::kBf16Autocast;
    else if (*precision == "fp16" || *precision == "fp16-autocast")
      w.precision = Precision::kFp16Autocast;
    else if (*precision == "bf16-mixed")
      w.precision = Precision::kBf16Mixed;
    else
      return rd.Error(training.get("precision"),
                      absl::StrCat("unknown precision '", *precision, "'"),
                      "use fp32, bf16-autocast (PyTorch AMP), fp16-autocast or bf16-mixed "
                      "(Megatron/DeepSpeed: 16-bit weights, fp32 master copy)");
  }
  ASSIGN_OR_RETURN(std::optional<std::string> optimizer, rd.String(training, "optimizer"));
  if (optimizer) {
    if (*optimizer == "adamw")
      w.optimizer = OptimizerKind::kAdamW;
    else if (*optimizer == "adam")
      w.optimizer = OptimizerKind::kAdam;
    else if (*optimizer == "sgd-momentum" || *optimizer == "sgd_momentum")
      w.optimizer = OptimizerKind::kSgdMomentum;
    else if (*optimizer == "sgd")
      w.optimizer = OptimizerKind::kSgd;
    else
      return rd.Error(training.get("optimizer"),
                      absl::StrCat("unknown optimizer '", *optimizer, "'"),
                      "use adamw, adam, sgd-momentum or sgd");
  }

  if (auto st = ParseTrainingSettings(rd, *model, training, w); !st.ok()) return st;
  if (const toml::table* parallel = root["parallel"].as_table()) {
    if (auto st = ParseParallelTable(*parallel, source_name, &w.parallel); !st.ok()) return st;
    const Checkpointing ck = w.settings.activation_checkpointing;
    if ((ck == Checkpointing::kOn && w.parallel.recompute != "on" &&
         !w.parallel.recompute.empty()) ||
        (ck == Checkpointing::kOff && w.parallel.recompute != "off" &&
         !w.parallel.recompute.empty())) {
      return rd.Error(parallel->get("recompute"),
                      "[parallel] recompute contradicts [training] activation_checkpointing",
                      "keep one of them");
    }
    // DeepSpeed's PipelineEngine runs one schedule, TrainSchedule (1F1B).
    if (w.settings.pipeline_parallel == PipelineParallel::kDeepSpeed &&
        w.parallel.pipeline_schedule == "interleaved") {
      return rd.Error(parallel->get("pipeline_schedule"),
                      "DeepSpeed's pipeline engine has no interleaved schedule",
                      "use pipeline_schedule = \"1f1b\" or pipeline_parallel = \"megatron\"");
    }
  }

  std::string fam = family ? *family
                           : (preset ? (w.family == ModelFamily::kTransformer ? "transformer"
                                        : w.family == ModelFamily::kCnn       ? "cnn"
                                                                              : "generic")
                                     : "");
  if (fam.empty()) {
    return rd.Error(
        model, "[model] needs 'family' or 'preset'",
        "add family = \"transformer\" (or \"cnn\", \"generic\") or preset = \"gpt-125m\"");
  }
  // Settings that only one family has: said of another, they are a mistake.
  for (const auto& [key, needs] : {std::pair<const char*, const char*>{"attention", "transformer"},
                                   {"linear_bias", "transformer"},
                                   {"activation", "transformer"},
                                   {"norm", "transformer"},
                                   {"tensor_parallel", "transformer"},
                                   {"pipeline_parallel", "transformer"},
                                   {"fp32_logits", "transformer"},
                                   {"pipeline_ends_as_layers", "transformer"},
                                   {"pipeline_async_p2p", "transformer"},
                                   {"megatron_release", "transformer"},
                                   {"deepspeed_release", "transformer"},
                                   {"memory_format", "cnn"},
                                   {"stochastic_depth", "cnn"}}) {
    if (model->get(key) != nullptr && fam != needs) {
      return rd.Error(model->get(key),
                      absl::StrCat("'", key, "' applies to family = \"", needs, "\" only"),
                      absl::StrCat("remove ", key, " from this ", fam, " model"));
    }
  }
  if (fam == "transformer") {
    w.family = ModelFamily::kTransformer;
    TransformerShape& t = w.transformer;
    struct IntKey {
      const char* key;
      int* field;
      int64_t min, max;
    };
    const IntKey keys[] = {{"layers", &t.layers, 1, 100000}, {"hidden", &t.hidden, 1, 1 << 20},
                           {"heads", &t.heads, 1, 1 << 16},  {"kv_heads", &t.kv_heads, 1, 1 << 16},
                           {"ffn", &t.ffn, 1, 1 << 24},      {"seq_len", &t.seq_len, 1, 1 << 24},
                           {"vocab", &t.vocab, 1, 1 << 24},  {"head_tokens", &t.head_tokens, 0, 1 << 24}};
    for (const IntKey& k : keys) {
      ASSIGN_OR_RETURN(std::optional<int64_t> v, rd.Integer(*model, k.key, k.min, k.max));
      if (v) *k.field = static_cast<int>(*v);
    }
    struct BoolKey {
      const char* key;
      bool* field;
    };
    const BoolKey bools[] = {{"gated_mlp", &t.gated_mlp},
                             {"tied_embeddings", &t.tied_embeddings},
                             {"learned_positions", &t.learned_positions},
                             {"separate_qkv", &t.separate_qkv},
                             {"token_types", &t.token_types},
                             {"embedding_norm", &t.embedding_norm},
                             {"head_transform", &t.head_transform},
                             {"causal", &t.causal}};
    for (const BoolKey& k : bools) {
      ASSIGN_OR_RETURN(std::optional<bool> v, rd.Bool(*model, k.key));
      if (v) *k.field = *v;
    }
    if (t.kv_heads == 0) t.kv_heads = t.heads;
    if (t.ffn == 0) t.ffn = 4 * t.hidden;
    const char* required[] = {"layers", "hidden", "heads", "seq_len", "vocab"};
    const int* values[] = {&t.layers, &t.hidden, &t.heads, &t.seq_len, &t.vocab};
    for (int i = 0; i < 5; ++i) {
      if (*values[i] <= 0) {
        return rd.Error(model, absl::StrCat("transformer needs '", required[i], "'"),
                        absl::StrCat("add ", required[i], " = <integer> to [model]"));
      }
    }
    if (t.hidden % t.heads != 0) {
      return rd.Error(
          model->get("heads") ? model->get("heads") : model,
          absl::StrCat("hidden (", t.hidden, ") is not a multiple of heads (", t.heads, ")"),
          "choose heads that divide hidden");
    }
    if (t.heads % t.kv_heads != 0) {
      return rd.Error(
          model->get("kv_heads") ? model->get("kv_heads") : model,
          absl::StrCat("heads (", t.heads, ") is not a multiple of kv_heads (", t.kv_heads, ")"),
          "choose kv_heads that divide heads");
    }
    if (!preset) SetDefaultsForTransformer(w);
    if (absl::Status s = BuildTransformerLayers(w, poll); !s.ok()) return s;
    // The batch's own bytes where they are not token ids: a ViT's images
    // (fp32, 3 x 224 x 224) and labels, held through the step.
    ASSIGN_OR_RETURN(std::optional<double> inb,
                     rd.Number(*model, "input_bytes_per_sample", 0, 1e12));
    if (inb) w.input_bytes_per_sample = *inb;
  } else if (fam == "cnn") {
    w.family = ModelFamily::kCnn;
    ASSIGN_OR_RETURN(std::optional<std::string> arch, rd.String(*model, "arch"));
    if (arch) w.cnn_arch = *arch;
    if (w.cnn_arch.empty()) {
      return rd.Error(model, "cnn needs 'arch'",
                      absl::StrCat("add arch = one of ", absl::StrJoin(CnnArchNames(), ", ")));
    }
    ASSIGN_OR_RETURN(std::optional<int64_t> image, rd.Integer(*model, "image_size", 32, 4096));
    if (image) w.image_size = static_cast<int>(*image);
    ASSIGN_OR_RETURN(std::optional<int64_t> classes, rd.Integer(*model, "num_classes", 1, 1 << 24));
    if (classes) w.num_classes = static_cast<int>(*classes);
    // Stochastic depth's rate (torchvision's stochastic_depth_prob, timm's
    // drop_path_rate); absent: torchvision's default for the architecture.
    ASSIGN_OR_RETURN(std::optional<double> sd, rd.Number(*model, "stochastic_depth", 0, 1));
    auto layers = CnnLayerTable(w.cnn_arch, w.image_size, w.num_classes, w.precision,
                                w.settings.memory_format, sd ? *sd : -1);
    if (!layers.ok()) {
      return rd.Error(model->get("arch") ? model->get("arch") : model,
                      std::string(layers.status().message()), "pick a listed architecture");
    }
    w.layers = *std::move(layers);
    w.input_bytes_per_sample = 3.0 * w.image_size * w.image_size * 4 + 8;
    if (!preset) {
      w.samples = 90.0 * 1281167;
      w.reference_global_batch = w.min_global_batch = w.max_global_batch = 256;
      w.max_micro_batch = 256;
    }
  } else if (fam == "generic") {
    w.family = ModelFamily::kGeneric;
    ASSIGN_OR_RETURN(std::optional<double> params, rd.Number(*model, "parameters", 1, 1e15));
    ASSIGN_OR_RETURN(std::optional<double> flops,
                     rd.Number(*model, "forward_flops_per_sample", 1, 1e21));
    ASSIGN_OR_RETURN(std::optional<double> act,
                     rd.Number(*model, "activation_bytes_per_sample", 0, 1e15));
    ASSIGN_OR_RETURN(std::optional<int64_t> nl, rd.Integer(*model, "num_layers", 1, 100000));
    ASSIGN_OR_RETURN(std::optional<double> inb,
                     rd.Number(*model, "input_bytes_per_sample", 0, 1e12));
    const char* missing = !params  ? "parameters"
                          : !flops ? "forward_flops_per_sample"
                          : !act   ? "activation_bytes_per_sample"
                                   : nullptr;
    if (missing != nullptr) {
      return rd.Error(model, absl::StrCat("generic model needs '", missing, "'"),
                      absl::StrCat("add ", missing, " = <number> to [model]"));
    }
    const int n = nl ? static_cast<int>(*nl) : 1;
    // Even split over layers; each layer is one GEMM whose m (tokens-equivalent
    // per sample) makes 2 m n k equal its FLOPs, with a square n = k weight.
    const double p = *params / n;
    const double width = std::max(1.0, std::sqrt(p));
    w.layers.clear();
    w.layers.reserve(n);  // 100k layers grown by doubling cost more than the parse
    for (int i = 0; i < n; ++i) {
      if (poll && i % kLayersPerPoll == kLayersPerPoll - 1) {
        if (absl::Status s = poll(); !s.ok()) return s;
      }
      LayerCost l;
      l.name = absl::StrCat("layer", i);
      l.params = static_cast<int64_t>(p);
      l.matmul_params = l.params;
      l.fwd_flops = *flops / n;
      const int64_t side = static_cast<int64_t>(width);
      l.gemms.push_back({l.fwd_flops / (2.0 * side * side), side, side});  // exact FLOPs
      l.saved_activation_bytes = *act / n;
      l.output_bytes = l.saved_activation_bytes / 4;
      l.recompute_saved_bytes = l.output_bytes;
      l.unit = l.name;
      l.kernels = 5;
      l.fused_kernels = 3;
      w.layers.push_back(std::move(l));
    }
    w.input_bytes_per_sample = inb ? *inb : 0;
    if (!preset) {
      w.samples = 1e6;
      w.reference_global_batch = w.min_global_batch = w.max_global_batch = 256;
      w.max_micro_batch = 256;
    }
  } else {
    return rd.Error(model->get("family"), absl::StrCat("unknown family '", fam, "'"),
                    "use family = \"transformer\", \"cnn\" or \"generic\"");
  }
  w.name = name ? *name : (preset ? *preset : std::string("workload"));

  // Training length.
  ASSIGN_OR_RETURN(std::optional<double> samples, rd.Number(training, "samples", 1, 1e18));
  ASSIGN_OR_RETURN(std::optional<double> tokens, rd.Number(training, "tokens", 1, 1e18));
  ASSIGN_OR_RETURN(std::optional<double> epochs, rd.Number(training, "epochs", 1e-6, 1e9));
  ASSIGN_OR_RETURN(std::optional<double> dataset, rd.Number(training, "dataset_size", 1, 1e15));
  const int given = (samples ? 1 : 0) + (tokens ? 1 : 0) + (epochs ? 1 : 0);
  if (given > 1) {
    return rd.Error(&training, "training length given more than once",
                    "keep exactly one of samples, tokens, or epochs with dataset_size");
  }
  if (samples) w.samples = *samples;
  if (tokens) {
    if (w.family != ModelFamily::kTransformer) {
      return rd.Error(training.get("tokens"),
                      "'tokens' needs a transformer (tokens per sample = seq_len)",
                      "use samples = ... or epochs = ... with dataset_size = ...");
    }
    w.samples = *tokens / w.transformer.seq_len;
  }
  if (epochs) {
    if (!dataset) {
      return rd.Error(training.get("epochs"), "'epochs' needs 'dataset_size'",
                      "add dataset_size = <samples per epoch> to [training]");
    }
    w.samples = *epochs * *dataset;
  } else if (dataset) {
    return rd.Error(training.get("dataset_size"), "'dataset_size' without 'epochs'",
                    "add epochs = <count>, or remove dataset_size");
  }

  // Batch.
  ASSIGN_OR_RETURN(std::optional<int64_t> global, rd.Integer(batch, "global", 1, int64_t{1} << 40));
  ASSIGN_OR_RETURN(std::optional<int64_t> bmin, rd.Integer(batch, "min", 1, int64_t{1} << 40));
  ASSIGN_OR_RETURN(std::optional<int64_t> bmax, rd.Integer(batch, "max", 1, int64_t{1} << 40));
  ASSIGN_OR_RETURN(std::optional<bool> may_change, rd.Bool(batch, "may_change"));
  ASSIGN_OR_RETURN(std::optional<double> b_noise, rd.Number(batch, "b_noise", 0, 1e15));
  ASSIGN_OR_RETURN(std::optional<int64_t> max_micro, rd.Integer(batch, "max_micro", 1, 1 << 20));
  if (global) w.reference_global_batch = *global;
  w.batch_may_change = may_change.value_or(bmin.has_value() || bmax.has_value());
  if (w.batch_may_change) {
    w.min_global_batch = bmin.value_or(w.reference_global_batch);
    w.max_global_batch = bmax.value_or(w.reference_global_batch);
    if (!global) w.reference_global_batch = w.min_global_batch;
  } else {
    if (bmin || bmax) {
      return rd.Error(batch.get(bmin ? "min" : "max"), "batch bounds given but may_change = false",
                      "set may_change = true, or remove min/max and give global = <samples>");
    }
    w.min_global_batch = w.max_global_batch = w.reference_global_batch;
  }
  if (w.min_global_batch > w.max_global_batch) {
    return rd.Error(batch.get("min"),
                    absl::StrCat("min (", w.min_global_batch, ") > max (", w.max_global_batch, ")"),
                    "make min <= max");
  }
  if (w.reference_global_batch < w.min_global_batch ||
      w.reference_global_batch > w.max_global_batch) {
    return rd.Error(batch.get("global"), "global batch outside [min, max]",
                    "choose global between min and max");
  }
  if (b_noise) w.b_noise = *b_noise;
  if (max_micro) w.max_micro_batch = static_cast<int>(*max_micro);
  return w;
}

}  // namespace xdeep::tuner
