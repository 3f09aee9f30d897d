// The tuner's figure for what bench/scale/block_compute.py measures: one
// tensor-parallel rank's slice of a published layout's transformer block on
// one GPU -- each GEMM (forward, dgrad, wgrad) from the profile's GEMM model,
// the attention core, and the whole block forward + backward from the
// strategy model with communication taken out (the script times none), both
// eager (as the script runs it) and with fused elementwise kernels (as
// published_runs_bench models Megatron).
//
//   block_compute_model [--profile h100-sxm | --probe-report profile.json]
//                       [--json block_compute.json]
//
// With --json (the script's output) each figure is printed beside the
// measured one, with the model's error.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tuner/hardware_profile.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

using namespace xdeep::tuner;

namespace {

// The script's SHAPES (bench/scale/block_compute.py), the same names.
struct Shape {
  const char* name;
  int hidden, heads, kv_heads, ffn, seq, micro_batch, tp;
  bool gated;  // SwiGLU + RMSNorm, no biases; else GELU + LayerNorm, biases
  bool flash;  // FlashAttention; else scores materialised (Megatron before it)
  int cp;      // context parallel degree (keys of the whole sequence gathered)
};

const Shape kShapes[] = {
    {"llama3-405b-tp8", 16384, 128, 8, 53248, 8192, 1, 8, true, true, 1},
    {"llama3-405b-tp8-cp16", 16384, 128, 8, 53248, 131072, 1, 8, true, true, 16},
    {"gpt-175b-tp8", 12288, 96, 96, 49152, 2048, 1, 8, false, false, 1},
    {"gpt-530b-tp8", 20480, 128, 128, 81920, 2048, 1, 8, false, false, 1},
    {"gpt-1t-tp8", 25600, 160, 160, 102400, 2048, 1, 8, false, false, 1},
    {"gpt-22b-tp8", 6144, 64, 64, 24576, 2048, 1, 8, false, false, 1},
    {"bloom-176b-tp4", 14336, 112, 112, 57344, 2048, 2, 4, false, false, 1},
};

Workload BlockWorkload(const Shape& s, bool fused) {
  Workload w;
  w.name = s.name;
  w.family = ModelFamily::kTransformer;
  TransformerShape& t = w.transformer;
  t.layers = 1;
  t.hidden = s.hidden;
  t.heads = s.heads;
  t.kv_heads = s.kv_heads;
  t.ffn = s.ffn;
  t.seq_len = s.seq;
  t.vocab = 128;  // the script has no embedding or head: keep them negligible
  t.gated_mlp = s.gated;
  t.learned_positions = false;
  t.tied_embeddings = false;
  w.precision = Precision::kBf16Mixed;
  w.settings.compile = fused;
  w.settings.tensor_parallel = TensorParallel::kMegatron;
  w.settings.attention = s.flash ? AttentionKernel::kFlash : AttentionKernel::kMath;
  w.settings.linear_bias = !s.gated;
  w.settings.activation = s.gated ? Activation::kSilu : Activation::kGelu;
  BuildTransformerLayers(w);
  return w;
}

// The profile with every collective free: the script times no communication.
HardwareProfile WithoutCommunication(HardwareProfile hw, int ranks_per_node) {
  hw.gpus_per_node = ranks_per_node;
  for (CollectiveFit& f : hw.collectives) {
    f.latency_s = 0;
    f.busbw_gbps = 1e9;
  }
  return hw;
}

// Forward + backward of one micro-batch of the one-block workload, ms.
double BlockMs(const Shape& s, const HardwareProfile& hw, bool fused) {
  const Workload w = BlockWorkload(s, fused);
  const HardwareProfile free = WithoutCommunication(hw, s.tp * s.cp);
  StrategyModel model(w, free);
  Configuration c;
  c.gpus_per_node = s.tp * s.cp;
  c.nodes = 1;
  c.tp = s.tp;
  c.cp = s.cp;
  c.sequence_parallel = true;
  c.micro_batch = s.micro_batch;
  c.global_batch = s.micro_batch;
  const std::string problem = StructuralProblem(w, c);
  if (!problem.empty()) {
    std::fprintf(stderr, "block_compute_model: %s: %s\n", s.name, problem.c_str());
    return 0;
  }
  return 1e3 * model.Time(c).per_micro_batch_s;
}

std::string Versus(double model, double measured) {
  if (measured <= 0) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "  measured %8.3f (model %+6.1f %%)", measured,
                100 * (model / measured - 1));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string profile = "h100-sxm", json_path, report_path;
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--profile") {
      profile = argv[++i];
    } else if (a == "--json") {
      json_path = argv[++i];
    } else if (a == "--probe-report") {
      report_path = argv[++i];
    }
  }
  absl::StatusOr<HardwareProfile> hw = BuiltinHardwareProfile(profile);
  if (!report_path.empty()) {
    std::ifstream in(report_path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    hw = HardwareProfileFromProbeReport(text, report_path);
  }
  if (!hw.ok()) {
    std::fprintf(stderr, "block_compute_model: %s\n", std::string(hw.status().message()).c_str());
    return 2;
  }
  nlohmann::json measured;
  if (!json_path.empty()) {
    std::ifstream in(json_path);
    measured = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!in || measured.is_discarded() || !measured.contains("shapes")) {
      std::fprintf(stderr,
                   "block_compute_model: %s is not block_compute.py's output (run "
                   "`OUT=DIR python3 bench/scale/block_compute.py` on a GPU)\n",
                   json_path.c_str());
      return 2;
    }
    std::printf("measured: %s\n", measured.value("device", std::string("?")).c_str());
  }
  const GemmModel gemm(*hw, DType::kBf16);
  double all_model = 0, all_measured = 0;  // every measured GEMM, ms
  std::printf("model: %s (%s)\n", hw->Label().c_str(), gemm.fit().note.c_str());
  for (const Shape& s : kShapes) {
    const nlohmann::json* m = nullptr;
    if (measured.contains("shapes") && measured["shapes"].contains(s.name)) {
      m = &measured["shapes"][s.name];
    }
    std::printf("%s (tp %d, cp %d, micro-batch %d)\n", s.name, s.tp, s.cp, s.micro_batch);
    const int d = s.hidden / s.heads, heads = s.heads / s.tp;
    const int kv = std::max(1, s.kv_heads / s.tp), ffn = s.ffn / s.tp;
    const double tokens = double(s.seq) / s.cp * s.micro_batch;
    struct G {
      const char* name;
      double n, k;
    };
    const G gemms[] = {{"qkv", double(heads + 2 * kv) * d, double(s.hidden)},
                       {"out", double(s.hidden), double(heads) * d},
                       {"fc1", double(s.gated ? 2 : 1) * ffn, double(s.hidden)},
                       {"fc2", double(s.hidden), double(ffn)}};
    double gemm_sum = 0, gemm_measured = 0;
    if (s.cp == 1) {
      for (const G& g : gemms) {
        // The strategy model's orientation of each layout (strategy_model.cc).
        const double t[3] = {gemm.Seconds(tokens, g.n, g.k, GemmLayout::kForward),
                             gemm.Seconds(tokens, g.k, g.n, GemmLayout::kDgrad),
                             gemm.Seconds(g.n, g.k, tokens, GemmLayout::kWgrad)};
        const char* layouts[3] = {"forward", "dgrad", "wgrad"};
        for (int l = 0; l < 3; ++l) {
          double meas = 0;
          if (m != nullptr) {
            for (const auto& row : (*m)["gemms"]) {
              if (row["gemm"] == g.name && row["layout"] == layouts[l]) meas = row["ms"];
            }
          }
          const double tf = 2 * tokens * g.n * g.k / t[l] / 1e12;
          std::printf("  %-4s %-7s %6.0f x %6.0f x %6.0f: %8.3f ms %6.1f TFLOP/s%s\n", g.name,
                      layouts[l], tokens, g.n, g.k, 1e3 * t[l], tf,
                      Versus(1e3 * t[l], meas).c_str());
          gemm_sum += 1e3 * t[l];
          gemm_measured += meas;
        }
      }
      std::printf("  GEMMs together: %8.3f ms%s\n", gemm_sum,
                  Versus(gemm_sum, gemm_measured).c_str());
      all_model += gemm_sum;
      all_measured += gemm_measured;
    }
    // The attention core as the strategy model charges it (strategy_model.cc
    // Times): FlashAttention at the profile's attention efficiency times the
    // rate of the block's first GEMM, backward 2.5x forward; materialised
    // scores as two batched GEMMs over the rank's heads (their softmax, mask
    // and dropout are in the model's elementwise traffic, not here).
    double att_fwd = 0, att_bwd = 0;
    const double rows = double(heads) * tokens;
    const double kv_len = double(s.seq);  // every key: cp ranks gather the whole sequence
    if (s.flash) {
      const double n0 = gemms[0].n, k0 = gemms[0].k;
      const double ref = 2 * tokens * n0 * k0 / gemm.Seconds(tokens, n0, k0);
      const double flops = 4.0 * rows * kv_len * d * 0.5;
      att_fwd = flops / (ref * hw->attention_efficiency);
      att_bwd = 2.5 * att_fwd;
    } else {
      for (auto [n, k] : {std::pair{kv_len, double(d)}, std::pair{double(d), kv_len}}) {
        att_fwd += gemm.Seconds(rows, n, k, GemmLayout::kForward);
        att_bwd += gemm.Seconds(rows, k, n, GemmLayout::kDgrad) +
                   gemm.Seconds(n, k, rows, GemmLayout::kWgrad);
      }
    }
    double meas_fwd = 0, meas_fb = 0;
    if (m != nullptr) {
      meas_fwd = (*m)["attention"].value("fwd_ms", 0.0);
      meas_fb = (*m)["attention"].value("fwd_bwd_ms", 0.0);
    }
    std::printf("  attention %s forward: %8.3f ms%s\n", s.flash ? "(flash)" : "GEMMs (math)",
                1e3 * att_fwd, Versus(1e3 * att_fwd, meas_fwd).c_str());
    std::printf("  attention %s forward + backward: %8.3f ms%s\n",
                s.flash ? "(flash)" : "GEMMs (math)", 1e3 * (att_fwd + att_bwd),
                Versus(1e3 * (att_fwd + att_bwd), meas_fb).c_str());
    for (bool fused : {false, true}) {
      const double ms = BlockMs(s, *hw, fused);
      double meas = 0;
      if (m != nullptr && !fused) meas = (*m)["block"].value("sustained_fwd_bwd_ms", 0.0);
      std::printf("  block forward + backward, %s: %8.3f ms%s\n",
                  fused ? "fused elementwise (published_runs_bench)" : "eager (as the script)", ms,
                  Versus(ms, meas).c_str());
    }
  }
  if (all_measured > 0) {
    // Compute-bound GEMMs take time inversely proportional to the peak rate:
    // the peak at which the model's GEMM time over every measured one matches.
    std::printf("every GEMM: model %.3f ms, measured %.3f ms (model %+.1f %%); the peak that matches "
                "them: %.0f TFLOP/s (profile's %.0f)\n",
                all_model, all_measured, 100 * (all_model / all_measured - 1),
                gemm.fit().peak_flops / 1e12 * all_model / all_measured,
                gemm.fit().peak_flops / 1e12);
  }
  return 0;
}
