// Which Tune requests are heavy before any work is done for them: a model of
// many layers costs time in proportion to them while it is parsed and set up,
// before a search can poll its client's deadline. Such requests go straight
// to the daemon's heavy lane instead of holding an ordinary worker.
#pragma once

#include <cstddef>

#include "xdeep/v1/tuning.pb.h"

namespace xdeep::daemon {

// Models of more layers than this are heavy (the model's per-layer tables).
inline constexpr size_t kHeavyLayers = 2048;

// Whether the workload's text asks for more than kHeavyLayers layers (a
// `layers = N` or `num_layers = N` line); presets are not heavy here.
bool HeavyWorkload(const xdeep::v1::Workload& workload);

}  // namespace xdeep::daemon
