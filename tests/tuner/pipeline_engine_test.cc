// The pipeline engine ([model] pipeline_parallel): what DeepSpeed's
// PipelineEngine changes in the strategy model and the search, and the tied
// pair's gradient all-reduce between the first and last stage.
#include "tuner/pipeline_engine.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "tests/tuner/test_util.h"
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

// tp4 x pp4 x dp4 on 8 nodes of 8, micro-batch 1.
Configuration Layout(int pp) {
  Configuration c = testing::EngineLayout(4, pp, 4);
  c.recompute = true;
  return c;
}

HardwareProfile A100() {
  auto hw = BuiltinHardwareProfile("a100-sxm");
  EXPECT_TRUE(hw.ok());
  return *hw;
}

TEST(PipelineEngineTest, ParsedFromTheModelTable) {
  const std::string model = "[model]\npreset = \"gpt-125m\"\n";
  auto w = ParseWorkloadToml(model + "pipeline_parallel = \"deepspeed\"\n", "w.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->settings.pipeline_parallel, PipelineParallel::kDeepSpeed);
  auto plain = ParseWorkloadToml(model, "w.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->settings.pipeline_parallel, PipelineParallel::kMegatron);
  auto bad = ParseWorkloadToml(model + "pipeline_parallel = \"gpipe\"\n", "w.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pipeline_parallel"), std::string::npos);
  auto interleaved = ParseWorkloadToml(model +
                                           "pipeline_parallel = \"deepspeed\"\n[parallel]\n"
                                           "pipeline_schedule = \"interleaved\"\n",
                                       "w.toml");
  ASSERT_FALSE(interleaved.ok());
  EXPECT_NE(interleaved.status().message().find("interleaved"), std::string::npos);
}

TEST(PipelineEngineTest, OneStageIsTheSameUnderEitherEngine) {
  const HardwareProfile hw = A100();
  const Workload megatron = testing::EngineGpt(PipelineParallel::kMegatron);
  const Workload deepspeed = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  const Configuration c = Layout(1);
  EXPECT_EQ(EstimateStepTime(megatron, hw, c).total_s, EstimateStepTime(deepspeed, hw, c).total_s);
  EXPECT_EQ(EstimateMemory(megatron, hw, c).Total(), EstimateMemory(deepspeed, hw, c).Total());
}

TEST(PipelineEngineTest, DeepSpeedReducesAfterTheFlushAndAccumulatesInFp32) {
  const HardwareProfile hw = A100();
  const Workload megatron = testing::EngineGpt(PipelineParallel::kMegatron);
  const Workload deepspeed = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  const Configuration c = Layout(4);
  const StepTime m = EstimateStepTime(megatron, hw, c);
  const StepTime d = EstimateStepTime(deepspeed, hw, c);
  // None of the reduction hides behind the last backward.
  EXPECT_GT(d.exposed_comm_s, m.exposed_comm_s);
  // Each micro-batch adds its bf16 gradients into the fp32 buffer: at least
  // 12 bytes per parameter of the stage at the memory bandwidth.
  const MemoryBreakdown mm = EstimateMemory(megatron, hw, c);
  const MemoryBreakdown dm = EstimateMemory(deepspeed, hw, c);
  const double stage_params = mm.weights / 2;  // bf16 weights, unsharded
  EXPECT_GT(d.per_micro_batch_s - m.per_micro_batch_s,
            0.9 * 12 * stage_params / (hw.memory_bandwidth_gbps * 1e9));
  // The fp32 buffer: 4 bytes per parameter more.
  EXPECT_NEAR(dm.gradients - mm.gradients, 4 * stage_params, 1e-6 * dm.gradients);
}

// DeepSpeed of 2021 ([model] deepspeed_release = "2021"; pipeline_engine.h):
// the engine Megatron-DeepSpeed's GPTModelPipe needs (e2fdd25: its single
// tensor partitioned, gradients 1 / tp as today), without bf16, so 16-bit
// gradients are added into .grad in place by autograd from the second
// micro-batch on (read 2 + 2, write 2 bytes a parameter) instead of into an
// fp32 buffer (18 bytes, 4 of memory). The transfers are today's: per
// micro-batch the release changes only the accumulation pass.
TEST(PipelineEngineTest, DeepSpeedOf2021PartitionsGradientsAndAccumulatesIn16Bits) {
  const HardwareProfile hw = A100();
  const Workload now = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  Workload then = now;
  then.settings.deepspeed_release = DeepSpeedRelease::k2021;
  const Configuration c = Layout(4);
  EXPECT_TRUE(EngineTraits(then, c).partitioned_p2p);
  EXPECT_FALSE(EngineTraits(then, c).overlaps_gradient_reduction);
  EXPECT_EQ(EngineTraits(then, c).accumulation_traffic_bytes, 6);
  EXPECT_EQ(EngineTraits(now, c).accumulation_traffic_bytes, 18);
  const double bw = hw.memory_bandwidth_gbps * 1e9;
  // The slowest stage is the last: 6 blocks, the head and its own copy of
  // the tied vocabulary matrix.
  double last_params = 0;
  for (int i = static_cast<int>(now.layers.size()) - 7; i < static_cast<int>(now.layers.size());
       ++i) {
    last_params += now.layers[i].params / c.tp;
  }
  ASSERT_TRUE(now.transformer.tied_embeddings);
  last_params += double(now.transformer.vocab) * now.transformer.hidden / c.tp;
  // Besides the accumulation, 2021's PartitionedTensor copies: the last
  // stage's forward rebuilds its input (5 bytes a byte of it, and three
  // shard copies of 2), its backward partitions the input's gradient.
  const double input = now.layers[1].output_bytes * c.micro_batch;
  const double copies = (5 + 4 * 2.0 / c.tp) * input / bw;
  const double got = EstimateStepTime(then, hw, c).per_micro_batch_s -
                     EstimateStepTime(now, hw, c).per_micro_batch_s;
  EXPECT_NEAR(got, -(18 - 6) * last_params / bw + copies, 1e-3 * (18 - 6) * last_params / bw);
  // The first micro-batch's gradients find nothing to add to.
  EXPECT_NEAR(EstimateStepTime(then, hw, c).first_accumulation_s, 6 * last_params / bw,
              1e-9 * last_params);
  // No fp32 gradient buffer: 4 bytes a parameter less.
  const double stage_params = EstimateMemory(now, hw, c).weights / 2;  // bf16, unsharded
  EXPECT_NEAR(EstimateMemory(now, hw, c).gradients - EstimateMemory(then, hw, c).gradients,
              4 * stage_params, 1e-6 * stage_params);
}

// DeepSpeed of 2021's PartitionedTensor (deepspeed/runtime/utils.py at
// e2fdd25; pipeline_engine.h): full() zero-fills the whole tensor, PyTorch of
// 2021's list all-gather copies it out of its own flat buffer, and full()
// returns a clone (5 bytes of traffic a byte), and each shard is copied
// (read and write) where it is partitioned, received, cloned for the forward
// and put into full()'s buffer. Charged on the 2021 engine with tensor
// parallelism only; a middle stage pays three full()s a micro-batch and the
// last one.
TEST(PipelineEngineTest, DeepSpeedOf2021CopiesEachPartitionedTensorOnTheDevice) {
  const HardwareProfile hw = A100();
  Workload w = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  w.settings.deepspeed_release = DeepSpeedRelease::k2021;
  const Configuration c = Layout(4);
  EXPECT_EQ(EngineTraits(w, c).partition_full_traffic, 5);
  EXPECT_EQ(EngineTraits(w, c).partition_shard_traffic, 2);
  Configuration no_tp = c;
  no_tp.tp = 1;
  no_tp.dp = 16;
  no_tp.grad_accum = 256 / no_tp.dp;
  EXPECT_EQ(EngineTraits(w, no_tp).partition_full_traffic, 0);
  EXPECT_EQ(EngineTraits(testing::EngineGpt(PipelineParallel::kDeepSpeed), c)
                .partition_full_traffic,
            0);
  // Memory bandwidth scales the copies alone among the last stage's device
  // terms that do not also scale with it in the other release: the
  // difference between the releases grows by the copies' share.
  HardwareProfile slow = hw;
  slow.memory_bandwidth_gbps *= 0.5;
  Workload now = w;
  now.settings.deepspeed_release = DeepSpeedRelease::kCurrent;
  const double input = w.layers[1].output_bytes * c.micro_batch;
  const double copies = (5 + 4 * 2.0 / c.tp) * input / (hw.memory_bandwidth_gbps * 1e9);
  double last_params = 0;
  for (int i = static_cast<int>(w.layers.size()) - 7; i < static_cast<int>(w.layers.size()); ++i) {
    last_params += w.layers[i].params / c.tp;
  }
  last_params += double(w.transformer.vocab) * w.transformer.hidden / c.tp;
  const double accumulation = (18 - 6) * last_params / (hw.memory_bandwidth_gbps * 1e9);
  const auto delta = [&](const HardwareProfile& h) {
    return EstimateStepTime(w, h, c).per_micro_batch_s -
           EstimateStepTime(now, h, c).per_micro_batch_s;
  };
  EXPECT_NEAR(delta(hw), copies - accumulation, 1e-3 * accumulation);
  EXPECT_NEAR(delta(slow), 2 * (copies - accumulation), 2e-3 * accumulation);
  EXPECT_GT(copies, 0.01 * accumulation);
}

// A bf16 run on the engine of 2021 with [training] fp32_grad_reduce: fp32
// main gradients, main_grad.add_(grad) after every micro-batch (10 bytes a
// parameter, the first micro-batch too), reduced in fp32; parsed only with
// deepspeed_release = "2021" (today's engine has its own fp32 buffer).
TEST(PipelineEngineTest, DeepSpeedOf2021WithFp32AccumulationPaysMegatronsPass) {
  const HardwareProfile hw = A100();
  Workload fp16 = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  fp16.settings.deepspeed_release = DeepSpeedRelease::k2021;
  Workload fp32 = fp16;
  fp32.settings.fp32_grad_reduce = true;
  const Configuration c = Layout(4);
  EXPECT_EQ(EngineTraits(fp32, c).accumulation_traffic_bytes, 2 + 4 + 4);
  EXPECT_FALSE(EngineTraits(fp32, c).first_accumulation_free);
  EXPECT_EQ(EngineTraits(fp32, c).accumulation_buffer_bytes, 0);  // the gradients are fp32
  double last_params = 0;
  for (int i = static_cast<int>(fp16.layers.size()) - 7; i < static_cast<int>(fp16.layers.size());
       ++i) {
    last_params += fp16.layers[i].params / c.tp;
  }
  last_params += double(fp16.transformer.vocab) * fp16.transformer.hidden / c.tp;
  const double bw = hw.memory_bandwidth_gbps * 1e9;
  const StepTime t16 = EstimateStepTime(fp16, hw, c), t32 = EstimateStepTime(fp32, hw, c);
  // main_grad.add_(grad) at the mixed-dtype add's measured rate, the 16-bit
  // in-place add at the copy bandwidth.
  EXPECT_EQ(EngineTraits(fp32, c).accumulation_bandwidth_share, kMixedDtypeAccumulationShare);
  EXPECT_NEAR(t32.per_micro_batch_s - t16.per_micro_batch_s,
              (10 / kMixedDtypeAccumulationShare - 6) * last_params / bw,
              1e-3 * 10 * last_params / bw);
  EXPECT_EQ(t32.first_accumulation_s, 0);
  EXPECT_GT(t32.exposed_comm_s, t16.exposed_comm_s);  // twice the bytes reduced over dp
  const double stage_params = EstimateMemory(fp16, hw, c).weights / 2;
  EXPECT_NEAR(EstimateMemory(fp32, hw, c).gradients - EstimateMemory(fp16, hw, c).gradients,
              2 * stage_params, 1e-6 * stage_params);

  auto then = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\npipeline_parallel = \"deepspeed\"\n"
      "deepspeed_release = \"2021\"\n[training]\nprecision = \"bf16-mixed\"\n"
      "fp32_grad_reduce = true\n",
      "w.toml");
  ASSERT_TRUE(then.ok()) << then.status();
  EXPECT_TRUE(then->settings.fp32_grad_reduce);
  auto now = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\npipeline_parallel = \"deepspeed\"\n"
      "[training]\nprecision = \"bf16-mixed\"\nfp32_grad_reduce = true\n",
      "w.toml");
  ASSERT_FALSE(now.ok());
  EXPECT_NE(now.status().message().find("deepspeed_release"), std::string::npos) << now.status();
}

