// Collective operations and the nccl-tests bandwidth definitions.
#include "profiler/collective_math.h"

#include <cctype>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace xdeep::profiler {

const std::vector<CollectiveOp>& AllCollectiveOps() {
  static const std::vector<CollectiveOp> kAll = {
      CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
      CollectiveOp::kBroadcast, CollectiveOp::kSendRecv,  CollectiveOp::kAllToAll};
  return kAll;
}

absl::string_view CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kSendRecv:
      return "send_recv";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
  }
  return "unknown";
}

absl::StatusOr<CollectiveOp> ParseCollectiveOp(absl::string_view name) {
  for (CollectiveOp op : AllCollectiveOps()) {
    if (absl::AsciiStrToLower(name) == CollectiveOpName(op)) return op;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown collective '", name, "'"));
}

absl::StatusOr<std::vector<CollectiveOp>> ParseCollectiveOpList(absl::string_view names) {
  if (absl::StripAsciiWhitespace(names) == "all") return AllCollectiveOps();
  std::vector<CollectiveOp> out;
  for (absl::string_view part : absl::StrSplit(names, ',', absl::SkipWhitespace())) {
    absl::StatusOr<CollectiveOp> op = ParseCollectiveOp(absl::StripAsciiWhitespace(part));
    if (!op.ok()) return op.status();
    out.push_back(*op);
  }
  if (out.empty()) return absl::InvalidArgumentError("empty collective list");
  return out;
}

double BusBwFactor(CollectiveOp op, int ranks) {
  if (ranks <= 0) return 0;
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  return 0;
}

double AlgBwGBps(int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

double BusBwGBps(CollectiveOp op, int ranks, int64_t bytes, double seconds) {
  return AlgBwGBps(bytes, seconds) * BusBwFactor(op, ranks);
}

CollectiveCounts CountsFor(CollectiveOp op, int64_t bytes, int elem_bytes, int ranks) {
  CollectiveCounts c;
  const int64_t unit = static_cast<int64_t>(elem_bytes) * std::max(ranks, 1);
  c.bytes = bytes / unit * unit;
  const int64_t total = c.bytes / elem_bytes;
  const int64_t share = total / std::max(ranks, 1);
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv:
      c.send_elems = c.recv_elems = c.call_count = total;
      break;
    case CollectiveOp::kAllGather:
      c.send_elems = c.call_count = share;
      c.recv_elems = total;
      break;
    case CollectiveOp::kReduceScatter:
      c.send_elems = total;
      c.recv_elems = c.call_count = share;
      break;
    case CollectiveOp::kAllToAll:
      c.send_elems = c.recv_elems = total;
      c.call_count = share;
      break;
  }
  return c;
}

std::vector<int64_t> SizeSweep(int64_t min_bytes, int64_t max_bytes, int factor) {
  std::vector<int64_t> out;
  if (min_bytes <= 0 || max_bytes < min_bytes) return out;
  factor = std::max(factor, 2);
  for (int64_t b = min_bytes; b <= max_bytes; b *= factor) {
    out.push_back(b);
    if (b > max_bytes / factor) break;
  }
  return out;
}

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  int64_t mult = 1;
  for (std::string suffix : {"ib", "b"}) {
    if (t.size() > suffix.size() && t.ends_with(suffix)) {
      t.resize(t.size() - suffix.size());
      break;
    }
  }
  if (!t.empty() && std::isalpha(static_cast<unsigned char>(t.back()))) {
    switch (t.back()) {
      case 'k':
        mult = int64_t{1} << 10;
        break;
      case 'm':
        mult = int64_t{1} << 20;
        break;
      case 'g':
        mult = int64_t{1} << 30;
        break;
      case 't':
        mult = int64_t{1} << 40;
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat("bad size '", text, "'"));
    }
    t.pop_back();
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(t, &v) || v < 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad size '", text, "'"));
  }
  return v * mult;
}

}  // namespace xdeep::profiler
