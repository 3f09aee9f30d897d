// GemmAnswerBook: cuBLASLt's heuristic answers accumulate across probes of the
// same GPU and library versions, a new key starts over, the cap keeps the
// most recently asked; the profile's key follows the report's versions.
#include "tuner/gemm_answer_book.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "nlohmann/json.hpp"
#include "tuner/gemm_kernel_table.h"
#include "tuner/hardware_profile.h"

namespace xdeep::tuner {
namespace {

GemmPoint Answer(int64_t m, int tile_n, GemmLayout layout = GemmLayout::kForward) {
  GemmPoint p;
  p.m = m, p.n = 768, p.k = 3072;
  p.layout = layout;
  p.kernel = GemmKernel{66, 128, tile_n, 1};
  return p;
}

// (m, layout, tile_n) of each answer.
std::set<std::tuple<int64_t, int, int>> Held(const GemmAnswerBook& book, const std::string& key) {
  std::set<std::tuple<int64_t, int, int>> out;
  for (const GemmPoint& p : book.Answers(key)) {
    out.insert({p.m, static_cast<int>(p.layout), p.kernel.tile_n});
  }
  return out;
}

TEST(GemmAnswerBookTest, AProbesAnswersJoinThoseOfEarlierProbesTheNewerWinning) {
  GemmAnswerBook book;
  EXPECT_EQ(book.Merge("h200 lt13.1", {Answer(1024, 256), Answer(2048, 256)}), 2u);
  // A later probe of another workload: one shape again (another tile), one new.
  EXPECT_EQ(book.Merge("h200 lt13.1", {Answer(2048, 128), Answer(4096, 256)}), 1u);
  EXPECT_EQ(Held(book, "h200 lt13.1"), (std::set<std::tuple<int64_t, int, int>>{
                                           {1024, 0, 256}, {2048, 0, 128}, {4096, 0, 256}}));
  // The layout is part of the shape: dgrad at the same m, n, k is another answer.
  book.Merge("h200 lt13.1", {Answer(1024, 64, GemmLayout::kDgrad)});
  EXPECT_EQ(book.Size("h200 lt13.1"), 4u);
  // Answers without a kernel are not answers.
  GemmPoint unknown = Answer(8192, 256);
  unknown.kernel = GemmKernel{};
  EXPECT_EQ(book.Merge("h200 lt13.1", {unknown}), 0u);
  EXPECT_EQ(book.Size("h200 lt13.1"), 4u);
}

TEST(GemmAnswerBookTest, AnotherLibraryOrGpuStartsOverAndTheNumberOfKeysIsBounded) {
  GemmAnswerBook book;
  book.Merge("h200 lt13.1", {Answer(1024, 256), Answer(2048, 256)});
  book.Merge("h200 lt13.2", {Answer(4096, 128)});
  // The new cuBLASLt's answers alone: none of the old version's apply.
  EXPECT_EQ(Held(book, "h200 lt13.2"), (std::set<std::tuple<int64_t, int, int>>{{4096, 0, 128}}));
  EXPECT_EQ(book.Size("h200 lt13.1"), 2u);
  for (size_t i = 0; i < GemmAnswerBook::kMaxKeys; ++i) {
    book.Merge("gpu" + std::to_string(i), {Answer(64, 64)});
  }
  EXPECT_EQ(book.Keys().size(), GemmAnswerBook::kMaxKeys);
  EXPECT_EQ(book.Size("h200 lt13.1"), 0u);  // the least recently merged went first
  EXPECT_TRUE(book.Answers("never probed").empty());
}

TEST(GemmAnswerBookTest, TheCapKeepsTheAnswersMostRecentlyAsked) {
  GemmAnswerBook book(3);
  book.Merge("k", {Answer(1, 64), Answer(2, 64), Answer(3, 64)});
  // The next probe asks 1 again and brings 4: 2 was asked longest ago.
  book.Merge("k", {Answer(1, 64), Answer(4, 64)});
  EXPECT_EQ(Held(book, "k"),
            (std::set<std::tuple<int64_t, int, int>>{{1, 0, 64}, {3, 0, 64}, {4, 0, 64}}));
  // One probe bringing more than the cap keeps its last ones.
  book.Merge("k", {Answer(10, 64), Answer(11, 64), Answer(12, 64), Answer(13, 64)});
  EXPECT_EQ(Held(book, "k"),
            (std::set<std::tuple<int64_t, int, int>>{{11, 0, 64}, {12, 0, 64}, {13, 0, 64}}));
}

TEST(GemmAnswerBookTest, SavedAndLoadedWholeABrokenFileSaysWhatToDo) {
  const std::string dir = ::testing::TempDir() + "/answers-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/gemm-heuristic-answers.json";
  std::filesystem::remove(path);
  auto empty = GemmAnswerBook::Load(path, 10);  // none yet: an empty book
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->Keys().empty());
  GemmAnswerBook book(10);
  book.Merge("a", {Answer(1, 64), Answer(2, 128)});
  book.Merge("b", {Answer(3, 256, GemmLayout::kWgrad)});
  ASSERT_TRUE(book.Save(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".part"));
  auto loaded = GemmAnswerBook::Load(path, 10);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Held(*loaded, "a"), Held(book, "a"));
  EXPECT_EQ(Held(*loaded, "b"), Held(book, "b"));
  // Stamps survive: after a reload the cap still drops the oldest.
  GemmAnswerBook small = *GemmAnswerBook::Load(path, 2);
  EXPECT_EQ(Held(small, "a").size(), 2u);
  small.Merge("a", {Answer(5, 64)});
  EXPECT_EQ(Held(small, "a"), (std::set<std::tuple<int64_t, int, int>>{{2, 0, 128}, {5, 0, 64}}));
  for (const char* broken :
       {"{", R"({"schema": "other"})", R"({"schema": "xdeep.gemm_answers/1", "books": [{"key": "a",
        "answers": [[1, 2, 3, 2, 0, 66, 0, 64, 1, 5]]}]})"}) {
    std::ofstream(path) << broken;
    auto bad = GemmAnswerBook::Load(path, 10);
    ASSERT_FALSE(bad.ok()) << broken;
    EXPECT_NE(bad.status().message().find("remove the file"), std::string::npos) << bad.status();
    EXPECT_NE(bad.status().message().find(path), std::string::npos) << bad.status();
  }
  std::filesystem::remove_all(dir);
}

