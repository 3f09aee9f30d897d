// Workload description for the tuner: what is trained (transformer, CNN preset
// with a per-layer table, or a generic FLOP/byte description), in which
// precision and optimizer, for how long, and within which global-batch bounds.
// Parsed from TOML text handed over by the caller (no file I/O here).
#ifndef XDEEP_TUNER_WORKLOAD_H_
#define XDEEP_TUNER_WORKLOAD_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/parallel_constraints.h"

namespace xdeep::tuner {

enum class ModelFamily { kTransformer, kCnn, kGeneric };

// How tensors are stored while training. The names follow what frameworks do:
//  kFp32         everything fp32.
//  kBf16Autocast / kFp16Autocast  PyTorch AMP: fp32 parameters, gradients and
//                optimizer state; 16-bit copies of weights and 16-bit
//                activations inside autocast regions.
//  kBf16Mixed    Megatron / DeepSpeed style: 16-bit weights and gradients,
//                fp32 master weights inside the optimizer state (ZeRO paper's
//                K = 12 bytes per parameter for Adam).
enum class Precision { kFp32, kBf16Autocast, kFp16Autocast, kBf16Mixed };
enum class OptimizerKind { kAdamW, kAdam, kSgdMomentum, kSgd };

std::string_view PrecisionName(Precision p);
std::string_view OptimizerName(OptimizerKind o);

// How the training script runs what the model describes (docs/workload.md).
//  OptimizerImpl   torch.optim's implementation: foreach (the default on CUDA
//                  when neither flag is given), fused=True, or foreach=False.
//  AttentionKernel F.scaled_dot_product_attention with PyTorch's choice of
//                  backend (flash for 16-bit inputs, efficient for fp32), a
//                  backend pinned with sdpa_kernel, or eager softmax(q k^T) v.
//  MemoryFormat    activations and conv weights in NCHW (contiguous) or NHWC.
//  Checkpointing   torch.utils.checkpoint around every block: never, always,
//                  or as the launcher says (XDEEP_RECOMPUTE; the search picks).
enum class OptimizerImpl { kForeach, kFused, kForLoop };
enum class AttentionKernel { kSdpa, kFlash, kEfficient, kMath, kEager };
enum class MemoryFormat { kContiguous, kChannelsLast };
enum class Checkpointing { kOff, kOn, kTuned };
//  Activation      the MLP's activation: one fused kernel (F.gelu, either
//                  approximation; F.silu), ReLU (its output is what both it
//                  and the next Linear keep), or "gelu_new", the tanh GELU
//                  written out in Python as Hugging Face's GPT-2 has it:
//                  eight elementwise kernels, mostly in fp32 under autocast,
//                  each keeping its inputs for backward.
enum class Activation { kGelu, kRelu, kSilu, kGeluTanhUnfused };
//  Norm            the blocks' normalisation: one fused kernel (nn.LayerNorm,
//                  "layernorm"), or RMSNorm written out in Python as
//                  Hugging Face's Llama, Mistral and Qwen have it
//                  ("rmsnorm_eager": fp32 upcast, pow, mean, add, rsqrt and
//                  two products, each a kernel over fp32 tensors).
enum class Norm { kLayerNorm, kRmsNormEager };
//  TensorParallel  how tensor parallelism is run: PyTorch's DTensor
//                  (torch.distributed.tensor.parallel, its 2.x default: each
//                  split Linear dispatched through DTensor on the host) or
//                  Megatron-style layers (plain kernels and explicit
//                  collectives: Megatron-LM, megatron-core, DeepSpeed).
enum class TensorParallel { kDTensor, kMegatron };
//  PipelineParallel  what runs a pipeline's stages (tuner/pipeline_engine.h)
//                  and what its last stage keeps of each micro-batch:
//                  Megatron-style schedules (Megatron-LM, megatron-core, what
//                  xdeep hands pipeline degrees to) take each micro-batch's
//                  loss and free its output; DeepSpeed's PipelineEngine
//                  (Megatron-DeepSpeed, GPT-NeoX); torch.distributed.pipelining
//                  keeps every micro-batch's output (the logits) until the
//                  step returns them.
enum class PipelineParallel { kMegatron, kDeepSpeed, kTorch };
//  MegatronRelease which Megatron runs the data-parallel side under Megatron's
//                  engine (tuner/pipeline_engine.h): megatron-core's
//                  DistributedDataParallel (the default: gradient buckets
//                  reduced during the last backward, each weight gradient
//                  accumulated by its GEMM); Megatron-LM of 2022 (the whole
//                  reduction after the pipeline flush, accumulation fused
//                  into the GEMM); Megatron-LM of 2021 (after the flush, and
//                  each micro-batch's weight gradients added into the
//                  accumulated ones by a separate pass).
enum class MegatronRelease { kCore, k2022, k2021 };
//  DeepSpeedRelease which DeepSpeed runs the pipeline under DeepSpeed's engine
//                  (tuner/pipeline_engine.h): today's (the default: gradients
//                  cross stages 1 / tp each, bf16 accumulated in an fp32
//                  buffer) or that of 2021 (v0.4.0-v0.5.3: gradients cross
//                  whole, 16-bit gradients accumulated in place).
enum class DeepSpeedRelease { kCurrent, k2021 };

std::string_view OptimizerImplName(OptimizerImpl o);
std::string_view AttentionKernelName(AttentionKernel a);
std::string_view MemoryFormatName(MemoryFormat m);
std::string_view CheckpointingName(Checkpointing c);
std::string_view ActivationName(Activation a);
std::string_view NormName(Norm n);
std::string_view TensorParallelName(TensorParallel t);
std::string_view PipelineParallelName(PipelineParallel p);
std::string_view MegatronReleaseName(MegatronRelease r);
std::string_view DeepSpeedReleaseName(DeepSpeedRelease r);

// The defaults here (and fsdp_* below) describe the project's reference
// script (bench/memory_validation/measure_pytorch.py, the framework probe),
// which workloads built in code stand for: validation, the probe's fits, a
// bare preset name. A workload file's absent keys take PyTorch 2.x's defaults
// instead (ParseWorkloadToml; they differ in linear_bias, fsdp_16bit_params
// and activation_checkpointing).
struct TrainingSettings {
  OptimizerImpl optimizer_impl = OptimizerImpl::kForeach;
  AttentionKernel attention = AttentionKernel::kSdpa;
  MemoryFormat memory_format = MemoryFormat::kContiguous;
  bool linear_bias = false;  // transformer projections carry biases (nn.Linear's default)
  Checkpointing activation_checkpointing = Checkpointing::kTuned;
  bool compile = false;  // torch.compile (inductor) of the model or each block
  Activation activation = Activation::kGelu;
  Norm norm = Norm::kLayerNorm;
  TensorParallel tensor_parallel = TensorParallel::kDTensor;
  PipelineParallel pipeline_parallel = PipelineParallel::kMegatron;
  // The script casts the logits to fp32 itself before the loss and keeps
  // that copy to the end of the step (Hugging Face's causal-LM loss,
  // `logits.float()`), instead of cross_entropy upcasting internally.
  bool fp32_logits = false;
  // torch.optim's weight_decay (its default, 0, when absent). Coupled decay
  // (SGD, Adam; not AdamW's decoupled one) adds it to the gradients: a
  // foreach step makes a new gradient list for that (_foreach_add), alive
  // through the step.
  double weight_decay = 0;
  // The pipeline split counts the input embedding and the output layer with
  // its loss as one transformer block each, so the first and last stages hold
  // one block fewer (Llama 3, Dubey et al. 2024 sec. 3.3.2; megatron-core's
  // account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split):
  // pp x virtual stages must divide the blocks + 2.
  bool pipeline_ends_as_layers = false;
  // bf16-mixed only: gradients are accumulated over the micro-batches and
  // reduced across data-parallel ranks in fp32, 4 bytes per parameter in the
  // buffer and on the wire instead of 2 (Llama 3, Dubey et al. 2024 sec.
  // 3.3.2, "reduce-scatter gradients in FP32"; Megatron-LM's
  // accumulate_allreduce_grads_in_fp32).
  bool fp32_grad_reduce = false;
  // The pipeline's point-to-point transfers run asynchronously beside the
  // next model chunk's compute (Llama 3 sec. 3.3.2; megatron-core's
  // overlap_p2p_comm): under the interleaved schedule only the part of a
  // transfer longer than that chunk's compute is on the critical path.
  bool pipeline_async_p2p = false;
  // Megatron's data-parallel gradient handling by release (pipeline_parallel
  // = megatron only; pipeline_engine.h has each release's source).
  MegatronRelease megatron_release = MegatronRelease::kCore;
  // DeepSpeed's pipeline engine by release (pipeline_parallel = deepspeed
  // only; pipeline_engine.h).
  DeepSpeedRelease deepspeed_release = DeepSpeedRelease::kCurrent;
};

// A decoder-only (GPT / Llama style) transformer.
struct TransformerShape {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // grouped-query attention; == heads for multi-head attention
  int ffn = 0;       // intermediate size of the MLP
  int seq_len = 0;
  int vocab = 0;
  bool gated_mlp = false;         // SwiGLU: three MLP matrices instead of two
  bool tied_embeddings = false;   // output projection shares the embedding matrix
  bool learned_positions = true;  // GPT-2 style position embedding table (Llama: rotary, none)
  // Query, key and value projected by three Linears (transformers' BERT and
  // Llama-style classes) instead of one fused QKV Linear (GPT-2's c_attn).
  bool separate_qkv = false;
  // Positions the output layer and its loss see per sample: 0 = every one (a
  // language model's head); 1 for a classifier that pools one token (ViT's
  // class token: timm's global_pool = "token", torchvision's VisionTransformer).
  // The final norm still runs over every position.
  int head_tokens = 0;
  // BERT's embeddings: a token-type table looked up and added to the token
  // and position lookups, and a LayerNorm (with dropout) over their sum.
  bool token_types = false;
  bool embedding_norm = false;
  // A masked-LM head's transform before the vocabulary projection (BERT's
  // BertPredictionHeadTransform: hidden x hidden Linear, activation, LayerNorm).
  bool head_transform = false;
  // Causal self-attention (decoder-only): fused kernels skip the masked half.
  // An encoder (ViT, BERT) attends to every position.
  bool causal = true;
};

// One GEMM of a layer, per sample: C[m x n] = A[m x k] B[k x n]; m scales with
// the micro-batch (tokens or output pixels per sample).
struct GemmShape {
  double m_per_sample = 0;
  int64_t n = 0;
  int64_t k = 0;
};

// A convolution with groups (depthwise: one channel a group; grouped: a few
// channels a group), which cuDNN does not run as one GEMM: the step-time model
// times it apart from the layer's GEMMs (tuner/cnn_conv_model.h). Per sample.
struct GroupedConv {
  double in_pixels = 0;   // input positions (side x side)
  double out_pixels = 0;  // output positions
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int kernel = 1;  // k of the k x k window
  int64_t groups = 1;
  bool Depthwise() const { return groups == in_channels && groups == out_channels; }
  // Multiply-adds of the forward pass x 2.
  double Flops() const {
    return 2.0 * out_pixels * double(out_channels) * double(in_channels / groups) * kernel * kernel;
  }
  bool operator==(const GroupedConv&) const = default;
};

// One row of a per-layer table (CNN presets, generic workloads). Per sample.
struct LayerCost {
  std::string name;
  int64_t params = 0;
  double fwd_flops = 0;               // forward FLOPs per sample
  double saved_activation_bytes = 0;  // kept for backward, per sample
  double output_bytes = 0;            // what a pipeline stage sends on, per sample
  std::vector<GemmShape> gemms;       // the layer's matrix products (forward pass)
  // Depthwise / grouped convolutions (CNNs), timed apart from the GEMMs.
  std::vector<GroupedConv> grouped_convs;
  // Tensor parallelism (Megatron style; only transformer blocks can split):
  // gemms[i] is column-parallel (n split) if tp_split_n[i], else row-parallel.
  bool tp_capable = false;
  std::vector<bool> tp_split_n;
  // The output layer and its loss, split over the vocabulary: only by
  // Megatron-style tensor parallelism (TpWays).
  bool vocab_parallel = false;
  // gemms[i] is split by rows instead (attention's batched GEMMs over heads:
  // each tensor-parallel rank takes heads / tp of them); overrides tp_split_n.
  std::vector<bool> tp_split_m;
  double tp_split_activation_bytes = 0;  // part of saved_activation_bytes divided by tp
  double tp_comm_bytes = 0;              // bytes of one tensor-parallel all-reduce, per sample
  int tp_allreduces_fwd = 0;             // all-reduces per forward pass (backward does as many)
  int tp_split_linears = 0;  // Linear modules a tensor-parallel plan splits; 0: one per GEMM
  double attention_flops = 0;            // forward attention FLOPs per sample (not GEMM-shaped)
  // Context parallel only (PerRankWorkload): keys and values of the whole
  // sequence that each rank gathers before attention, per sample.
  double cp_kv_bytes = 0;
  double recompute_saved_bytes = 0;  // what full recomputation keeps (the block input)
  // Of tp_split_activation_bytes, the attention core's materialised scores
  // (softmax output and its 16-bit cast), which selective recomputation frees;
  // 0 where a fused attention kernel keeps none.
  double attention_core_bytes = 0;
  // Selective recomputation applied (WithSelectiveRecompute): attention_core_bytes
  // are out of the saved activations and the core runs forward again in backward.
  bool attention_core_recomputed = false;
  // Whether backward computes the gradient of the layer's input (the GEMMs'
  // dgrad): not for a network's first convolution, whose input is the images
  // (autograd runs only the gradients some input requires).
  bool input_gradient = true;
  // Memory traffic per sample of unfused kernels beyond the passes over saved
  // activations, forward and backward (a transformer's loss on its logits, an
  // NCHW convolution's layout transforms).
  double extra_traffic_fwd_bytes = 0;
  double extra_traffic_bwd_bytes = 0;
  // Elements a training BatchNorm's statistics pass reads, per sample (its
  // output's): one of its forward passes, counted in elementwise_fwd_passes,
  // whose time is arithmetic, not memory (kBatchNormStatisticsPerSm).
  double batch_norm_statistics_elements = 0;
  // LayerNorms over the channels of each pixel (ConvNeXt's, in NHWC): rows
  // per sample and the row's width. PyTorch's vectorized kernel spends a
  // fixed time per row beside its bytes, which rows of 96-768 values cannot
  // hide (StrategyModel's kLayerNormRow*); their bytes are not in the traffic.
  double layer_norm_rows = 0;
  int layer_norm_width = 0;
  // Passes over each saved activation byte that the layer's elementwise
  // kernels make, forward and backward (ElementwiseBytes): a transformer's
  // chains of norms, casts, activations and adds about 4 and 8; a CNN's
  // conv-BN-ReLU fewer (CnnBuilder::Conv).
  double elementwise_fwd_passes = 4;
  double elementwise_bwd_passes = 8;
  // Parameters of the 16-bit compute copy / FSDP unit (== params unless part of
  // the layer stays in fp32, e.g. normalisation).
  int64_t matmul_params = 0;
  // Kernels the framework launches for this layer's forward pass (backward
  // launches about twice as many); bounds small micro-batches, where the
  // host cannot launch work as fast as the GPU finishes it. `fused_kernels`:
  // as many under torch.compile, which fuses each chain of elementwise ops
  // between two library calls (GEMM, convolution, attention) into one.
  int kernels = 0;
  int fused_kernels = 0;
  // Of `kernels`, those a library launches inside one framework call (cuDNN's
  // layout transforms around a 16-bit NCHW convolution): they cost the GPU's
  // time, not the host's per-op dispatch, so host time counts the others.
  int library_kernels = 0;
  // Parameter tensors of the layer (weights, biases, norm scales): FSDP2
  // shards and gathers them one by one, so its host time grows with their
  // number. 0: one tensor if the layer has parameters.
  int param_tensors = 0;
  // Buffers the layer keeps beside its parameters (BatchNorm's running mean,
  // variance and step count): DDP broadcasts them from rank 0 each forward.
  int buffer_tensors = 0;
  // FSDP / ZeRO-3 wrapping unit this layer belongs to (layers with the same
  // name are gathered together); empty = the root unit, gathered for the
  // whole step (embeddings, output head, a CNN's stem and classifier).
  std::string unit;
};

// How many ways tensor parallelism of degree tp splits a layer. Megatron splits the
// output layer over the vocabulary and computes the loss vocabulary-parallel;
// PyTorch's DTensor plans leave the head whole or gather its logits
// (transformers' tp_plan "colwise_rep"), so every rank holds the logits and the
// loss whole (2x H100, the library suite's Llama-1B TP: memory -10..-16 % when
// they were split, bench/validate/data/calibration/2026-11-2{6,7}_h100x2_library_heldout*,
// calibration).
inline int TpWays(const LayerCost& l, TensorParallel how, int tp) {
  if (!l.tp_capable) return 1;
  return l.vocab_parallel && how == TensorParallel::kDTensor ? 1 : tp;
}

// A layer's parameter tensors, the default (one where it has parameters) resolved.
inline int ParamTensors(const LayerCost& l) {
  return l.param_tensors > 0 ? l.param_tensors : (l.params > 0 ? 1 : 0);
}

// Bytes per sample that a layer's elementwise kernels (norms, activations,
// casts, residual adds, a loss) move in one forward and one backward pass, `tp`
// ways split where the layer splits. Eager frameworks run them as separate
// kernels: in a transformer each saved activation is written by its producer
// and read by its consumer about twice per pass (4x its size forward), twice
// that in backward (the layer's elementwise_*_passes); plus the layer's own
// extra traffic.
struct ElementwiseTraffic {
  double fwd = 0, bwd = 0;
};
inline ElementwiseTraffic ElementwiseBytes(const LayerCost& l, int tp = 1) {
  const double act =
      (l.saved_activation_bytes - l.tp_split_activation_bytes) + l.tp_split_activation_bytes / tp;
  return {l.elementwise_fwd_passes * act + l.extra_traffic_fwd_bytes / tp,
          l.elementwise_bwd_passes * act + l.extra_traffic_bwd_bytes / tp};
}

struct Workload {
  std::string name;
  ModelFamily family = ModelFamily::kTransformer;
  TransformerShape transformer;  // family == kTransformer
  std::string cnn_arch;          // family == kCnn: "resnet50", "vgg16", ...
  int image_size = 224;          // kCnn
  int num_classes = 1000;        // kCnn
  // kCnn and kGeneric: the per-layer table; for kTransformer it is derived too
  // (embedding, one row per block, head) so every family can be pipelined.
  std::vector<LayerCost> layers;
  // Extra per-sample input bytes held on the device (images, token ids).
  double input_bytes_per_sample = 0;

