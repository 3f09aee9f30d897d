// ModelFingerprint (see fingerprint.h).
#include "tuner/fingerprint.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace xdeep::tuner {
namespace {

// FNV-1a, fed piece by piece: the hash of the concatenated text, without
// holding it (6 MB for a 100k-layer table, most of the fingerprint's time).
struct Fnv1a {
  uint64_t h = 14695981039346656037ull;
  void Add(const std::string& text) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
};

}  // namespace

std::string ModelFingerprint(const Workload& w) { return *ModelFingerprint(w, nullptr); }

absl::StatusOr<std::string> ModelFingerprint(const Workload& w, const BuildPoll& poll) {
  // The per-layer table is derived from the shape for transformers and CNN
  // presets and given for generic workloads, so it covers every family; %.9g
  // keeps doubles stable across hosts.
  std::string text = absl::StrCat("family=", static_cast<int>(w.family), ";cnn=", w.cnn_arch,
                                  ";image=", w.image_size, ";classes=", w.num_classes);
  const TransformerShape& t = w.transformer;
  absl::StrAppend(&text, ";tf=", t.layers, ",", t.hidden, ",", t.heads, ",", t.kv_heads, ",", t.ffn,
                  ",", t.seq_len, ",", t.vocab, ",", int{t.gated_mlp}, ",", int{t.tied_embeddings},
                  ",", int{t.learned_positions});
  Fnv1a hash;
  hash.Add(text);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    if (poll && i % kLayersPerPoll == kLayersPerPoll - 1) {
      if (absl::Status s = poll(); !s.ok()) return s;
    }
    const LayerCost& l = w.layers[i];
    text.clear();
    absl::StrAppend(&text, ";layer=", l.name, ",", l.params);
    absl::StrAppendFormat(&text, ",%.9g,%.9g,%.9g", l.fwd_flops, l.saved_activation_bytes,
                          l.output_bytes);
    absl::StrAppend(&text, ",", l.unit);
    hash.Add(text);
  }
  text.clear();
  absl::StrAppend(&text, absl::StrFormat(";input=%.9g", w.input_bytes_per_sample));
  const TrainingSettings& s = w.settings;
  absl::StrAppend(
      &text,
      absl::StrFormat(";precision=%s;optimizer=%s;fsdp16=%d,%d;impl=%s;attention=%s;"
                      "format=%s;bias=%d;checkpointing=%s;compile=%d;tp=%s",
                      PrecisionName(w.precision), OptimizerName(w.optimizer), w.fsdp_16bit_params,
                      w.fsdp_16bit_reduce, OptimizerImplName(s.optimizer_impl),
                      AttentionKernelName(s.attention), MemoryFormatName(s.memory_format),
                      s.linear_bias, CheckpointingName(s.activation_checkpointing), s.compile,
                      TensorParallelName(s.tensor_parallel)));
  // Only where it is not the default, so earlier fingerprints stay as they were.
  if (s.pipeline_parallel != PipelineParallel::kMegatron) {
    absl::StrAppend(&text, ";pp=", std::string(PipelineParallelName(s.pipeline_parallel)));
  }
  if (s.weight_decay > 0) absl::StrAppend(&text, absl::StrFormat(";wd=%.9g", s.weight_decay));
  if (s.pipeline_ends_as_layers) absl::StrAppend(&text, ";pp_ends=1");
  if (s.fp32_grad_reduce) absl::StrAppend(&text, ";grad_reduce=fp32");
  if (s.pipeline_async_p2p) absl::StrAppend(&text, ";pp_async_p2p=1");
  if (s.megatron_release != MegatronRelease::kCore) {
    absl::StrAppend(&text, ";megatron=", std::string(MegatronReleaseName(s.megatron_release)));
  }
  if (s.deepspeed_release != DeepSpeedRelease::kCurrent) {
    absl::StrAppend(&text, ";deepspeed=", std::string(DeepSpeedReleaseName(s.deepspeed_release)));
  }
  hash.Add(text);
  return absl::StrFormat("%016x", hash.h);
}

}  // namespace xdeep::tuner
