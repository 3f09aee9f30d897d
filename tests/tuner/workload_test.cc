// Workload parsing: example files, presets, parameter counts, error messages.
#include "tuner/workload.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tuner/test_util.h"
#include "tuner/fingerprint.h"

namespace xdeep::tuner {
namespace {

TEST(WorkloadTest, ParsesEveryExample) {
  for (const char* name : {"gpt-125m", "gpt-1.3b", "resnet50", "generic"}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/examples/workloads/" + name + ".toml";
    const std::string text = testing::ReadTextFile(path);
    ASSERT_FALSE(text.empty()) << path;
    auto w = ParseWorkloadToml(text, path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_GT(w->Parameters(), 0);
    EXPECT_GT(w->samples, 0);
  }
}

TEST(WorkloadTest, Gpt125mParameterCountMatchesHandCount) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  // Hand count: embeddings V h + s h, 12 blocks of 12 h^2 + 4 h (no biases on
  // matmuls), final LayerNorm 2 h, tied head.
  const int64_t h = 768, v = 50257, s = 1024;
  const int64_t expected = v * h + s * h + 12 * (12 * h * h + 4 * h) + 2 * h;
  EXPECT_EQ(w->Parameters(), expected);
}

TEST(WorkloadTest, BertStructureKeysMatchTransformersCountAndAddLaunches) {
  const std::string shape =
      "name = \"bert\"\n[model]\nfamily = \"transformer\"\ncausal = false\nlayers = 12\n"
      "hidden = 768\nheads = 12\nffn = 3072\nseq_len = 512\nvocab = 30522\n"
      "tied_embeddings = true\nlinear_bias = true\nactivation = \"gelu\"\n";
  const std::string bert_keys =
      "separate_qkv = true\ntoken_types = true\nembedding_norm = true\nhead_transform = true\n";
  auto plain = ParseWorkloadToml(shape, "gpt-like.toml");
  auto bert = ParseWorkloadToml(shape + bert_keys, "bert.toml");
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(bert.ok()) << bert.status();
  // transformers.BertForMaskedLM(BertConfig()).num_parameters() is 109,514,298: the
  // description leaves out only the MLM decoder's vocabulary bias (30,522).
  EXPECT_EQ(bert->Parameters(), 109514298 - 30522);
  int plain_kernels = 0, bert_kernels = 0;
  for (const LayerCost& l : plain->layers) plain_kernels += l.kernels;
  for (const LayerCost& l : bert->layers) bert_kernels += l.kernels;
  // Per layer: two more GEMMs, weight casts and input casts, one more bias
  // reduction (half a launch, rounded down: 6 / 2 - 4 / 2); embeddings +4; head +4.
  EXPECT_EQ(bert_kernels - plain_kernels, 12 * (6 + 1) + 4 + 4);
  // A tensor-parallel plan splits the Linear modules: QKV (or q, k, v), out, and the
  // MLP's (a gated block's q, k, v and gate, up are modules of their own, as
  // transformers' Llama has them, while its GPU counts keep one QKV GEMM).
  EXPECT_EQ(plain->layers[1].tp_split_linears, 4);
  EXPECT_EQ(bert->layers[1].tp_split_linears, 6);
  auto llama = PresetWorkload("llama-7b");
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(llama->layers[1].tp_split_linears, 7);
  EXPECT_EQ(llama->layers[1].gemms.size(), 4u);
}

// A ViT classifies its class token (timm's global_pool = "token", torchvision's
// VisionTransformer): the head projects one token per sample, not every position,
// and the loss reads 1000 logits per sample where a language model's reads s x v.
TEST(WorkloadTest, PooledHeadProjectsOneTokenPerSample) {
  const std::string vit =
      "name = \"vit-s8\"\n[model]\nfamily = \"transformer\"\ncausal = false\nlayers = 12\n"
      "hidden = 384\nheads = 6\nffn = 1536\nseq_len = 785\nvocab = 1000\nlinear_bias = true\n";
  auto every = ParseWorkloadToml(vit, "every.toml");
  auto pooled = ParseWorkloadToml(vit + "head_tokens = 1\n", "pooled.toml");
  ASSERT_TRUE(every.ok()) << every.status();
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  const LayerCost& a = every->layers.back();
  const LayerCost& b = pooled->layers.back();
  EXPECT_EQ(a.gemms[0].m_per_sample, 785);
  EXPECT_EQ(b.gemms[0].m_per_sample, 1);
  EXPECT_DOUBLE_EQ(b.fwd_flops, a.fwd_flops / 785);
  EXPECT_DOUBLE_EQ(b.extra_traffic_fwd_bytes, a.extra_traffic_fwd_bytes / 785);
  // The final LayerNorm still runs over (and keeps) every position.
  EXPECT_GT(b.saved_activation_bytes, 785 * 384 * 4.0);
  EXPECT_EQ(pooled->Parameters(), every->Parameters());
  EXPECT_NE(ModelFingerprint(*pooled), ModelFingerprint(*every));
  auto bad = ParseWorkloadToml(vit + "head_tokens = -1\n", "bad.toml");
  EXPECT_FALSE(bad.ok());
}

TEST(WorkloadTest, EncoderValidationWorkloadsMatchTransformersCounts) {
  // transformers' num_parameters() of the masked-LM classes library_suite.py builds,
  // less the MLM decoder's vocabulary bias the descriptions leave out; RoBERTa's file
  // also counts two token types and 512 positions for its one and 514 (+768 - 1536).
  struct Case {
    const char* name;
    int64_t expected;
  };
  for (Case c : {Case{"hf-bert-base", 109514298 - 30522},
                 Case{"hf-roberta-base", 124697433 - 50265 + 768 - 1536},
                 Case{"hf-distilbert-base", 66985530 - 30522}}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/bench/validate/workloads/" + c.name + ".toml";
    auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->Parameters(), c.expected) << c.name;
  }
}

TEST(WorkloadTest, ResNet50ParameterCountMatchesTorchvision) {
  auto w = PresetWorkload("resnet50");
  ASSERT_TRUE(w.ok());
  // torchvision.models.resnet50(): 25,557,032 parameters.
  EXPECT_NEAR(static_cast<double>(w->Parameters()), 25557032.0, 25557032.0 * 0.001);
  // ~4.1 GMACs forward at 224x224.
  EXPECT_NEAR(w->ForwardFlopsPerSample() / 2, 4.1e9, 0.15e9);
}

TEST(WorkloadTest, Vgg16AndResNetsKnownSizes) {
  struct Case {
    const char* name;
    double params;
  };
  // torchvision's num_parameters() of each; timm's resnet26 (bottlenecks [2, 2, 2, 2], 16.0 M
  // in timm's model list) counted layer by layer as torchvision builds its ResNet-50 (which that
  // count reproduces exactly).
  for (Case c : {Case{"vgg16", 138357544}, Case{"resnet18", 11689512}, Case{"resnet26", 15995176},
                 Case{"resnet101", 44549160},
                 Case{"resnet152", 60192808}, Case{"resnet200", 64673832}, Case{"wide_resnet50_2", 68883240},
                 Case{"wide_resnet101_2", 126886696}}) {
    auto w = PresetWorkload(c.name);
    ASSERT_TRUE(w.ok()) << c.name;
    EXPECT_NEAR(static_cast<double>(w->Parameters()), c.params, c.params * 0.001) << c.name;
  }
}

TEST(WorkloadTest, UnknownKeyNamesLineAndFix) {
  const std::string text = "name = \"x\"\n[model]\nfamily = \"transformer\"\nlayerz = 3\n";
  auto w = ParseWorkloadToml(text, "bad.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()),
              ::testing::StartsWith("bad.toml:4: unknown key 'layerz' in [model]; use one of:"));
}

TEST(WorkloadTest, SyntaxErrorNamesLine) {
  auto w = ParseWorkloadToml("[model]\nfamily = \n", "syn.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), ::testing::StartsWith("syn.toml:2: "));
}

TEST(WorkloadTest, WrongTypeAndRange) {
  auto w = ParseWorkloadToml("[model]\nfamily = \"transformer\"\nlayers = \"many\"\n", "t.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()),
              ::testing::HasSubstr("t.toml:3: 'layers' must be an integer; write e.g. layers ="));
  w = ParseWorkloadToml("[model]\npreset = \"gpt-125m\"\n[batch]\nmin = 512\nmax = 256\n",
                        "r.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()),
              ::testing::HasSubstr("r.toml:4: min (512) > max (256)"));
}

TEST(WorkloadTest, MissingRequiredFieldSaysWhatToAdd) {
  auto w = ParseWorkloadToml("[model]\nfamily = \"transformer\"\nlayers = 2\n", "m.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()),
              ::testing::HasSubstr(
                  "m.toml:1: transformer needs 'hidden'; add hidden = <integer> to [model]"));
}

TEST(WorkloadTest, TrainingLengthForms) {
  auto a = ParseWorkloadToml("[model]\npreset = \"gpt-125m\"\n[training]\ntokens = 1024e6\n", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_DOUBLE_EQ(a->samples, 1e6);
  auto b = ParseWorkloadToml(
      "[model]\npreset = \"resnet50\"\n[training]\nepochs = 2\ndataset_size = 1000\n", "b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_DOUBLE_EQ(b->samples, 2000);
  auto c = ParseWorkloadToml("[model]\npreset = \"resnet50\"\n[training]\nepochs = 2\n", "c");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              ::testing::HasSubstr("c:4: 'epochs' needs 'dataset_size'"));
}

TEST(WorkloadTest, BatchBoundsAndNoiseScale) {
  auto w = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\n[batch]\nmin = 128\nmax = 1024\nb_noise = 500\n", "b");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(w->batch_may_change);
  EXPECT_EQ(w->min_global_batch, 128);
  EXPECT_EQ(w->max_global_batch, 1024);
  EXPECT_DOUBLE_EQ(w->b_noise, 500);
}

// A workload file's absent settings are PyTorch 2.x's defaults; each key is
// read into the workload and changes its layer table where it should.
TEST(WorkloadTest, TrainingSettingsDefaultToPyTorchs) {
  const std::string gpt =
      "[model]\nfamily = \"transformer\"\nlayers = 2\nhidden = 256\nheads = 4\n"
      "seq_len = 128\nvocab = 1000\n";
  auto w = ParseWorkloadToml(gpt, "d.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->settings.optimizer_impl, OptimizerImpl::kForeach);
  EXPECT_EQ(w->settings.attention, AttentionKernel::kSdpa);
  EXPECT_EQ(ResolvedAttention(*w), AttentionKernel::kFlash);  // bf16 autocast, head size 64
  EXPECT_TRUE(w->settings.linear_bias);
  EXPECT_FALSE(w->transformer.tied_embeddings);
  EXPECT_EQ(w->settings.activation_checkpointing, Checkpointing::kOff);
  EXPECT_FALSE(w->settings.compile);
  EXPECT_FALSE(w->fsdp_16bit_params);  // MixedPrecisionPolicy(param_dtype=None)
  EXPECT_FALSE(w->fsdp_16bit_reduce);  // reduce_dtype follows param_dtype
  // Biases: QKV (3h), out (h), fc1 (4h), fc2 (h) per block, 4 more tensors.
  auto bare = ParseWorkloadToml(gpt + "linear_bias = false\n", "d.toml");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(w->Parameters() - bare->Parameters(), 2 * 9 * 256);
  EXPECT_EQ(ParamTensors(w->layers[1]) - ParamTensors(bare->layers[1]), 4);
  // An encoder attends to every position: twice a causal decoder's attention.
  EXPECT_EQ(w->settings.tensor_parallel, TensorParallel::kDTensor);  // PyTorch 2.x's own
  auto megatron = ParseWorkloadToml(gpt + "tensor_parallel = \"megatron\"\n", "d.toml");
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  EXPECT_EQ(megatron->settings.tensor_parallel, TensorParallel::kMegatron);
  EXPECT_NE(ModelFingerprint(*megatron), ModelFingerprint(*w));
  auto unknown = ParseWorkloadToml(gpt + "tensor_parallel = \"deepspeed\"\n", "d.toml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("tensor_parallel"), std::string::npos)
      << unknown.status();
  auto encoder = ParseWorkloadToml(gpt + "causal = false\n", "d.toml");
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  EXPECT_TRUE(w->transformer.causal);
  EXPECT_DOUBLE_EQ(encoder->layers[1].attention_flops, 2 * w->layers[1].attention_flops);
  // fp32 training: sdpa picks the memory-efficient kernel.
  auto fp32 = ParseWorkloadToml(gpt + "[training]\nprecision = \"fp32\"\n", "d.toml");
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  EXPECT_EQ(ResolvedAttention(*fp32), AttentionKernel::kEfficient);
  // ResNet-50 in NCHW pays two layout transforms per convolution.
  auto cnn = ParseWorkloadToml("[model]\npreset = \"resnet50\"\n", "c.toml");
  auto nhwc = ParseWorkloadToml(
      "[model]\npreset = \"resnet50\"\nmemory_format = \"channels_last\"\n", "c.toml");
  ASSERT_TRUE(cnn.ok() && nhwc.ok());
  EXPECT_EQ(cnn->settings.memory_format, MemoryFormat::kContiguous);
  EXPECT_EQ(cnn->layers[0].kernels - nhwc->layers[0].kernels, 2);
  EXPECT_GT(cnn->layers[0].extra_traffic_fwd_bytes, 0);
  EXPECT_EQ(nhwc->layers[0].extra_traffic_fwd_bytes, 0);
}

TEST(WorkloadTest, TrainingSettingsAreRead) {
  auto w = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\nattention = \"eager\"\nlinear_bias = false\n"
      "[training]\noptimizer_impl = \"fused\"\nactivation_checkpointing = \"tuned\"\n"
      "compile = true\nfsdp_param_dtype = \"bf16\"\nfsdp_reduce_dtype = \"fp32\"\n",
      "s.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->settings.optimizer_impl, OptimizerImpl::kFused);
  EXPECT_EQ(w->settings.attention, AttentionKernel::kEager);
  EXPECT_FALSE(w->settings.linear_bias);
  EXPECT_EQ(w->settings.activation_checkpointing, Checkpointing::kTuned);
  EXPECT_TRUE(w->settings.compile);
  EXPECT_TRUE(w->fsdp_16bit_params);
  EXPECT_FALSE(w->fsdp_16bit_reduce);
  // Eager attention runs q k^T and the scores times v as GEMMs and keeps the
  // softmax output (fp32) and its bf16 cast: 6 bytes per score.
  auto flash = PresetWorkload("gpt-125m");
  ASSERT_TRUE(flash.ok());
  EXPECT_EQ(w->layers[1].gemms.size(), flash->layers[1].gemms.size() + 2);
  EXPECT_EQ(w->layers[1].attention_flops, 0);
  EXPECT_DOUBLE_EQ(w->layers[1].saved_activation_bytes - flash->layers[1].saved_activation_bytes,
                   6.0 * 12 * 1024 * 1024);
  // HF GPT-2's written-out tanh GELU keeps 10 bytes more per MLP element and
  // launches 8 more kernels; its fp32 logits copy 4 bytes per entry.
  auto hf = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\nactivation = \"gelu_new\"\nfp32_logits = true\n", "h");
  auto plain = ParseWorkloadToml("[model]\npreset = \"gpt-125m\"\n", "p");
  ASSERT_TRUE(hf.ok() && plain.ok()) << hf.status() << plain.status();
  EXPECT_EQ(hf->settings.activation, Activation::kGeluTanhUnfused);
  EXPECT_TRUE(hf->settings.fp32_logits);
  EXPECT_DOUBLE_EQ(hf->layers[1].saved_activation_bytes - plain->layers[1].saved_activation_bytes,
                   10.0 * 3072 * 1024);
  EXPECT_EQ(hf->layers[1].kernels - plain->layers[1].kernels, 8);
  EXPECT_EQ(LogitsBytesPerEntry(Precision::kBf16Autocast, true) -
                LogitsBytesPerEntry(Precision::kBf16Autocast, false),
            4);
  auto torch_pp = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\npipeline_parallel = \"torch\"\n", "pp");
  ASSERT_TRUE(torch_pp.ok()) << torch_pp.status();
  EXPECT_EQ(torch_pp->settings.pipeline_parallel, PipelineParallel::kTorch);
  EXPECT_EQ(plain->settings.pipeline_parallel, PipelineParallel::kMegatron);
  auto bad_pp = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\npipeline_parallel = \"gpipe\"\n", "bad.toml");
  ASSERT_FALSE(bad_pp.ok());
  EXPECT_NE(bad_pp.status().message().find("pipeline_parallel"), std::string::npos)
      << bad_pp.status();
  auto on = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\n[training]\nactivation_checkpointing = true\n", "o");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(on->settings.activation_checkpointing, Checkpointing::kOn);
}

TEST(WorkloadTest, BadTrainingSettingsSayWhatIsWrongAndHowToFixIt) {
  struct Case {
    const char* toml;
    const char* message;
  };
  const Case cases[] = {
      {"[model]\npreset = \"gpt-125m\"\n[training]\noptimizer_impl = \"fast\"\n",
       "x.toml:4: unknown optimizer_impl 'fast'; use \"foreach\", \"fused\", \"for-loop\""},
      {"[model]\npreset = \"gpt-125m\"\nattention = \"flash2\"\n",
       "x.toml:3: unknown attention 'flash2'; use \"sdpa\", \"flash\", \"efficient\", \"math\", "
       "\"eager\""},
      {"[model]\npreset = \"gpt-125m\"\nmemory_format = \"channels_last\"\n",
       "x.toml:3: 'memory_format' applies to family = \"cnn\" only; remove memory_format"},
      {"[model]\npreset = \"resnet50\"\nlinear_bias = false\n",
       "x.toml:3: 'linear_bias' applies to family = \"transformer\" only"},
      {"[model]\npreset = \"gpt-125m\"\n[training]\nactivation_checkpointing = \"yes\"\n",
       "x.toml:4: 'activation_checkpointing' must be true, false or \"tuned\""},
      {"[model]\npreset = \"gpt-125m\"\n[training]\ncompile = 1\n",
       "x.toml:4: 'compile' must be true or false"},
      {"[model]\npreset = \"gpt-125m\"\n[training]\nprecision = \"fp32\"\n"
       "fsdp_param_dtype = \"bf16\"\n",
       "x.toml:5: fsdp_param_dtype 'bf16' does not go with precision fp32; use \"fp32\""},
      {"[model]\npreset = \"gpt-125m\"\n[training]\nfsdp_reduce_dtype = \"fp16\"\n",
       "x.toml:4: fsdp_reduce_dtype 'fp16' does not go with precision bf16-autocast; use "
       "\"fp32\" or \"bf16\""},
      {"[model]\npreset = \"gpt-125m\"\nflash_attention = true\n",
       "x.toml:3: unknown key 'flash_attention' in [model]"},
      {"[model]\npreset = \"gpt-125m\"\nactivation = \"swish\"\n",
       "x.toml:3: unknown activation 'swish'; use \"gelu\", \"relu\", \"silu\", \"gelu_new\""},
      {"[model]\npreset = \"resnet50\"\nfp32_logits = true\n",
       "x.toml:3: 'fp32_logits' applies to family = \"transformer\" only"},
  };
  for (const Case& c : cases) {
    auto w = ParseWorkloadToml(c.toml, "x.toml");
    ASSERT_FALSE(w.ok()) << c.toml;
    EXPECT_THAT(std::string(w.status().message()), ::testing::HasSubstr(c.message)) << c.toml;
  }
}

TEST(WorkloadTest, UnknownPresetListsChoices) {
  auto w = PresetWorkload("gpt-9000");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), ::testing::HasSubstr("gpt-125m"));
}

}  // namespace
}  // namespace xdeep::tuner

