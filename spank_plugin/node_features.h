// -C / --constraint as a bound: how many nodes of the partition have the
// features, so the decision never asks for more nodes than can match.
// Read from sinfo (the plugin links no libslurm); only plain expressions are
// counted (names joined by & or |); counts, brackets and parentheses are left
// to Slurm.
#pragma once

#include <string>

namespace xdeep::spank {

// `sinfo -h -N -o %N|%P|%f` output: the number of distinct nodes in
// `partition` (empty: the default one, marked '*') whose features satisfy
// `constraint`; -1 when the expression is not a plain one.
int CountMatchingNodes(const std::string& sinfo_output, const std::string& partition,
                       const std::string& constraint);

// Runs sinfo (from PATH, with this process's SLURM_CONF) for at most
// `timeout_ms`; false with `error` when it cannot.
bool ReadNodeFeatures(int timeout_ms, std::string* output, std::string* error);

}  // namespace xdeep::spank