  Precision precision = Precision::kBf16Autocast;
  // Under ZeRO-3 / FSDP with autocast: whether parameters are gathered in
  // 16 bits (MixedPrecisionPolicy(param_dtype=torch.bfloat16), the reference
  // script's) or in fp32, PyTorch's default, with autocast casting each layer
  // (then autocast's weight cache holds a 16-bit copy of every layer until
  // backward); and whether gradients are reduce-scattered in 16 bits
  // (reduce_dtype; PyTorch defaults it to param_dtype, the script to fp32).
  bool fsdp_16bit_params = true;
  bool fsdp_16bit_reduce = false;
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  TrainingSettings settings;
  ParallelConstraints parallel;  // what the script supports ([parallel])

  // Training length, normalised to samples (sequences for transformers) at the
  // reference global batch `reference_global_batch`.
  double samples = 0;
  // Global-batch bounds in samples. When !batch_may_change the search uses
  // exactly reference_global_batch.
  int64_t min_global_batch = 1;
  int64_t max_global_batch = 1;
  int64_t reference_global_batch = 1;
  bool batch_may_change = false;
  // Gradient noise scale (McCandlish et al. 2018, "An Empirical Model of
  // Large-Batch Training"), in samples; 0 = unknown, no statistical penalty.
  double b_noise = 0;
  // Largest micro-batch the search tries (samples per GPU per forward pass).
  int max_micro_batch = 64;