namespace xdeep::tuner {
namespace {

constexpr const char* kGpt = "[model]\npreset = \"gpt-125m\"\n";

TEST(ParallelTableTest, ReadsWhatTheScriptSupports) {
  auto w = ParseWorkloadToml(std::string(kGpt) +
                                 "[parallel]\nstrategies = [\"dp\", \"pp\", \"fsdp\"]\nmax_pp = 4\n"
                                 "sharding = [\"none\", \"fsdp\"]\npipeline_schedule = \"1f1b\"\n"
                                 "recompute = false\nlauncher = \"torchrun\"\n",
                             "p.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->parallel.launcher, "torchrun");
  EXPECT_EQ(w->parallel.strategies, (std::vector<std::string>{"dp", "pp", "fsdp"}));
  EXPECT_EQ(w->parallel.max_pp, 4);
  EXPECT_EQ(w->parallel.tp, 0);
  EXPECT_EQ(w->parallel.pipeline_schedule, "1f1b");
  EXPECT_EQ(w->parallel.recompute, "off");
  auto plain = ParseWorkloadToml(kGpt, "plain.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->parallel.empty());
}

TEST(ParallelTableTest, MistakesNameTheLineAndTheFix) {
  const std::pair<const char*, const char*> bad[] = {
      {"strategies = [\"ddp2\"]", "p.toml:4: unknown name in 'strategies': 'ddp2'"},
      {"strategies = []", "p.toml:4: 'strategies' must be a non-empty list"},
      {"tp = 0", "p.toml:4: 'tp' must be a whole number from 1 to 4096"},
      {"tp = 2\nmax_tp = 4", "give either 'tp' or 'max_tp', not both"},
      {"strategies = [\"dp\"]\ntp = 2", "a degree above 1 for a strategy that 'strategies'"},
      {"pipeline_schedule = \"gpipe\"", "'pipeline_schedule' must be \"1f1b\" or \"interleaved\""},
      {"recompute = \"yes\"", "'recompute' must be true, false or \"selective\""},
      {"sharding = [\"zero4\"]", "unknown name in 'sharding': 'zero4'"},
      {"tensor = 2", "unknown key 'tensor' in [parallel]"},
      {"launcher = \"mpirun\"", "'launcher' must be \"srun\", \"torchrun\""},
  };
  for (const auto& [table, want] : bad) {
    auto w = ParseWorkloadToml(std::string(kGpt) + "[parallel]\n" + table + "\n", "p.toml");
    ASSERT_FALSE(w.ok()) << table;
    EXPECT_NE(std::string(w.status().message()).find(want), std::string::npos)
        << w.status().message();
  }
  auto clash = ParseWorkloadToml(std::string(kGpt) +
                                     "[training]\nactivation_checkpointing = true\n"
                                     "[parallel]\nrecompute = false\n",
                                 "c.toml");
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(std::string(clash.status().message()).find("contradicts"), std::string::npos);
  // Selective recomputation: a script told by the launcher (tuned), not one
  // that always checkpoints whole blocks.
  auto selective = ParseWorkloadToml(std::string(kGpt) +
                                         "[training]\nactivation_checkpointing = \"tuned\"\n"
                                         "[parallel]\nrecompute = \"selective\"\n",
                                     "s.toml");
  ASSERT_TRUE(selective.ok()) << selective.status();
  EXPECT_EQ(selective->parallel.recompute, "selective");
  auto always = ParseWorkloadToml(std::string(kGpt) +
                                      "[training]\nactivation_checkpointing = true\n"
                                      "[parallel]\nrecompute = \"selective\"\n",
                                  "a.toml");
  ASSERT_FALSE(always.ok());
  EXPECT_NE(std::string(always.status().message()).find("contradicts"), std::string::npos);
}

TEST(WorkloadTest, HeldOutRun14WorkloadsMatchTheLibrariesCounts) {
  // Held-out run 14's files (bench/validate/workloads) against the parameters of the classes
  // library_suite.py builds, counted from their code: GPT2LMHeadModel (Conv1D weights and
  // biases, two LayerNorms a block and a final one, 1024 learned positions, the head tied) and
  // torchvision's wide_resnet50_2 exactly; LlamaForCausalLM (q, k, v, o and gate, up, down
  // without biases, two RMSNorm weights a block and a final one) plus the bias the tuner counts
  // beside every norm's weight (a LayerNorm's, hidden a norm: 0.01 % of these models); timm's
  // VisionTransformer with its patch embedding's convolution (16 x 16 x 3 x 192 + 192), the
  // class token (192) and the head's bias (1000) replaced by the vocabulary x hidden table the
  // file describes in their place. A typo in a width, head count, MLP width or vocabulary of a
  // held-out file changes its count.
  struct Case {
    const char* name;
    int64_t expected;
  };
  for (Case c : {Case{"hf-cerebras-gpt-256m", 254862912},
                 Case{"hf-mobilellm-1b", 1005461760 + (2 * 54 + 1) * 1280},
                 Case{"hf-opencoder-1.5b", 1905650880 + (2 * 24 + 1) * 2240},
                 Case{"timm-vit-ti16-384", 5790376 - (16 * 16 * 3 * 192 + 192) - 192 - 1000 + 1000 * 192},
                 Case{"tv-wide-resnet50-288", 68883240}}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/bench/validate/workloads/" + c.name + ".toml";
    auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->Parameters(), c.expected) << c.name;
  }
}


TEST(WorkloadTest, HeldOutRun15WorkloadsMatchTheLibrariesCounts) {
  // Held-out run 15's files (bench/validate/workloads) against the parameters of the classes
  // library_suite.py builds, counted from their code as the run-14 test above does:
  // GPT2LMHeadModel (Conv1D weights and biases, 1024 learned positions, the head tied) and timm's
  // resnet50 exactly; LlamaForCausalLM plus the bias the tuner counts beside every norm's weight;
  // Qwen2ForCausalLM the same, less its q, k and v biases (3 x 2048 a block, which the file
  // describes as none); timm's VisionTransformer with its patch embedding's convolution
  // (16 x 16 x 3 x 384 + 384), the class token (384) and the head's bias (1000) replaced by the
  // vocabulary x hidden table the file describes in their place. A typo in a width, head count,
  // MLP width or vocabulary of a held-out file changes its count.
  struct Case {
    const char* name;
    int64_t expected;
  };
  for (Case c : {Case{"hf-cerebras-gpt-111m", 110264064},
                 Case{"hf-amd-llama-135m", 134105856 + (2 * 12 + 1) * 768},
                 Case{"hf-qwen1.5-1.8b", 1836828672 - 24 * 3 * 2048 + (2 * 24 + 1) * 2048},
                 Case{"timm-vit-s16-384", 22196584 - (16 * 16 * 3 * 384 + 384) - 384 - 1000 + 1000 * 384},
                 Case{"timm-resnet50-160", 25557032}}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/bench/validate/workloads/" + c.name + ".toml";
    auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->Parameters(), c.expected) << c.name;
  }
}

TEST(WorkloadTest, HeldOutRun16WorkloadsMatchTheLibrariesCounts) {
  // Held-out run 16's files (bench/validate/workloads) against the parameters of the classes
  // library_suite.py builds, counted from their code as the run-14 and run-15 tests above do:
  // GPTNeoXForCausalLM (fused QKV, every Linear biased, two LayerNorms a block and a final one,
  // the head untied) and torchvision's resnet101 and efficientnet_b2 exactly; GPTBigCodeForCausalLM (multi-query:
  // c_attn 768 -> 768 + 2 x 64, biases, 1024 learned positions, the head tied) exactly;
  // Starcoder2ForCausalLM (q, k, v, o, c_fc, c_proj biased, LayerNorms, the head tied) exactly;
  // timm's VisionTransformer with its patch embedding's convolution (16 x 16 x 3 x 768 + 768),
  // the class token (768) and the head's bias (1000) replaced by the vocabulary x hidden table
  // the file describes in their place. A typo in a width, head count, key-value head count, MLP
  // width or vocabulary of a held-out file changes its count.
  struct Case {
    const char* name;
    int64_t expected;
  };
  for (Case c : {Case{"hf-pythia-70m", 70426624},
                 Case{"hf-tiny-starcoder-py", 158639104},
                 Case{"hf-starcoder2-3b", 3030371328},
                 Case{"timm-vit-b16-512", 87203560 - (16 * 16 * 3 * 768 + 768) - 768 - 1000 + 1000 * 768},
                 Case{"tv-resnet101-256", 44549160},
                 Case{"tv-efficientnet-b2-260", 9109994}}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/bench/validate/workloads/" + c.name + ".toml";
    auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->Parameters(), c.expected) << c.name;
  }
}

TEST(WorkloadTest, HeldOutRun17WorkloadsMatchTheLibrariesCounts) {
  // Held-out run 17's files (bench/validate/workloads) against the parameters of the classes
  // library_suite.py builds, counted from their code as the run-14 to run-16 tests above do:
  // LlamaForCausalLM (q, k, v, o and gate, up, down without biases, two RMSNorm weights a block and
  // a final one; llama2.c-42M's head tied, EuroLLM-1.7B's untied) plus the bias the tuner counts
  // beside every norm's weight; GPTNeoXForCausalLM (fused QKV, every Linear biased, two LayerNorms a
  // block and a final one, the head untied) and torchvision's convnext_small exactly; timm's
  // VisionTransformer with its patch embedding's convolution (16 x 16 x 3 x 1024 + 1024), the class
  // token (1024) and the head's bias (1000) replaced by the vocabulary x hidden table the file
  // describes in their place (its position table is 401 x 1024 at 320 px). A typo in a width, head
  // count, key-value head count, MLP width or vocabulary of a held-out file changes its count.
  struct Case {
    const char* name;
    int64_t expected;
  };
  for (Case c : {Case{"hf-llama2c-42m", 41689600 + (2 * 8 + 1) * 512},
                 Case{"hf-eurollm-1.7b", 1656850432 + (2 * 24 + 1) * 2048},
                 Case{"hf-pythia-160m", 162322944},
                 Case{"timm-vit-l16-320", 304535528 - (16 * 16 * 3 * 1024 + 1024) - 1024 - 1000 + 1000 * 1024},
                 Case{"tv-convnext-small-192", 50223688}}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/bench/validate/workloads/" + c.name + ".toml";
    auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->Parameters(), c.expected) << c.name;
  }
}

