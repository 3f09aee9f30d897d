// The #SBATCH lines of a batch script, read so that their limits (-N,
// --gpus-per-node, -A, -p, ...) bound the decision as sbatch applies them.
// sbatch reads them until the first line that is neither blank nor a comment.
#pragma once

#include <string>
#include <vector>

namespace xdeep::spank {

struct BatchDirectives {
  std::vector<std::string> args;  // the first component's options, in order
  bool heterogeneous = false;     // a "#SBATCH hetjob" separator was seen
};

// Splits the script's header into option words (quotes honoured, "# ..."
// after the options ignored).
BatchDirectives ParseBatchDirectives(const std::string& script);

// Reads the header of the script file at `path`. False with one line in
// `error` when it cannot be read.
bool ReadBatchScript(const std::string& path, BatchDirectives* out, std::string* error);

// The script sbatch read from standard input. Only a redirected file can be
// read again (pread) and rewound for the re-executed sbatch; a pipe's contents
// are gone once sbatch has read them: false with the fix in `error`.
bool ReadStdinScript(BatchDirectives* out, std::string* error);

// Puts standard input back at the start of the redirected script, so the
// re-executed sbatch reads it again.
void RewindStdinScript();

}  // namespace xdeep::spank
