// A workload's model fingerprint: what a measured step time depends on in
// the workload itself (architecture, precision, optimizer, training
// settings), not its free-text name nor its training length. Runs with the
// same fingerprint may correct each other's predictions; runs with another
// may not (docs/learning.md).
#ifndef XDEEP_TUNER_FINGERPRINT_H_
#define XDEEP_TUNER_FINGERPRINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

// 16 hex digits (FNV-1a over a canonical text of the fields above); stable
// across runs, hosts and builds.
std::string ModelFingerprint(const Workload& w);
// The same, calling `poll` every kLayersPerPoll layers (a 100,000-layer table
// takes ~35 ms on the 2-core VM): its first non-OK status is returned.
absl::StatusOr<std::string> ModelFingerprint(const Workload& w, const BuildPoll& poll);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_FINGERPRINT_H_
