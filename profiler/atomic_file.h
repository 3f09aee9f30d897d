// Files written whole or not at all: a reader (the daemon ingesting a report, a
// probe job reading its shapes) never sees half of one.
#ifndef XDEEP_PROFILER_ATOMIC_FILE_H_
#define XDEEP_PROFILER_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace xdeep::profiler {

// Writes `text` to a temporary file beside `path` (named after this process),
// then renames it over `path`; on failure `path` is untouched and no temporary
// file stays.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_ATOMIC_FILE_H_