// The last stage (its head makes it the slowest here) sends nothing on, but
// every forward step receives its input and sends that gradient back: two
// 1 / tp transfers across the link per micro-batch. A slower NIC lengthens
// its micro-batch by exactly those two transfers' difference (it stays the
// slowest: the middle stages' extra is the same per transfer, and they have
// the head's work less).
TEST(PipelineEngineTest, LastStageReceivesItsInputAndSendsTheGradientBack) {
  const HardwareProfile hw = A100();
  HardwareProfile slow = hw;
  slow.fabric.nic_gbit *= 0.8;
  const Workload w = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  const Configuration c = Layout(4);
  const double bytes = w.layers[1].output_bytes * c.micro_batch / c.tp;
  const double link = CollectiveTime(slow, CollectiveOp::kSendRecv, bytes, 2, 1) -
                      CollectiveTime(hw, CollectiveOp::kSendRecv, bytes, 2, 1);
  ASSERT_GT(link, 0);
  const double got =
      EstimateStepTime(w, slow, c).per_micro_batch_s - EstimateStepTime(w, hw, c).per_micro_batch_s;
  EXPECT_NEAR(got, 2 * link, 0.05 * link);
}

TEST(PipelineEngineTest, DeepSpeedReleaseParsedForDeepSpeedOnly) {
  const std::string model = "[model]\npreset = \"gpt-125m\"\n";
  auto w = ParseWorkloadToml(
      model + "pipeline_parallel = \"deepspeed\"\ndeepspeed_release = \"2021\"\n", "w.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->settings.deepspeed_release, DeepSpeedRelease::k2021);
  auto plain = ParseWorkloadToml(model + "pipeline_parallel = \"deepspeed\"\n", "w.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->settings.deepspeed_release, DeepSpeedRelease::kCurrent);
  auto bad = ParseWorkloadToml(
      model + "pipeline_parallel = \"deepspeed\"\ndeepspeed_release = \"0.5\"\n", "w.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("deepspeed_release"), std::string::npos) << bad.status();
  auto megatron = ParseWorkloadToml(model + "deepspeed_release = \"2021\"\n", "w.toml");
  ASSERT_FALSE(megatron.ok());
  EXPECT_NE(megatron.status().message().find("pipeline_parallel = \"deepspeed\""),
            std::string::npos)
      << megatron.status();
  auto cnn = ParseWorkloadToml(
      "[model]\nfamily = \"cnn\"\narch = \"resnet50\"\ndeepspeed_release = \"2021\"\n", "w.toml");
  ASSERT_FALSE(cnn.ok());
  EXPECT_NE(cnn.status().message().find("deepspeed_release"), std::string::npos);
}

TEST(PipelineEngineTest, StructureRefusesWhatDeepSpeedCannotRun) {
  const Workload deepspeed = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  Configuration c = Layout(4);
  c.schedule = PipelineSchedule::kInterleaved;
  c.virtual_stages = 2;
  EXPECT_NE(StructuralProblem(deepspeed, c).find("interleaved"), std::string::npos);
  EXPECT_EQ(StructuralProblem(testing::EngineGpt(PipelineParallel::kMegatron), c), "");
  c = Layout(4);
  c.sharding = Sharding::kZero2;
  EXPECT_NE(StructuralProblem(deepspeed, c).find("ZeRO-2"), std::string::npos);
  c.sharding = Sharding::kZero1;
  EXPECT_EQ(StructuralProblem(deepspeed, c), "");
}

TEST(PipelineEngineTest, SearchOffersDeepSpeedNeitherInterleavingNorShardedGradients) {
  const HardwareProfile hw = A100();
  Workload w = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  w.parallel.pp = 4;  // every candidate pipelined, so the checks below bite
  SearchLimits limits;
  limits.objective = Objective::kTime;
  limits.max_nodes = 8;
  limits.max_total_gpus = 64;
  auto res = Search(w, hw, limits);
  ASSERT_TRUE(res.ok()) << res.status();
  int pipelined = 0;
  auto check = [&](const Configuration& c) {
    if (c.pp <= 1) return;
    ++pipelined;
    EXPECT_EQ(c.schedule, PipelineSchedule::k1F1B) << StrategyName(c);
    EXPECT_TRUE(c.sharding == Sharding::kNone || c.sharding == Sharding::kZero1) << StrategyName(c);
  };
  check(res->best.config);
  for (const auto& r : res->alternatives) check(r.config);
  EXPECT_GT(pipelined, 1);
}

TEST(PipelineEngineTest, TiedPairReducesItsGradientsAcrossStages) {
  const HardwareProfile hw = A100();
  const Workload tied = testing::EngineGpt(PipelineParallel::kMegatron);
  Workload untied = tied;
  untied.transformer.tied_embeddings = false;
  BuildTransformerLayers(untied);
  // Without data parallelism the only reduction left is the tied pair's,
  // between the first and the last stage after backward.
  Configuration c = Layout(4);
  c.dp = 1;
  c.nodes = c.tp * c.pp / 8;
  c.grad_accum = c.global_batch;
  EXPECT_GT(EstimateStepTime(tied, hw, c).exposed_comm_s, 0);
  EXPECT_EQ(EstimateStepTime(untied, hw, c).exposed_comm_s, 0);
  // On one stage there is no pair to reduce.
  c = Layout(1);
  c.dp = 1;
  c.tp = 8;
  c.nodes = 1;
  c.grad_accum = c.global_batch;
  EXPECT_EQ(EstimateStepTime(tied, hw, c).exposed_comm_s, 0);
}

TEST(PipelineEngineTest, TorchPipeliningReducesNoTiedPair) {
  // torch.distributed.pipelining's stages hold two independent copies of a
  // tied matrix and nothing reduces their gradients: no exposed collective
  // without data parallelism, where Megatron's engine has the pair's.
  const HardwareProfile hw = A100();
  const Workload megatron = testing::EngineGpt(PipelineParallel::kMegatron);
  const Workload torch = testing::EngineGpt(PipelineParallel::kTorch);
  ASSERT_TRUE(torch.transformer.tied_embeddings);
  Configuration c = Layout(4);
  c.dp = 1;
  c.nodes = c.tp * c.pp / 8;
  c.grad_accum = c.global_batch;
  EXPECT_GT(EstimateStepTime(megatron, hw, c).exposed_comm_s, 0);
  EXPECT_EQ(EstimateStepTime(torch, hw, c).exposed_comm_s, 0);
  EXPECT_FALSE(EngineTraits(torch, c).reduces_tied_pair);
  EXPECT_TRUE(EngineTraits(megatron, c).reduces_tied_pair);
}

// Megatron-LM's p2p with Megatron-style tensor parallelism carries 1 / tp of
// each activation and gradient (pipeline_engine.h): against an engine that
// sends them whole (torch.distributed.pipelining) a micro-batch saves the
// difference each way; without sequence parallelism the receiver's
// all-gather over tp is charged back.
TEST(PipelineEngineTest, MegatronSendsOneTensorParallelShardAcrossStages) {
  const HardwareProfile hw = A100();
  // A small vocabulary: the last stage (which sends nothing on) is not the
  // slowest for its head.
  auto small_head = [](PipelineParallel engine) {
    Workload w = testing::EngineGpt(engine);
    w.transformer.vocab = 128;
    BuildTransformerLayers(w);
    return w;
  };
  const Workload megatron = small_head(PipelineParallel::kMegatron);
  const Workload whole = small_head(PipelineParallel::kTorch);
  Configuration c = Layout(4);  // tp 4 x dp 4 fill a node: stages on different nodes
  const double bytes = megatron.layers[1].output_bytes * c.micro_batch;
  const double link = CollectiveTime(hw, CollectiveOp::kSendRecv, bytes, 2, 1) -
                      CollectiveTime(hw, CollectiveOp::kSendRecv, bytes / c.tp, 2, 1);
  const double gather = CollectiveTime(hw, CollectiveOp::kAllGather, bytes, c.tp, c.tp);
  ASSERT_GT(link, 0);
  for (bool sp : {true, false}) {
    c.sequence_parallel = sp;
    const double saved = EstimateStepTime(whole, hw, c).per_micro_batch_s -
                         EstimateStepTime(megatron, hw, c).per_micro_batch_s;
    const double expected = 2 * (link - (sp ? 0 : gather));
    ASSERT_GT(expected, 0);
    // At most that (the last stage sends nothing on, and may become the
    // slowest once the others send less), and most of it.
    EXPECT_LE(saved, expected * (1 + 1e-9)) << "sequence parallel " << sp;
    EXPECT_GT(saved, 0.9 * expected) << "sequence parallel " << sp;
  }
  // DTensor's tensor parallelism under Megatron's schedule sends them whole.
  Workload dtensor = megatron;
  dtensor.settings.tensor_parallel = TensorParallel::kDTensor;
  EXPECT_FALSE(EngineTraits(dtensor, c).p2p_shards > 1);
  EXPECT_EQ(EngineTraits(megatron, c).p2p_shards, c.tp);
}

// The embedding and the head counted as one block each in the split
// ([model] pipeline_ends_as_layers): 22 blocks + 2 over 4 stages puts 5 blocks
// on the first and last stage and 6 on the others, where an even split of 24
// blocks puts 6 on every stage and the head on top of the last.
Workload EndsAsLayers(int blocks, bool ends) {
  Workload w = testing::MegatronGpt("gpt-ends", blocks, 4096, 32, 2048);
  w.settings.pipeline_ends_as_layers = ends;
  BuildTransformerLayers(w);
  w.reference_global_batch = w.min_global_batch = w.max_global_batch = 256;
  w.max_micro_batch = 4;
  return w;
}

TEST(PipelineEngineTest, EndsCountedAsLayersTakeABlockOffTheFirstAndLastStage) {
  const Workload ends = EndsAsLayers(22, true), even = EndsAsLayers(24, false);
  const Configuration c = Layout(4);
  EXPECT_EQ(StructuralProblem(ends, c), "");
  EXPECT_NE(StructuralProblem(EndsAsLayers(22, false), c).find("must divide"), std::string::npos);
  Configuration odd = c;
  odd.schedule = PipelineSchedule::kInterleaved;
  odd.virtual_stages = 3;  // 4 x 3 divides 22 + 2, not 22
  EXPECT_EQ(StructuralProblem(ends, odd), "");
  odd.virtual_stages = 5;
  EXPECT_NE(StructuralProblem(ends, odd).find("embedding + head"), std::string::npos);

  const HardwareProfile hw = A100();
  StrategyModel with_ends(ends, hw), with_even(even, hw);
  // Middle stages hold 6 blocks either way; the even split's last stage
  // holds 6 and the head, the balanced one 5 and the head.
  EXPECT_LT(with_ends.Time(c).per_micro_batch_s, with_even.Time(c).per_micro_batch_s);
  // The first stage holds the most micro-batches in flight: 5 blocks there
  // instead of 6.
  EXPECT_LT(with_ends.Memory(c).activations, with_even.Memory(c).activations);

  // The search offers the depths that divide blocks + 2.
  Workload forced = ends;
  forced.parallel.pp = 4;
  SearchLimits limits;
  limits.objective = Objective::kTime;
  limits.max_nodes = 8;
  limits.max_total_gpus = 64;
  auto res = Search(forced, hw, limits);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->best.config.pp, 4);

  auto parsed = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\npipeline_ends_as_layers = true\n", "w.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->settings.pipeline_ends_as_layers);
  auto wrong = ParseWorkloadToml(
      "[model]\nfamily = \"cnn\"\narch = \"resnet50\"\npipeline_ends_as_layers = true\n", "w.toml");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("pipeline_ends_as_layers"), std::string::npos);
}

