// cuBLASLt's heuristic answers (the kernel it picks for a GEMM shape), kept
// across probes. An answer depends only on the GPU model and the cuBLASLt /
// CUDA versions that gave it (HeuristicAnswers::key), so a probe's
// answers join those already held for its key -- a newer answer replacing an
// older one for the same shape -- and a key's answers are never used under
// another key: a new cuBLASLt, driver or GPU model is asked anew.
//
// Bounded: at most `max_per_key` answers per key, those most recently
// brought by a probe kept (every answer a merge brings is stamped anew, so
// the presets' and a workload's shapes that each probe asks stay; a shape
// no probe asked for a long while goes first); at most kMaxKeys keys, the
// least recently merged dropped.
#ifndef XDEEP_TUNER_GEMM_ANSWER_BOOK_H_
#define XDEEP_TUNER_GEMM_ANSWER_BOOK_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "tuner/gemm_kernel_table.h"
#include "tuner/gemm_model.h"
#include "tuner/hardware_profile.h"

namespace xdeep::tuner {

// A probe report's heuristic answers (gemm_algos) and what they depend on:
// the report's GPU model and cuBLASLt / CUDA driver / runtime versions (its
// "gpu" and "versions"), as one key. A full probe's report and a
// heuristic-only job's (`xdeep-probe compute --suite gemm-heuristic`, nothing
// timed) alike. Errors name the source and the JSON path at fault.
struct HeuristicAnswers {
  std::string key;
  std::vector<GemmPoint> answers;
};
absl::StatusOr<HeuristicAnswers> HeuristicAnswersFromProbeReport(std::string_view json_text,
                                                                 std::string_view source_name);

// Replaces the profile's heuristic answers and rebuilds its kernel table (the
// timed points' fits unchanged).
void SetHeuristicAnswers(HardwareProfile* hw, std::vector<GemmPoint> answers);

class GemmAnswerBook {
 public:
  // 200,000 answers: every preset's and ~60 workloads' GEMMs on an 8-GPU node
  // (~3,000 a workload, ProbeShapesTest); gemm_heuristic_bench times the load.
  static constexpr size_t kDefaultMaxPerKey = 200000;
  static constexpr size_t kMaxKeys = 8;

  explicit GemmAnswerBook(size_t max_per_key = kDefaultMaxPerKey);

  // Adds `answers` (their kernels known) under `key`; returns how many shapes
  // were new to it.
  size_t Merge(const std::string& key, const std::vector<GemmPoint>& answers);
  // The key's answers, oldest first (tflops 0); empty for an unknown key.
  std::vector<GemmPoint> Answers(const std::string& key) const;
  size_t Size(const std::string& key) const;
  std::vector<std::string> Keys() const;

  // Schema xdeep.gemm_answers/1: one compact row per answer.
  std::string ToJson() const;
  static absl::StatusOr<GemmAnswerBook> FromJson(std::string_view text, size_t max_per_key,
                                                 std::string_view source_name);
  // A missing file is an empty book; the file is replaced whole (rename).
  static absl::StatusOr<GemmAnswerBook> Load(const std::string& path, size_t max_per_key);
  absl::Status Save(const std::string& path) const;

 private:
  using Shape = GemmShapeKey;
  struct Entry {
    GemmKernel kernel;
    uint64_t stamp = 0;
  };
  struct Book {
    absl::flat_hash_map<Shape, Entry> entries;
    uint64_t merged = 0;  // stamp of the last merge
  };
  void Trim(Book& book) const;
  void Put(Book& book, const Shape& shape, const GemmKernel& kernel, uint64_t stamp);

  size_t max_per_key_;
  uint64_t clock_ = 0;
  std::map<std::string, Book> books_;
};

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_GEMM_ANSWER_BOOK_H_