TEST(WorkloadTest, HeldOutRun18WorkloadsMatchTheLibrariesCounts) {
  // Held-out run 18's files (bench/validate/workloads) against the parameters of the classes
  // library_suite.py builds, counted from their code as the run-14 to run-17 tests above do:
  // LlamaForCausalLM (q, k, v, o and gate, up, down without biases, two RMSNorm weights a block and
  // a final one; llama2.c-15M's head tied, Salamandra-2B's untied) plus the bias the tuner counts
  // beside every norm's weight; GPT2LMHeadModel (Conv1D weights and biases, two LayerNorms a block
  // and a final one, 1024 learned positions, the head tied) and torchvision's regnet_y_8gf exactly;
  // timm's VisionTransformer with its patch embedding's convolution (32 x 32 x 3 x 1024 + 1024), the
  // class token (1024) and the head's bias (1000) replaced by the vocabulary x hidden table the file
  // describes in their place (its position table is 145 x 1024 at 384 px). A typo in a width, head
  // count, key-value head count, MLP width or vocabulary of a held-out file changes its count.
  struct Case {
    const char* name;
    int64_t expected;
  };
  for (Case c : {Case{"hf-llama2c-15m", 15191712 + (2 * 6 + 1) * 288},
                 Case{"hf-salamandra-2b", 2253490176 + (2 * 24 + 1) * 2048},
                 Case{"hf-gpt-sw3-356m", 368896000},
                 Case{"timm-vit-l32-384", 306632680 - (32 * 32 * 3 * 1024 + 1024) - 1024 - 1000 + 1000 * 1024},
                 Case{"tv-regnet-y-8gf", 39381472}}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/bench/validate/workloads/" + c.name + ".toml";
    auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->Parameters(), c.expected) << c.name;
  }
}