std::string H200Report() {
  std::ifstream in(std::string(XDEEP_SOURCE_DIR) +
                   "/bench/validate/data/calibration/2026-11-27_h200x1_gemm_seed6607/gemm_fit.json");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(GemmAnswerBookTest, TheKeyIsTheReportsGpuAndCublasLtAndCudaVersions) {
  nlohmann::json report = nlohmann::json::parse(H200Report());
  auto timed = HeuristicAnswersFromProbeReport(report.dump(), "h200.json");
  ASSERT_TRUE(timed.ok()) << timed.status();
  EXPECT_EQ(timed->key, "gpu=NVIDIA H200 cc=9.0 cublaslt=13.1.0 driver=13.0 runtime=13.0");
  EXPECT_TRUE(timed->answers.empty());  // a timed set without heuristic answers
  // A heuristic-only report (answers, no timings) gives its answers and key.
  report["gemm"] = nlohmann::json::array();
  report["gemm_algos"] = {{{"m", 4096},
                           {"n", 768},
                           {"k", 3072},
                           {"dtype", "bf16"},
                           {"pass", "wgrad"},
                           {"kernel", {{"algo", 66}, {"tile_m", 128}, {"tile_n", 64}}}}};
  auto answers = HeuristicAnswersFromProbeReport(report.dump(), "h.json");
  ASSERT_TRUE(answers.ok()) << answers.status();
  EXPECT_EQ(answers->key, timed->key);
  ASSERT_EQ(answers->answers.size(), 1u);
  EXPECT_EQ(answers->answers[0].layout, GemmLayout::kWgrad);
  EXPECT_EQ(answers->answers[0].kernel.tile_n, 64);
  for (const char* part : {"cublaslt", "cuda_driver_api", "cuda_runtime"}) {
    nlohmann::json other = report;
    other["versions"][part] = "99.0";
    auto changed = HeuristicAnswersFromProbeReport(other.dump(), "h.json");
    ASSERT_TRUE(changed.ok());
    EXPECT_NE(changed->key, answers->key) << part;
  }
  nlohmann::json h100 = report;
  h100["gpu"]["name"] = "NVIDIA H100 80GB HBM3";
  EXPECT_NE(HeuristicAnswersFromProbeReport(h100.dump(), "h.json")->key, answers->key);
  report["gemm_algos"][0]["kernel"] = nlohmann::json::object();
  auto bad = HeuristicAnswersFromProbeReport(report.dump(), "h.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("$.gemm_algos[0]"), std::string::npos) << bad.status();
}

TEST(GemmAnswerBookTest, SettingAnswersRebuildsTheKernelTable) {
  auto profile = HardwareProfileFromProbeReport(H200Report(), "h200.json");
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_NE(profile->gemm_kernels, nullptr);
  const size_t timed = profile->gemm_kernels->size();
  GemmPoint untimed = Answer(123456, 96);
  EXPECT_EQ(profile->gemm_kernels->Find(DType::kBf16, GemmLayout::kForward, 123456, 768, 3072),
            nullptr);
  SetHeuristicAnswers(&*profile, {untimed});
  ASSERT_NE(profile->gemm_kernels, nullptr);
  EXPECT_EQ(profile->gemm_kernels->size(), timed + 1);
  const GemmKernel* k =
      profile->gemm_kernels->Find(DType::kBf16, GemmLayout::kForward, 123456, 768, 3072);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->tile_n, 96);
}

}  // namespace
}  // namespace xdeep::tuner
