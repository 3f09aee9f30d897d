// Help topics and the preset list (see help_topics.h).
#include "daemon/cli/help_topics.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tuner/workload.h"

namespace xdeep::cli {
namespace {

struct Topic {
  const char* name;
  const char* summary;
  const char* text;
};

constexpr Topic kTopics[] = {
    {"strategies", "what the strategy names in a plan mean",
     R"txt(Strategy names say how the GPUs of a layout share the work. Parts are joined
by "x"; the number after each part is how many GPUs it spans, and their product
is the number of GPUs used.

  dpN         data parallel (PyTorch DDP): N full replicas of the model, each
              on its own slice of the batch; gradients are all-reduced.
  zero1-dpN   data parallel with the optimizer state sharded over the N ranks
              (ZeRO stage 1).
  zero2-dpN   ZeRO stage 2: optimizer state and gradients sharded.
  fsdpN       fully sharded data parallel (PyTorch FSDP, ZeRO stage 3):
              parameters, gradients and optimizer state sharded over N ranks,
              gathered layer by layer when needed.
  tpN         tensor parallel (Megatron-LM): each layer's matrices split over
              N GPUs, best kept inside one node (NVLink).
  tpNsp       tensor parallel with sequence parallelism (Megatron): the
              norms' and dropouts' activations split over the N GPUs too.
  cpN         context parallel: each sequence split over N GPUs, which gather
              each other's keys and values for attention (long sequences).
  ppN         pipeline parallel: the layers cut into N stages, micro-batches
              flowing through them.
     (1f1b)             the one-forward-one-backward schedule;
     (interleaved vK)   K virtual stages per GPU: a smaller pipeline bubble
                        for more point-to-point traffic.
  +rc         activations are recomputed in the backward pass instead of
              stored (less memory, about a third more compute).

Examples: "dp8" is 8 replicas; "fsdp4xtp2" shards over 4 groups of 2
tensor-parallel GPUs; "dp2xtp2xpp2 (1f1b)" is 8 GPUs in 2 replicas of a 2-stage
pipeline whose layers are split over 2 GPUs.

The application receives the choice as XDEEP_STRATEGY, XDEEP_DP, XDEEP_TP,
XDEEP_PP, XDEEP_CP, XDEEP_SEQUENCE_PARALLEL, XDEEP_SHARDING_STAGE and
XDEEP_RECOMPUTE (docs/user.md).
)txt"},
    {"plan", "how to read the table of xdeep plan and --xdeep-tune=explain",
     R"txt(One row per layout; "*" marks the one xdeep chose.

  strategy       how the GPUs share the work (xdeep help strategies)
  nodes x gpus   nodes, and GPUs on each
  mbs x acc      micro-batch per GPU, and gradient-accumulation steps; the
                 global batch is micro-batch x accumulation x data-parallel
                 ranks (column "batch")
  mem GiB        predicted peak memory per GPU
  dp tp pp zero  the parallel degrees and the ZeRO stage
  step s         predicted seconds per optimizer step
  time           predicted time to solution (the whole training)
  cost           predicted cost of that time at the site's prices
  why            why the chosen row won, how much each alternative loses, or
                 why a layout was rejected (memory, budget, deadline, policy)

Below the table, "time limit" gives each job's limit (--time, the partition's
MaxTime, an allocation's time left) and the checkpointed segments a longer run
is planned as; "limited by" names the bounds the chosen layout reached.

A "-" is a figure xdeep did not estimate: a layout rejected before it was
timed or priced. Narrow terminals drop batch, mem GiB and the degrees first and
cut "why"; --wide (xdeep plan) shows everything; --json gives every figure.
)txt"},
    {"objectives", "what --objective / --xdeep-objective optimise",
     R"txt(  cost      least cost to solution (the default)
  time      least time to solution, whatever it costs (within policy and budget)
  deadline  least cost among layouts that finish within the deadline
            (xdeep plan --deadline TIME, srun --xdeep-deadline=TIME)
  budget    least time among layouts that cost at most the budget
            (xdeep plan --budget AMOUNT, srun --xdeep-budget=AMOUNT)

TIME is hours (12, 1.5), a unit (90min, 2h, 3d) or Slurm's format (2:00:00,
1-12:00:00).
)txt"},
};

}  // namespace

HelpCommand::HelpCommand(CLI::App& app) : app_(&app) {
  command_ = app.add_subcommand("help", "explain a topic: strategies, plan, objectives");
  command_->add_option("topic", topic_, "the topic (none: the list of commands and topics)");
}

int HelpCommand::Run(const CliContext&) const {
  if (topic_.empty()) {
    std::cout << app_->help() << "\nhelp topics (xdeep help TOPIC):\n";
    for (const Topic& t : kTopics) std::printf("  %-12s %s\n", t.name, t.summary);
    return 0;
  }
  for (const Topic& t : kTopics) {
    if (topic_ == t.name) {
      std::cout << t.text;
      return 0;
    }
  }
  std::string names;
  for (const Topic& t : kTopics) names += std::string(names.empty() ? "" : ", ") + t.name;
  return Fail("no help topic '" + topic_ + "'; topics: " + names);
}

PresetsCommand::PresetsCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "presets", "the workloads that can be named instead of a file (-w NAME, --xdeep-workload)");
}

int PresetsCommand::Run(const CliContext& context) const {
  nlohmann::json doc = {{"schema", "xdeep.presets/1"}, {"presets", nlohmann::json::array()}};
  if (!context.json) {
    std::printf("%-16s %-12s %12s %14s %12s\n", "preset", "family", "parameters", "samples",
                "batch");
  }
  for (const std::string& name : tuner::PresetWorkloadNames()) {
    auto w = tuner::PresetWorkload(name);
    if (!w.ok()) return Fail(std::string(w.status().message()));
    const char* family = w->family == tuner::ModelFamily::kCnn           ? "cnn"
                         : w->family == tuner::ModelFamily::kTransformer ? "transformer"
                                                                         : "generic";
    if (context.json) {
      doc["presets"].push_back({{"name", name},
                                {"family", family},
                                {"parameters", w->Parameters()},
                                {"samples", w->samples},
                                {"global_batch", w->reference_global_batch}});
    } else {
      std::printf("%-16s %-12s %11.2fB %14.3g %12lld\n", name.c_str(), family,
                  static_cast<double>(w->Parameters()) / 1e9, w->samples,
                  static_cast<long long>(w->reference_global_batch));
    }
  }
  if (context.json) {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << "a workload file sets what a preset does not know: docs/workload.md\n";
  }
  return 0;
}

}  // namespace xdeep::cli