// Asynchronous transfers ([model] pipeline_async_p2p) under the interleaved
// schedule leave only the part of each transfer longer than one chunk's pass
// on the critical path; here every transfer is shorter, so a micro-batch
// saves what the blocking transfers cost. 1F1B and DeepSpeed's engine keep
// them blocking.
TEST(PipelineEngineTest, AsynchronousTransfersHideBehindTheNextChunk) {
  const HardwareProfile hw = A100();
  const Workload blocking = testing::EngineGpt(PipelineParallel::kMegatron);
  Workload async = blocking;
  async.settings.pipeline_async_p2p = true;
  Configuration c = Layout(4);
  c.schedule = PipelineSchedule::kInterleaved;
  c.virtual_stages = 2;
  ASSERT_TRUE(EngineTraits(async, c).overlapped_p2p);
  EXPECT_FALSE(EngineTraits(blocking, c).overlapped_p2p);
  const double bytes = blocking.layers[1].output_bytes * c.micro_batch;
  const double p2p = CollectiveTime(hw, CollectiveOp::kSendRecv, bytes / c.tp, 2, 1) +
                     CollectiveTime(hw, CollectiveOp::kAllGather, bytes, c.tp, c.tp);
  const double saved = EstimateStepTime(blocking, hw, c).per_micro_batch_s -
                       EstimateStepTime(async, hw, c).per_micro_batch_s;
  // Forward and backward, over the rank's two chunks; the slowest rank may
  // be one that sends less (the last), so at most that and most of it.
  EXPECT_LE(saved, 2 * 2 * p2p * (1 + 1e-9));
  EXPECT_GT(saved, 0.45 * 2 * 2 * p2p);
  Configuration plain = Layout(4);
  EXPECT_FALSE(EngineTraits(async, plain).overlapped_p2p);
  EXPECT_DOUBLE_EQ(EstimateStepTime(async, hw, plain).total_s,
                   EstimateStepTime(blocking, hw, plain).total_s);
  Workload deepspeed = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  deepspeed.settings.pipeline_async_p2p = true;
  EXPECT_FALSE(EngineTraits(deepspeed, plain).overlapped_p2p);

  auto parsed =
      ParseWorkloadToml("[model]\npreset = \"gpt-125m\"\npipeline_async_p2p = true\n", "w.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->settings.pipeline_async_p2p);
  auto wrong = ParseWorkloadToml(
      "[model]\nfamily = \"cnn\"\narch = \"resnet50\"\npipeline_async_p2p = true\n", "w.toml");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("pipeline_async_p2p"), std::string::npos);
  auto other_engine = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\npipeline_parallel = \"deepspeed\"\n"
      "pipeline_async_p2p = true\n",
      "w.toml");
  ASSERT_FALSE(other_engine.ok());
  EXPECT_NE(other_engine.status().message().find("overlap_p2p_comm"), std::string::npos)
      << other_engine.status();
}

