// The decision as each framework takes it: torchrun arguments, a DeepSpeed
// config, Megatron-LM arguments, Lightning Trainer settings, an Accelerate
// config, or the decision file itself. The Python package (python/xdeep)
// writes the same text from inside the job; tests keep the two equal.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "client/run_decision.h"

namespace xdeep::cli {

// json, torchrun, deepspeed, megatron, lightning, accelerate
const std::vector<std::string>& EmitFormats();

// The text for `format`; false with `error` when the decision cannot be
// expressed there (Lightning has no pipeline parallelism). Rendezvous values
// (node rank, master address and port) come from `env` where it has them
// (inside the job), else they are written as ${NAME} for a script to fill.
bool EmitFramework(const std::string& format, const client::RunDecision& decision,
                   const std::function<std::string(const char*)>& env, std::string* text,
                   std::string* error);

}  // namespace xdeep::cli
