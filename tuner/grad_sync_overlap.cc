#include "tuner/grad_sync_overlap.h"

#include <algorithm>

namespace xdeep::tuner {

double ExposedReduction(const ReductionBesideBackward& r) {
  const double hiding = std::max(0.0, r.backward_s - r.backward_before_first_s);
  return std::max({0.0, r.last_s, r.whole_s - hiding});
}

UnitReduceOrder Fsdp2ReduceOrder(double params, double units, double unit_params,
                                 double root_params) {
  UnitReduceOrder o;
  o.last_params = params;
  if (params <= 0 || units <= 1 || unit_params <= 0) return o;
  // Blocks of one size: the last block's backward is its share of the whole.
  o.first_backward_share = std::min(1.0, unit_params / params);
  o.last_params = root_params > 0 ? root_params : unit_params;
  return o;
}

void DdpBuckets::Add(double bytes, int tensors) {
  if (bytes <= 0 || tensors <= 0) return;
  const double each = bytes / tensors;
  for (int i = 0; i < tensors; ++i) {
    open_ += each;
    if (open_ >= next_cap_) {
      closed_ += 1;
      open_ = 0;
      next_cap_ = cap_;
    }
  }
}

}  // namespace xdeep::tuner