// Gradients accumulated and reduced in fp32 ([training] fp32_grad_reduce,
// bf16-mixed only): ZeRO-2 reduce-scatters twice the bytes after every
// micro-batch, across nodes here (tp 4 x dp 2 per node), and its sharded
// gradients take 4 bytes per parameter instead of 2.
TEST(PipelineEngineTest, Fp32GradientReductionDoublesTheReducedBytes) {
  const HardwareProfile hw = A100();
  const Workload bf16 = testing::EngineGpt(PipelineParallel::kMegatron);
  Workload fp32 = bf16;
  fp32.settings.fp32_grad_reduce = true;
  Configuration c = Layout(1);
  c.pp = 1;
  c.dp = 16;
  c.nodes = c.tp * c.dp / 8;
  c.grad_accum = 256 / c.dp;
  c.sharding = Sharding::kZero2;
  const MemoryBreakdown m16 = EstimateMemory(bf16, hw, c), m32 = EstimateMemory(fp32, hw, c);
  EXPECT_NEAR(m32.gradients, 2 * m16.gradients, 1e-6 * m16.gradients);
  EXPECT_GT(m16.gradients, 0);
  // The reduce-scatter after each micro-batch: its share beyond the backward
  // it overlaps grows with the bytes.
  EXPECT_GT(EstimateStepTime(fp32, hw, c).per_micro_batch_s,
            EstimateStepTime(bf16, hw, c).per_micro_batch_s);
  // Without data parallelism nothing is reduced: only memory changes.
  Configuration alone = c;
  alone.dp = 1;
  alone.nodes = 1;
  alone.grad_accum = 256;
  EXPECT_DOUBLE_EQ(EstimateStepTime(fp32, hw, alone).exposed_comm_s,
                   EstimateStepTime(bf16, hw, alone).exposed_comm_s);

  const std::string model = "[model]\npreset = \"gpt-125m\"\n";
  auto parsed = ParseWorkloadToml(
      model + "[training]\nprecision = \"bf16-mixed\"\nfp32_grad_reduce = true\n", "w.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->settings.fp32_grad_reduce);
  auto autocast = ParseWorkloadToml(
      model + "[training]\nprecision = \"bf16-autocast\"\nfp32_grad_reduce = true\n", "w.toml");
  ASSERT_FALSE(autocast.ok());
  EXPECT_NE(autocast.status().message().find("fp32_grad_reduce"), std::string::npos);
  EXPECT_NE(autocast.status().message().find("fp32 already"), std::string::npos);
  auto deepspeed = ParseWorkloadToml(
      model +
          "pipeline_parallel = \"deepspeed\"\n[training]\nprecision = \"bf16-mixed\"\n"
          "fp32_grad_reduce = true\n",
      "w.toml");
  ASSERT_FALSE(deepspeed.ok());
  EXPECT_NE(deepspeed.status().message().find("deepspeed"), std::string::npos);
}

// Megatron-LM of 2021 ([model] megatron_release = "2021"; pipeline_engine.h):
// the data-parallel reduction runs after the pipeline flush, at any depth,
// and every micro-batch's 16-bit weight gradients are added into the
// accumulated ones by a pass of their own (autograd's, from the second
// micro-batch on: read 2 + 2, write 2 bytes a parameter), 10 bytes with fp32
// accumulation; Megatron-LM of 2022 fused that pass into the GEMM where it
// accumulated in fp32.
TEST(PipelineEngineTest, MegatronOf2021ReducesAfterTheFlushAndAccumulatesByItsOwnPass) {
  const HardwareProfile hw = A100();
  const Workload core = testing::EngineGpt(PipelineParallel::kMegatron);
  Workload old = core;
  old.settings.megatron_release = MegatronRelease::k2021;
  const double bw = hw.memory_bandwidth_gbps * 1e9;
  // One stage (tp 4 x dp 4 over two nodes): every rank holds all parameters,
  // so the pass is exact; with four stages the slowest stage pays it.
  const Configuration one = Layout(1);
  const double params = EstimateMemory(core, hw, one).weights / 2;  // bf16 weights
  const StepTime now = EstimateStepTime(core, hw, one);
  const StepTime then = EstimateStepTime(old, hw, one);
  EXPECT_TRUE(EngineTraits(core, one).overlaps_gradient_reduction);
  EXPECT_FALSE(EngineTraits(old, one).overlaps_gradient_reduction);
  EXPECT_GT(then.exposed_comm_s, now.exposed_comm_s);
  EXPECT_NEAR(then.per_micro_batch_s - now.per_micro_batch_s, 6 * params / bw,
              1e-9 * now.per_micro_batch_s);
  // The first micro-batch adds nothing: one pass fewer per step.
  EXPECT_NEAR(then.compute_s - now.compute_s, (one.grad_accum - 1) * 6 * params / bw,
              1e-9 * now.compute_s);
  // Same memory: autograd accumulates into the 16-bit gradients.
  EXPECT_EQ(EstimateMemory(old, hw, one).Total(), EstimateMemory(core, hw, one).Total());

  const Configuration four = Layout(4);
  EXPECT_FALSE(EngineTraits(old, four).overlaps_gradient_reduction);
  const double extra = EstimateStepTime(old, hw, four).per_micro_batch_s -
                       EstimateStepTime(core, hw, four).per_micro_batch_s;
  EXPECT_GT(extra, 0.5 * 6 * params / 4 / bw);
  EXPECT_LT(extra, 1.5 * 6 * params / 4 / bw);
  EXPECT_GT(EstimateStepTime(old, hw, four).exposed_comm_s,
            EstimateStepTime(core, hw, four).exposed_comm_s);

  // One micro-batch per step: nothing to accumulate.
  Configuration whole = one;
  whole.micro_batch = 4;
  whole.grad_accum = 1;
  whole.global_batch = whole.dp * whole.micro_batch;
  EXPECT_NEAR(EstimateStepTime(old, hw, whole).compute_s,
              EstimateStepTime(core, hw, whole).compute_s,
              1e-9 * EstimateStepTime(core, hw, whole).compute_s);

  // fp32 accumulation: the DDP hook's main_grad.add_(grad) after every
  // micro-batch (10 bytes a parameter) in 2021, fused into the GEMM in 2022.
  Workload core32 = core;
  core32.settings.fp32_grad_reduce = true;
  Workload old32 = core32;
  old32.settings.megatron_release = MegatronRelease::k2021;
  Workload mid32 = core32;
  mid32.settings.megatron_release = MegatronRelease::k2022;
  const StepTime c32 = EstimateStepTime(core32, hw, one);
  EXPECT_NEAR(EstimateStepTime(old32, hw, one).compute_s - c32.compute_s,
              one.grad_accum * 10 * params / (bw * kMixedDtypeAccumulationShare),
              1e-9 * c32.compute_s);
  EXPECT_EQ(EstimateStepTime(mid32, hw, one).per_micro_batch_s, c32.per_micro_batch_s);
  EXPECT_GT(EstimateStepTime(mid32, hw, one).exposed_comm_s, c32.exposed_comm_s);
  // 2022 with 16-bit gradients: fusion off, autograd's pass as in 2021.
  Workload mid = core;
  mid.settings.megatron_release = MegatronRelease::k2022;
  EXPECT_EQ(EstimateStepTime(mid, hw, one).total_s, then.total_s);
}

TEST(PipelineEngineTest, MegatronReleaseParsedForMegatronOnly) {
  const std::string model = "[model]\npreset = \"gpt-125m\"\n";
  auto w = ParseWorkloadToml(model + "megatron_release = \"2021\"\n", "w.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->settings.megatron_release, MegatronRelease::k2021);
  auto plain = ParseWorkloadToml(model, "w.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->settings.megatron_release, MegatronRelease::kCore);
  auto bad = ParseWorkloadToml(model + "megatron_release = \"2019\"\n", "w.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("megatron_release"), std::string::npos) << bad.status();
  auto deepspeed = ParseWorkloadToml(
      model + "pipeline_parallel = \"deepspeed\"\nmegatron_release = \"2021\"\n", "w.toml");
  ASSERT_FALSE(deepspeed.ok());
  EXPECT_NE(deepspeed.status().message().find("megatron_release"), std::string::npos)
      << deepspeed.status();
  auto cnn = ParseWorkloadToml(
      "[model]\nfamily = \"cnn\"\narch = \"resnet50\"\nmegatron_release = \"2021\"\n", "w.toml");
  ASSERT_FALSE(cnn.ok());
  EXPECT_NE(cnn.status().message().find("megatron_release"), std::string::npos);
}

TEST(PipelineEngineTest, MegatronBeforeCoreRunsNoShardedLayout) {
  auto w =
      ParseWorkloadToml("[model]\npreset = \"gpt-125m\"\nmegatron_release = \"2021\"\n", "w.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  Configuration c = Layout(1);
  EXPECT_EQ(PipelineEngineProblem(*w, c), "");
  c.sharding = Sharding::kZero1;
  EXPECT_NE(PipelineEngineProblem(*w, c).find("megatron_release"), std::string::npos);
  c.pp = 4;
  c.sharding = Sharding::kZero3;
  EXPECT_NE(PipelineEngineProblem(*w, c), "");
  w->settings.megatron_release = MegatronRelease::kCore;
  c.sharding = Sharding::kZero1;
  EXPECT_EQ(PipelineEngineProblem(*w, c), "");
}

// Session 21 (h25e): Megatron-LM asserts pp > 2 for its interleaved schedule
// (arguments.py since 182841f; megatron-core's initialize_model_parallel),
// lifted to pp > 1 only with --overlap-p2p-communication.
TEST(PipelineEngineTest, MegatronInterleavesOnMoreThanTwoStagesUnlessP2pOverlaps) {
  auto w = ParseWorkloadToml("[model]\npreset = \"gpt-125m\"\n", "w.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  w->settings.pipeline_parallel = PipelineParallel::kMegatron;
  Configuration c = Layout(2);
  c.schedule = PipelineSchedule::kInterleaved;
  c.virtual_stages = 2;
  EXPECT_NE(PipelineEngineProblem(*w, c).find("pp > 2"), std::string::npos);
  c.pp = 4;
  EXPECT_EQ(PipelineEngineProblem(*w, c), "");
  c.pp = 2;
  w->settings.pipeline_async_p2p = true;
  EXPECT_EQ(PipelineEngineProblem(*w, c), "");
  w->settings.megatron_release = MegatronRelease::k2021;
  EXPECT_NE(PipelineEngineProblem(*w, c), "");
  w->settings.pipeline_parallel = PipelineParallel::kTorch;  // torch's pipelining interleaves at 2
  EXPECT_EQ(PipelineEngineProblem(*w, c), "");
  c.virtual_stages = 1;
  c.schedule = PipelineSchedule::k1F1B;
  w->settings.pipeline_parallel = PipelineParallel::kMegatron;
  EXPECT_EQ(PipelineEngineProblem(*w, c), "");
}

// Session 20 (h25c): main_grad.add_(grad), an fp32 buffer plus a 16-bit
// gradient, measured at 0.82 of the copy bandwidth on H100 (bench/scale/
// accumulation_rate.py: eight step pairs of pipeline_microbatch.py, 0.76-0.84);
// the 16-bit in-place add and today's DeepSpeed cast-then-add (same-dtype
// kernels) stay at the copy bandwidth. Fails if the share is dropped, applied
// to the wrong pass, or missed on the step's first micro-batch.
TEST(PipelineEngineTest, MixedDtypeAccumulationRunsAtItsMeasuredRate) {
  EXPECT_GT(kMixedDtypeAccumulationShare, 0.76);
  EXPECT_LT(kMixedDtypeAccumulationShare, 0.84);
  const HardwareProfile hw = A100();
  const double bw = hw.memory_bandwidth_gbps * 1e9;
  const Configuration c = Layout(4);
  Workload ds16 = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  ds16.settings.deepspeed_release = DeepSpeedRelease::k2021;
  Workload ds32 = ds16;
  ds32.settings.fp32_grad_reduce = true;
  const Workload today = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  EXPECT_EQ(EngineTraits(ds16, c).accumulation_bandwidth_share, 1);
  EXPECT_EQ(EngineTraits(today, c).accumulation_bandwidth_share, 1);
  EXPECT_EQ(EngineTraits(ds32, c).accumulation_bandwidth_share, kMixedDtypeAccumulationShare);
  const double params = 1e9;
  EXPECT_NEAR(AccumulationSeconds(EngineTraits(ds32, c), params, bw),
              10 * params / bw / kMixedDtypeAccumulationShare, 1e-12);
  EXPECT_NEAR(AccumulationSeconds(EngineTraits(ds16, c), params, bw), 6 * params / bw, 1e-12);
  EXPECT_NEAR(AccumulationSeconds(EngineTraits(today, c), params, bw), 18 * params / bw, 1e-12);
  // Megatron-LM of 2021 with fp32 accumulation: the same pass, every
  // micro-batch; one stage, so the whole step pays m passes of all parameters.
  Workload core = testing::EngineGpt(PipelineParallel::kMegatron);
  core.settings.fp32_grad_reduce = true;
  Workload old = core;
  old.settings.megatron_release = MegatronRelease::k2021;
  const Configuration one = Layout(1);
  EXPECT_EQ(EngineTraits(old, one).accumulation_bandwidth_share, kMixedDtypeAccumulationShare);
  const double all = EstimateMemory(core, hw, one).weights / 2;
  const double extra =
      EstimateStepTime(old, hw, one).compute_s - EstimateStepTime(core, hw, one).compute_s;
  EXPECT_NEAR(extra, one.grad_accum * 10 * all / bw / kMixedDtypeAccumulationShare, 1e-9 * extra);
  EXPECT_GT(extra, 1.2 * one.grad_accum * 10 * all / bw);  // not the copy bandwidth's
}

}  // namespace
}  // namespace xdeep::tuner