TEST(WorkloadTest, HeldOutRun19WorkloadsMatchTheLibrariesCounts) {
  // Held-out run 19's files (bench/validate/workloads) against the parameters of the classes
  // library_suite.py builds, counted from their code as the run-14 to run-18 tests above do:
  // LlamaForCausalLM (q, k, v, o and gate, up, down without biases, two RMSNorm weights a block and
  // a final one; smol_llama-101M's head untied) plus the bias the tuner counts beside every norm's
  // weight; Qwen2ForCausalLM the same (its head tied), less its q, k and v biases (2048 + 256 + 256 a
  // block, which the file describes as none); GPT2LMHeadModel (Conv1D weights and biases, two
  // LayerNorms a block and a final one, 1024 learned positions, the head tied) and torchvision's
  // resnext101_32x8d exactly; timm's VisionTransformer with its patch embedding's convolution
  // (14 x 14 x 3 x 1408 + 1408), the class token (1408) and the head's bias (1000) replaced by the
  // vocabulary x hidden table the file describes in their place. A typo in a width, head count,
  // key-value head count, MLP width or vocabulary of a held-out file changes its count.
  struct Case {
    const char* name;
    int64_t expected;
  };
  for (Case c : {Case{"hf-smol-llama-101m", 101263104 + (2 * 6 + 1) * 768},
                 Case{"hf-qwen2.5-3b", 3085938688 - 36 * (2048 + 256 + 256) + (2 * 36 + 1) * 2048},
                 Case{"hf-rugpt3-large", 758727168},
                 Case{"timm-vit-g14", 1012611432 - (14 * 14 * 3 * 1408 + 1408) - 1408 - 1000 + 1000 * 1408},
                 Case{"tv-resnext101-32x8d", 88791336}}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/bench/validate/workloads/" + c.name + ".toml";
    auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->Parameters(), c.expected) << c.name;
  }
}

}  // namespace
}  // namespace xdeep::tuner
