// GemmKernelTable (gemm_kernel_table.h).
#include "tuner/gemm_kernel_table.h"

#include <cmath>

namespace xdeep::tuner {

std::shared_ptr<const GemmKernelTable> GemmKernelTable::Build(
    const std::vector<GemmPoint>& timed, const std::vector<GemmPoint>& heuristic,
    const GemmFit& start) {
  auto table = std::make_shared<GemmKernelTable>();
  bool any = false;
  for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp32}) {
    GemmFit& f = table->fits_[static_cast<int>(d)];
    f = FitGemmKernels(timed, d, start);
    any = any || f.valid;
  }
  if (!any) return nullptr;
  // Timed points first: where the heuristic was asked about a timed shape too,
  // the kernel that was timed stays.
  for (const auto* list : {&timed, &heuristic}) {
    for (const GemmPoint& p : *list) {
      if (!p.kernel.known() || !table->fit(p.dtype).valid) continue;
      table->kernels_.try_emplace(
          Key{p.m, p.n, p.k, static_cast<int>(p.dtype), static_cast<int>(p.layout)}, p.kernel);
    }
  }
  return table;
}

const GemmKernel* GemmKernelTable::Find(DType dtype, GemmLayout layout, double m, double n,
                                        double k) const {
  const Key key{std::llround(m), std::llround(n), std::llround(k), static_cast<int>(dtype),
                static_cast<int>(layout)};
  auto it = kernels_.find(key);
  return it == kernels_.end() ? nullptr : &it->second;
}

}  // namespace xdeep::tuner