  // Totals derived from the layer table / shape.
  int64_t Parameters() const;
  double ForwardFlopsPerSample() const;
};

// Called every kLayersPerPoll layers while a layer table is built (a model
// may have 100,000 layers: tens of milliseconds): a non-OK status stops the
// build, and the parse returns it. The daemon's heavy lane paces itself here
// and stops at its client's deadline.
using BuildPoll = std::function<absl::Status()>;
inline constexpr int kLayersPerPoll = 1024;

// Parses a workload spec. Errors read
// "<source_name>:<line>: <what is wrong>; <how to fix it>".
absl::StatusOr<Workload> ParseWorkloadToml(std::string_view toml_text, std::string_view source_name,
                                           const BuildPoll& poll = nullptr);

// Named presets: "gpt-125m", "gpt-350m", "gpt-760m", "gpt-1.3b", "gpt-2.7b",
// "gpt-6.7b", "llama-7b", "llama-13b", "llama-70b", "resnet18", "resnet50",
// "resnet101", "resnet152", "vgg16".
absl::StatusOr<Workload> PresetWorkload(std::string_view name);
std::vector<std::string> PresetWorkloadNames();

// Fills `layers` (and the derived totals) of a transformer from its shape;
// exposed so tests and callers that build a Workload by hand can use it. A
// poll's error stops the build and leaves `layers` empty.
void BuildTransformerLayers(Workload& w);
absl::Status BuildTransformerLayers(Workload& w, const BuildPoll& poll);
// Per-layer table of a CNN preset; error for an unknown architecture.
// `stochastic_depth`: the rate of stochastic depth (torchvision's
// stochastic_depth_prob, timm's drop_path_rate) the network trains with;
// negative: torchvision's default for the architecture (ConvNeXt-T 0.1,
// EfficientNet 0.2; timm's create_model defaults to 0). Only whether it is
// above 0 changes the table (the dropped blocks' kernels run all the same).
absl::StatusOr<std::vector<LayerCost>> CnnLayerTable(
    std::string_view arch, int image_size, int num_classes, Precision precision,
    MemoryFormat memory_format = MemoryFormat::kContiguous, double stochastic_depth = -1);
std::vector<std::string> CnnArchNames();

// Bytes per activation element inside compute regions (16-bit or fp32), and
// of the residual stream / normalisation inputs (fp32 under autocast, since
// autocast runs layer_norm in fp32 and fp32 + bf16 adds promote).
int ActivationBytes(Precision p);
int ResidualBytes(Precision p);
// Logits and loss temporaries per token per vocabulary entry at the start of
// backward (PyTorch's cross_entropy under autocast runs in fp32); with
// `fp32_logits` the script's own fp32 copy stays alive too.
int LogitsBytesPerEntry(Precision p, bool fp32_logits = false);
// The attention kernel that runs: sdpa's own choice resolved (flash for
// 16-bit inputs and head sizes up to 256, else the memory-efficient kernel;
// PyTorch's sdp_utils.cpp checks).
AttentionKernel ResolvedAttention(const Workload& w);
// Whether attention materialises the s x s score matrix (math and eager).
bool MaterialisesScores(AttentionKernel a);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_WORKLOAD_H_
