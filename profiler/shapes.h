// The workload's GEMM shapes: from the command line or a small JSON file that the
// daemon generates from the workload spec (schema xdeep.gemm_shapes/1).
//
// A linear layer with T tokens, `in` and `out` features runs three GEMMs per step
// (row-major, PyTorch's weight layout [out, in]):
//   fwd   Y[T,out]  = X[T,in]   . W^T      -> m=T,   n=out, k=in
//   dgrad dX[T,in]  = dY[T,out] . W        -> m=T,   n=in,  k=out
//   wgrad dW[out,in] = dY^T     . X        -> m=out, n=in,  k=T
// Their speeds differ (k=T is long and thin for wgrad), which is why the model gets
// all three rather than one forward figure times three.
//
// File format:
//   {"schema": "xdeep.gemm_shapes/1",
//    "dtypes": ["bf16"],                                   // optional
//    "layers": [{"name": "mlp.fc1", "tokens": 8192, "in": 4096, "out": 16384}],
//    "gemms":  [{"m": 8192, "n": 8192, "k": 8192, "label": "square"}],
//    "attention": [{"batch": 4, "heads": 32, "seq": 2048, "head_dim": 128, "causal": true}]}
#ifndef XDEEP_PROFILER_SHAPES_H_
#define XDEEP_PROFILER_SHAPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "profiler/dtype.h"

namespace xdeep::profiler {

inline constexpr char kShapesSchema[] = "xdeep.gemm_shapes/1";

struct GemmSpec {
  int64_t m = 0, n = 0, k = 0;
  std::string pass = "plain";  // fwd | dgrad | wgrad | plain
  std::string layer;
  // The one precision to run it at (a shapes file's gemm with "dtype"); unset:
  // every precision of the run.
  std::optional<DType> dtype;

  bool RunsAt(DType d) const { return !dtype || *dtype == d; }

  double Flops() const { return 2.0 * m * n * k; }
};

// Self-attention of one layer: batch x heads sequences of `seq` tokens, head_dim wide.
// FLOPs follow the FlashAttention convention: 4 b h s^2 d forward, halved when causal.
struct AttentionSpec {
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  bool causal = false;

  double Flops() const { return 4.0 * batch * heads * seq * seq * head_dim * (causal ? 0.5 : 1.0); }
};

struct ShapeSet {
  std::vector<GemmSpec> gemms;
  std::vector<AttentionSpec> attention;
  std::vector<DType> dtypes;  // empty: the caller's default
};

// fwd, dgrad and wgrad of one linear layer.
std::vector<GemmSpec> LayerGemms(const std::string& name, int64_t tokens, int64_t in, int64_t out);
// "8192x8192x8192" (m x n x k).
absl::StatusOr<GemmSpec> ParseGemmArg(absl::string_view text);
// "name:tokens:in:out".
absl::StatusOr<std::vector<GemmSpec>> ParseLayerArg(absl::string_view text);
// "batch:heads:seq:head_dim" or "...:causal".
absl::StatusOr<AttentionSpec> ParseAttentionArg(absl::string_view text);
absl::StatusOr<ShapeSet> ParseShapesJson(const std::string& text);
absl::StatusOr<ShapeSet> ReadShapesFile(const std::string& path);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_SHAPES_H_
