// The kernels cuBLAS runs for the GEMM shapes a probe report names -- the timed
// points' own and the heuristic's answers for shapes it did not time (xdeep-probe
// compute --suite gemm-heuristic) -- with the GEMM model fitted to each kernel's
// tile grid (FitGemmKernels). GemmModel asks it first; a shape it does not know
// falls back to the model that takes the best tile (GemmSeconds).
#ifndef XDEEP_TUNER_GEMM_KERNEL_TABLE_H_
#define XDEEP_TUNER_GEMM_KERNEL_TABLE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tuner/gemm_model.h"

namespace xdeep::tuner {

// One GEMM shape at one precision and layout (DType, GemmLayout as ints),
// the key of the kernel table and of the heuristic's stored answers.
struct GemmShapeKey {
  int64_t m, n, k;
  int dtype, layout;
  bool operator==(const GemmShapeKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const GemmShapeKey& key) {
    return H::combine(std::move(h), key.m, key.n, key.k, key.dtype, key.layout);
  }
};

class GemmKernelTable {
 public:
  // Null where no precision has 8 timed points with their kernels.
  static std::shared_ptr<const GemmKernelTable> Build(const std::vector<GemmPoint>& timed,
                                                      const std::vector<GemmPoint>& heuristic,
                                                      const GemmFit& start);

  // The kernel of this shape, null if no point names it or its precision has
  // no kernel-aware fit. One hash lookup.
  const GemmKernel* Find(DType dtype, GemmLayout layout, double m, double n, double k) const;
  const GemmFit& fit(DType dtype) const { return fits_[static_cast<int>(dtype)]; }
  size_t size() const { return kernels_.size(); }

 private:
  using Key = GemmShapeKey;
  absl::flat_hash_map<Key, GemmKernel> kernels_;
  std::array<GemmFit, 4> fits_;  // by DType; invalid: none
};

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_GEMM_KERNEL_TABLE_H_
