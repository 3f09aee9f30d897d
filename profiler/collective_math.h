// Collective operations and the nccl-tests definitions of algbw and busbw.
//
// algbw = bytes / time, where `bytes` is the size nccl-tests prints for the operation
// (the full buffer: the all-gather output, the reduce-scatter input, one rank's
// all-to-all buffer). busbw rescales algbw by how much data each link must carry for
// the best algorithm, so figures compare across rank counts and with the hardware's
// link bandwidth: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n;
// broadcast and send/recv 1.
#ifndef XDEEP_PROFILER_COLLECTIVE_MATH_H_
#define XDEEP_PROFILER_COLLECTIVE_MATH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace xdeep::profiler {

enum class CollectiveOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kSendRecv,
  kAllToAll
};

absl::string_view CollectiveOpName(CollectiveOp op);
absl::StatusOr<CollectiveOp> ParseCollectiveOp(absl::string_view name);
// "all" or a comma-separated list.
absl::StatusOr<std::vector<CollectiveOp>> ParseCollectiveOpList(absl::string_view names);
const std::vector<CollectiveOp>& AllCollectiveOps();

double BusBwFactor(CollectiveOp op, int ranks);
// GB/s (1e9 B/s).
double AlgBwGBps(int64_t bytes, double seconds);
double BusBwGBps(CollectiveOp op, int ranks, int64_t bytes, double seconds);

// Element counts for one call at `bytes` (nccl-tests' convention, see above). `bytes`
// is first rounded down to a multiple of ranks * elem_bytes so every rank gets an
// equal share; `bytes` in the result is the rounded value.
struct CollectiveCounts {
  int64_t bytes = 0;
  int64_t send_elems = 0;  // per rank
  int64_t recv_elems = 0;  // per rank
  int64_t call_count = 0;  // the count argument of the NCCL call (per peer for all-to-all)
};
CollectiveCounts CountsFor(CollectiveOp op, int64_t bytes, int elem_bytes, int ranks);

// Sizes min, min*factor, ... up to max (inclusive if reached).
std::vector<int64_t> SizeSweep(int64_t min_bytes, int64_t max_bytes, int factor);

// Parses "1K", "64MiB", "1G", "4096" (binary multiples).
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_COLLECTIVE_MATH_H_
