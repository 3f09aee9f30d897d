// BuildPoll: a layer table of many layers is built, and fingerprinted, with
// polls between its layers, and a poll's status stops the parse or the
// fingerprint (the daemon's heavy lane paces itself there and stops at its
// client's deadline).
#include <gtest/gtest.h>

#include <string>

#include "tuner/fingerprint.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

std::string Generic(int layers) {
  return "name = \"g\"\n[model]\nfamily = \"generic\"\nparameters = 1e9\n"
         "forward_flops_per_sample = 1e12\nactivation_bytes_per_sample = 1e6\nnum_layers = " +
         std::to_string(layers) + "\n";
}

std::string Transformer(int layers) {
  return "name = \"t\"\n[model]\nfamily = \"transformer\"\nlayers = " + std::to_string(layers) +
         "\nhidden = 1024\nheads = 16\nseq_len = 2048\nvocab = 50257\n";
}

TEST(WorkloadPollTest, GenericLayersArePolledEveryBlock) {
  int polls = 0;
  auto w = ParseWorkloadToml(Generic(100000), "w.toml", [&] {
    ++polls;
    return absl::OkStatus();
  });
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->layers.size(), 100000u);
  EXPECT_EQ(polls, 100000 / kLayersPerPoll);
}

TEST(WorkloadPollTest, APollsStatusStopsTheParse) {
  for (const std::string& text : {Generic(100000), Transformer(20000)}) {
    int polls = 0;
    auto w = ParseWorkloadToml(text, "w.toml", [&] {
      return ++polls < 3 ? absl::OkStatus() : absl::DeadlineExceededError("the client's deadline");
    });
    EXPECT_EQ(polls, 3) << text;
    ASSERT_FALSE(w.ok()) << text;
    EXPECT_EQ(w.status().code(), absl::StatusCode::kDeadlineExceeded) << text;
  }
}

TEST(WorkloadPollTest, ASmallModelIsNeverPolledAndParsesAsWithout) {
  int polls = 0;
  auto polled = ParseWorkloadToml(Transformer(24), "w.toml", [&] {
    ++polls;
    return absl::CancelledError("never");
  });
  auto plain = ParseWorkloadToml(Transformer(24), "w.toml");
  ASSERT_TRUE(polled.ok()) << polled.status();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(polls, 0);
  EXPECT_EQ(polled->layers.size(), plain->layers.size());
  EXPECT_EQ(polled->Parameters(), plain->Parameters());
}

TEST(WorkloadPollTest, TheFingerprintIsPolledEveryBlockAndIsTheUnpolledOne) {
  auto w = ParseWorkloadToml(Generic(100000), "w.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  int polls = 0;
  auto polled = ModelFingerprint(*w, [&] {
    ++polls;
    return absl::OkStatus();
  });
  ASSERT_TRUE(polled.ok()) << polled.status();
  EXPECT_EQ(polls, 100000 / kLayersPerPoll);
  EXPECT_EQ(*polled, ModelFingerprint(*w));
}

TEST(WorkloadPollTest, APollsStatusStopsTheFingerprint) {
  auto w = ParseWorkloadToml(Generic(100000), "w.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  int polls = 0;
  auto polled = ModelFingerprint(*w, [&] {
    return ++polls < 3 ? absl::OkStatus() : absl::CancelledError("the client went away");
  });
  EXPECT_EQ(polls, 3);
  ASSERT_FALSE(polled.ok());
  EXPECT_EQ(polled.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace xdeep::tuner
