// From a TuneRequest to a Decision: bounds, recording, and the errors users see.
#include "daemon/decision_maker.h"

#include <gtest/gtest.h>

namespace xdeep::daemon {
namespace {

namespace v1 = xdeep::v1;

PartitionShape Shape(int nodes, int gpus) { return {"debug", nodes, gpus, 64}; }

TEST(BuildLimitsTest, TightestBoundWins) {
  PolicyConfig policy;
  policy.max_nodes = 16;
  v1::TuneRequest req;
  auto l = BuildLimits(policy, Shape(8, 4), req);
  EXPECT_EQ(l.max_nodes, 8);
  EXPECT_EQ(l.max_gpus_per_node, 4);
  EXPECT_EQ(l.max_total_gpus, 0);

  req.mutable_bounds()->set_nodes(2);
  req.mutable_bounds()->set_tasks(3);
  l = BuildLimits(policy, Shape(8, 4), req);
  EXPECT_EQ(l.max_nodes, 2);
  EXPECT_EQ(l.max_total_gpus, 3);

  v1::TuneRequest in_alloc;
  in_alloc.mutable_allocation()->set_job_id(5);
  in_alloc.mutable_allocation()->set_nodes(1);
  in_alloc.mutable_allocation()->set_gpus_per_node(2);
  l = BuildLimits(policy, Shape(8, 4), in_alloc);
  EXPECT_EQ(l.max_nodes, 1);
  EXPECT_EQ(l.max_gpus_per_node, 2);

  // Slurm refuses more nodes than tasks.
  v1::TuneRequest one_task;
  one_task.mutable_bounds()->set_tasks(1);
  EXPECT_EQ(BuildLimits(policy, Shape(8, 4), one_task).max_nodes, 1);
}

class DecisionMakerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(":memory:");
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
    auto hw = tuner::BuiltinHardwareProfile("h100-sxm");
    ASSERT_TRUE(hw.ok());
    maker_ = std::make_unique<DecisionMaker>(
        PolicyConfig{}, *hw, [this](const std::string&) { return shape_; }, store_.get());
  }
  absl::StatusOr<v1::Decision> Decide(const v1::TuneRequest& req) {
    return maker_->Decide(req, 1234,
                          [this](const v1::Progress& p) { stages_.push_back(p.stage()); });
  }

  absl::StatusOr<PartitionShape> shape_ = Shape(4, 4);
  std::unique_ptr<Store> store_;
  std::unique_ptr<DecisionMaker> maker_;
  std::vector<std::string> stages_;
};

TEST_F(DecisionMakerTest, DecisionRespectsBoundsAndIsRecorded) {
  v1::TuneRequest req;
  req.set_mode(v1::TUNE_MODE_AUTO);
  req.set_objective(v1::OBJECTIVE_TIME);
  req.mutable_workload()->set_preset("gpt-125m");
  req.mutable_bounds()->set_nodes(2);
  auto d = Decide(req);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_LE(d->config().nodes(), 2);
  EXPECT_LE(d->config().gpus_per_node(), 4);
  EXPECT_EQ(d->config().tasks(), d->config().nodes() * d->config().gpus_per_node());
  EXPECT_GT(d->prediction().step_time_s(), 0);
  EXPECT_TRUE(d->rewrite());
  EXPECT_EQ(d->decision_id().size(), 32u);
  EXPECT_EQ(stages_, (std::vector<std::string>{"workload", "profile", "search"}));
  auto rec = store_->GetDecision(d->decision_id());
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->uid, 1234u);
  EXPECT_EQ(rec->nodes, d->config().nodes());

  // Least time with more GPUs available must not be slower.
  req.mutable_bounds()->set_nodes(4);
  auto wide = Decide(req);
  ASSERT_TRUE(wide.ok());
  EXPECT_LE(wide->prediction().step_time_s() * wide->config().grad_accumulation(),
            d->prediction().step_time_s() * d->config().grad_accumulation() * 1.0001);
}

TEST_F(DecisionMakerTest, BrokenWorkloadNamesTheFile) {
  v1::TuneRequest req;
  req.mutable_workload()->set_toml("[model]\nlayers = \"many\"\n");
  req.mutable_workload()->set_source_name("my.toml");
  auto d = Decide(req);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(d.status().message()).find("my.toml:"), std::string::npos)
      << d.status().message();
}

TEST_F(DecisionMakerTest, NoWorkloadAtAll) {
  auto d = Decide(v1::TuneRequest());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(std::string(d.status().message()).find("--xdeep-workload"), std::string::npos);
}

TEST_F(DecisionMakerTest, PartitionWithoutGpus) {
  shape_ = Shape(4, 0);
  v1::TuneRequest req;
  req.mutable_workload()->set_preset("gpt-125m");
  auto d = Decide(req);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(DecisionMakerTest, SlurmUnreachable) {
  shape_ = absl::UnavailableError("sinfo failed");
  v1::TuneRequest req;
  req.mutable_workload()->set_preset("gpt-125m");
  EXPECT_EQ(Decide(req).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace xdeep::daemon
