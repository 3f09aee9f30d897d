// How much of a data-parallel gradient reduction that runs beside a backward
// is left waiting after that backward, by the order the software issues it.
//
// A reduction issued in pieces as the backward produces them runs beside the
// rest of the backward; what outlasts it waits, and the last piece, issued
// when the backward ends, always waits. A piece can start only once its
// gradients exist, so the backward before the first piece is ready hides
// nothing:
//   exposed = max(last piece, whole - (backward - backward before the first piece))
//
// Gradient buckets (DDP's, 25 MB) fill within a few layers of the backward:
// the wait before the first is taken as none. PyTorch's FSDP2 (fully_shard)
// reduce-scatters one unit at a time (torch/distributed/fsdp/_fully_shard/
// _fsdp_param_group.py, FSDPParamGroup.post_backward and foreach_reduce in
// _fsdp_collectives.py): after a unit's backward its gradients are copied
// into an fp32 buffer and reduce-scattered on the one reduce-scatter stream;
// the compute stream waits for the previous unit's reduce-scatter before the
// next unit's copy-in, the root's reduce-scatter comes last, and the end of
// backward waits for it. So the first unit's backward (the last block's)
// overlaps no reduction, and the last piece is the root's unit, or the first
// block's where the root holds no parameters. Measured (bench/scale/README.md,
// "Measured", run 3: 2x H200, NCCL on sockets, FSDP2 on 4 Llama-shaped
// blocks, a 0.59 s reduce-scatter beside a 0.26 s backward): 0.445 s a
// micro-batch waited; this order says 0.392, the bucket rule 0.327. The rest
// is the reduce-scatter running ~18 % slower beside compute, a figure of the
// machine that no probe measures yet, so it is not charged.
//
// DDP's buckets are counted too: each is one NCCL call, whose host work
// (ProcessGroupNCCL's work object, events, stream waits, the launch) runs on
// the backward's autograd thread between the gradients' hooks.
#ifndef XDEEP_TUNER_GRAD_SYNC_OVERLAP_H_
#define XDEEP_TUNER_GRAD_SYNC_OVERLAP_H_

namespace xdeep::tuner {

struct ReductionBesideBackward {
  double whole_s = 0;                  // the whole reduction, alone
  double last_s = 0;                   // the last piece issued, alone
  double backward_s = 0;               // the backward it runs beside
  double backward_before_first_s = 0;  // backward before the first piece is ready
};

// Seconds of the reduction left after the backward.
double ExposedReduction(const ReductionBesideBackward& r);

// FSDP2's pieces for a rank whose gradients are `params`, in `units` units of
// at most `unit_params` (the blocks) and a root of `root_params`: the share of
// the backward before the first reduce-scatter, and the parameters of the last.
// One unit (or none named): the whole backward, the whole gradient.
struct UnitReduceOrder {
  double first_backward_share = 1;
  double last_params = 0;
};
UnitReduceOrder Fsdp2ReduceOrder(double params, double units, double unit_params,
                                 double root_params);

// DDP's gradient buckets (torch.nn.parallel.DistributedDataParallel's
// Reducer, compute_bucket_assignment_by_size): gradients in reverse
// registration order -- the order backward produces them -- fill a bucket
// until it holds at least its cap, 1 MiB for the first
// (dist._DEFAULT_FIRST_BUCKET_BYTES) and bucket_cap_mb (25 MiB) after; a
// tensor larger than the cap closes the bucket it lands in. Fed a layer at a
// time, last layer first, its tensors taken as equal parts of it: 5 buckets
// for llama2.c-42M, 9 for ConvNeXt-S, 43 for ViT-L/16 where DDP's logging data
// read 5, 9 and 38 on 2x H200 (bench/validate/data/checks/
// 2026-11-28_h200x2_ddp_step_split; ViT-L's 16 MB MLP weights overfill its
// buckets, which equal parts do not). A bucket_cap_mb given explicitly is
// the first bucket's cap too (DDP then keeps no 1 MiB first bucket).
class DdpBuckets {
 public:
  static constexpr double kFirstCapBytes = 1024.0 * 1024;
  static constexpr double kCapBytes = 25.0 * 1024 * 1024;
  explicit DdpBuckets(double cap_bytes = kCapBytes, double first_cap_bytes = kFirstCapBytes)
      : cap_(cap_bytes), next_cap_(first_cap_bytes) {}
  // A layer's gradients: `bytes` in `tensors` tensors.
  void Add(double bytes, int tensors);
  // Buckets so far, the open one counted.
  double count() const { return closed_ + (open_ > 0 ? 1 : 0); }

 private:
  double cap_, next_cap_;
  double closed_ = 0, open_ = 0;
};

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_GRAD_SYNC_OVERLAP_H_
