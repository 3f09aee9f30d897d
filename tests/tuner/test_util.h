// Small, hand-checkable inputs shared by the tuner tests.
#ifndef XDEEP_TESTS_TUNER_TEST_UTIL_H_
#define XDEEP_TESTS_TUNER_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>

#include "tuner/configuration.h"
#include "tuner/hardware_profile.h"
#include "tuner/workload.h"

namespace xdeep::tuner::testing {

// A file's whole text; empty when it cannot be read.
inline std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One GEMM point (so every shape runs at `tflops`), round bandwidths, zero
// collective latency: every time in the model can be derived by hand.
inline HardwareProfile SimpleProfile(double tflops = 100, double intra_gbps = 100,
                                     double rail_gbps = 10, int gpus_per_node = 8) {
  HardwareProfile hw;
  hw.name = "simple";
  hw.builtin = true;
  hw.gpu_name = "TestGPU";
  hw.gpus_per_node = gpus_per_node;
  hw.memory_bytes = int64_t{80} * 1000 * 1000 * 1000;
  hw.reserved_bytes = int64_t{1} * 1000 * 1000 * 1000;
  hw.memory_bandwidth_gbps = 1000;
  hw.attention_efficiency = 0.5;
  hw.host_step_cv = 0;  // no stragglers: the hand-derived figures stay exact
  hw.gemm.push_back({4096, 4096, 4096, DType::kBf16, tflops});
  // A flat rate at every shape, so hand-derived step times stay exact.
  GemmFit& flat = hw.gemm_fits[static_cast<int>(DType::kBf16)];
  flat.valid = flat.roofline_only = true;
  flat.peak_flops = tflops * 1e12;
  flat.bandwidth = 1e30;
  flat.fixed_s = 0;
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter, CollectiveOp::kSendRecv}) {
    hw.collectives.push_back({op, FabricScope::kIntraNode, 2, 0.0, intra_gbps});
    hw.collectives.push_back({op, FabricScope::kInterNode, 2, 0.0, rail_gbps});
  }
  return hw;
}

// A GPT as Megatron-LM trains it: tied embeddings (vocabulary 51200), bf16
// mixed precision, fused AdamW, fused kernels, Megatron-style tensor
// parallelism, 1e9 samples. Callers set what they vary, then call
// BuildTransformerLayers and set the batch.
inline Workload MegatronGpt(const std::string& name, int layers, int hidden, int heads,
                            int seq_len) {
  Workload w;
  w.name = name;
  TransformerShape& t = w.transformer;
  t.layers = layers;
  t.hidden = hidden;
  t.heads = t.kv_heads = heads;
  t.ffn = 4 * hidden;
  t.seq_len = seq_len;
  t.vocab = 51200;
  t.tied_embeddings = true;
  w.precision = Precision::kBf16Mixed;
  w.optimizer = OptimizerKind::kAdamW;
  w.settings.optimizer_impl = OptimizerImpl::kFused;
  w.settings.compile = true;
  w.settings.tensor_parallel = TensorParallel::kMegatron;
  w.samples = 1e9;
  return w;
}

// A 24-layer GPT (hidden 4096) under the given pipeline engine, batch 256,
// micro-batches up to 4: the layouts the engine and gradient-sync tests compare.
inline Workload EngineGpt(PipelineParallel engine) {
  Workload w = MegatronGpt("gpt-engine", 24, 4096, 32, 2048);
  w.settings.pipeline_parallel = engine;
  BuildTransformerLayers(w);
  w.reference_global_batch = w.min_global_batch = w.max_global_batch = 256;
  w.max_micro_batch = 4;
  return w;
}

// tp x pp x dp on nodes of 8 GPUs, micro-batch 1 of a global batch of 256:
// the layouts EngineGpt is compared under.
inline Configuration EngineLayout(int tp, int pp, int dp) {
  Configuration c;
  c.gpus_per_node = 8;
  c.tp = tp;
  c.pp = pp;
  c.dp = dp;
  c.nodes = c.tp * c.pp * c.dp / 8;
  c.micro_batch = 1;
  c.global_batch = 256;
  c.grad_accum = 256 / c.dp;
  return c;
}

// Generic model: 1e9 parameters in `layers` layers, 2e12 forward FLOPs and
// 1e9 saved activation bytes per sample; bf16 autocast, AdamW.
inline Workload SimpleGeneric(int layers = 10) {
  const std::string text =
      "name = \"simple\"\n"
      "[model]\n"
      "family = \"generic\"\n"
      "parameters = 1e9\n"
      "forward_flops_per_sample = 2e12\n"
      "activation_bytes_per_sample = 1e9\n"
      "num_layers = " +
      std::to_string(layers) +
      "\n"
      "[training]\n"
      "samples = 1e6\n"
      "fsdp_param_dtype = \"bf16\"\n"  // FSDP units gathered in bf16, reduced in fp32
      "fsdp_reduce_dtype = \"fp32\"\n"
      "[batch]\n"
      "global = 64\n";
  return *ParseWorkloadToml(text, "simple.toml");
}

}  // namespace xdeep::tuner::testing

#endif  // XDEEP_TESTS_TUNER_TEST_UTIL_H_
