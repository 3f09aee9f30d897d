// Reading a workload's [parallel] table (tuner-internal: it exposes toml++,
// which the library links privately).
#ifndef XDEEP_TUNER_PARALLEL_TABLE_H_
#define XDEEP_TUNER_PARALLEL_TABLE_H_

#include <string_view>

#include "absl/status/status.h"
#include "toml++/toml.h"
#include "tuner/parallel_constraints.h"

namespace xdeep::tuner {

// Errors read "<source>:<line>: <what>; <fix>".
absl::Status ParseParallelTable(const toml::table& table, std::string_view source,
                                ParallelConstraints* out);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_PARALLEL_TABLE_H_
