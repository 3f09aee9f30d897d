// Configuration search and cost model.
//
// Cost = GPUs (or nodes) x hours x price; time to solution = optimizer steps x
// step time, where the steps follow from the samples needed at the chosen
// global batch. With a gradient noise scale B_noise, the samples needed grow as
// (1 + B / B_noise) (McCandlish et al., "An Empirical Model of Large-Batch
// Training", 2018, eq. 2.11 / fig. 4: E = E_min (1 + B / B_noise)).
//
// Pruning keeps the result identical to scoring every configuration: a
// configuration whose memory does not fit is never timed, and for a fixed
// micro-batch the memory grows with the accumulation count, so the first
// accumulation count that does not fit ends that loop.
#include "tuner/search.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tuner/pipeline_engine.h"
#include "tuner/probe_shapes.h"
#include "tuner/selective_recompute.h"
#include "tuner/strategy_model.h"

namespace xdeep::tuner {

std::string_view ObjectiveName(Objective o) {
  switch (o) {
    case Objective::kCost:
      return "cost";
    case Objective::kTime:
      return "time";
    case Objective::kCostUnderDeadline:
      return "cost-under-deadline";
    case Objective::kTimeUnderBudget:
      return "time-under-budget";
  }
  return "?";
}

std::string_view ShardingName(Sharding s) {
  switch (s) {
    case Sharding::kNone:
      return "none";
    case Sharding::kZero1:
      return "zero1";
    case Sharding::kZero2:
      return "zero2";
    case Sharding::kZero3:
      return "zero3";
  }
  return "?";
}

std::string_view ScheduleName(PipelineSchedule s) {
  return s == PipelineSchedule::k1F1B ? "1f1b" : "interleaved";
}

std::string StrategyName(const Configuration& c) {
  std::vector<std::string> parts;
  switch (c.sharding) {
    case Sharding::kNone:
      if (c.dp > 1 || (c.tp == 1 && c.pp == 1 && c.cp == 1)) {
        parts.push_back(absl::StrCat("dp", c.dp));
      }
      break;
    case Sharding::kZero1:
      parts.push_back(absl::StrCat("zero1-dp", c.dp));
      break;
    case Sharding::kZero2:
      parts.push_back(absl::StrCat("zero2-dp", c.dp));
      break;
    case Sharding::kZero3:
      parts.push_back(absl::StrCat("fsdp", c.dp));
      break;
  }
  if (c.tp > 1) parts.push_back(absl::StrCat("tp", c.tp, c.sequence_parallel ? "sp" : ""));
  if (c.cp > 1) parts.push_back(absl::StrCat("cp", c.cp));
  if (c.pp > 1) parts.push_back(absl::StrCat("pp", c.pp));
  std::string name = absl::StrJoin(parts, "x");
  if (c.pp > 1) {
    absl::StrAppend(&name, c.schedule == PipelineSchedule::kInterleaved
                               ? absl::StrCat(" (interleaved v", c.virtual_stages, ")")
                               : std::string(" (1f1b)"));
  }
  return name;
}

double SamplesNeeded(const Workload& w, int64_t global_batch) {
  if (w.b_noise <= 0) return w.samples;
  return w.samples * (1.0 + global_batch / w.b_noise) /
         (1.0 + w.reference_global_batch / w.b_noise);
}

int SearchMicroBatchLimit(const Workload& w, const HardwareProfile& hw) {
  const int probed = LargestProbedMicroBatch(w, hw);
  const int limit = std::max(1, w.max_micro_batch);
  return probed > 0 ? std::min(limit, 2 * probed) : limit;
}

int SegmentsWithin(const SearchLimits& limits, double run_s) {
  const double usable = limits.time_limit_s - limits.segment_restart_s;
  if (limits.time_limit_s <= 0 || run_s <= limits.time_limit_s || usable <= 0) return 1;
  return static_cast<int>(std::min(1e9, std::ceil(run_s / usable)));
}

double SegmentCost(const SearchLimits& limits, const Prediction& p) {
  if (p.segments <= 1 || p.time_to_solution_s <= 0) return p.cost;
  // Each segment runs at most the time limit: that share of the whole.
  return p.cost * std::min(1.0, limits.time_limit_s / p.time_to_solution_s);
}

std::string ExtrapolationNote(const Workload& w, const HardwareProfile& hw,
                              const Configuration& c) {
  std::vector<std::string> notes;
  // GEMMs: measured at this workload's shapes, or modelled from other points.
  if (hw.builtin) {
    notes.push_back(absl::StrCat("every figure from the ", hw.Label(), ", none measured here"));
  } else {
    const int probed = LargestProbedMicroBatch(w, hw);
    if (probed == 0) {
      notes.push_back("GEMM times modelled, this workload's shapes not probed");
    } else if (c.micro_batch > probed) {
      notes.push_back(absl::StrCat("GEMM times at micro-batch ", c.micro_batch,
                                   " modelled beyond the largest probed (", probed, ")"));
    }
    if (c.tp > 1) {
      notes.push_back(absl::StrCat("GEMMs split ", c.tp, " ways (tensor parallel) not probed"));
    }
    if (!hw.optimizer_host.measured()) {
      notes.push_back("host times not measured (no framework probe): 25 us a kernel");
    }
    // Collectives: fitted at some rank counts per scope; beyond the largest,
    // extrapolated over ranks.
    auto largest = [&](FabricScope scope) {
      int n = 0;
      for (const CollectiveFit& f : hw.collectives) {
        if (f.scope == scope) n = std::max(n, f.ranks);
      }
      return n;
    };
    const int group = std::max({c.dp, c.tp, c.pp > 1 ? 2 : 1});  // the largest that talks
    if (group > 1) {
      const bool inter = c.nodes > 1;
      const int measured = largest(inter ? FabricScope::kInterNode : FabricScope::kIntraNode);
      if (measured == 0) {
        notes.push_back(absl::StrCat(inter ? "inter" : "intra",
                                     "-node collectives not measured, built-in figures"));
      } else if (group > measured) {
        notes.push_back(
            absl::StrCat("collectives over ", group, " ranks from fits up to ", measured));
      }
    }
  }
  // Settings whose effect no probe measures: the model's physics with cited
  // figures (docs/workload.md).
  std::vector<std::string> settings;
  if (w.family == ModelFamily::kTransformer &&
      ResolvedAttention(w) == AttentionKernel::kEfficient) {
    settings.push_back("attention=efficient");
  }
  if (w.settings.compile) settings.push_back("compile");
  if (w.settings.optimizer_impl != OptimizerImpl::kForeach) {
    settings.push_back(
        absl::StrCat("optimizer_impl=", std::string(OptimizerImplName(w.settings.optimizer_impl))));
  }
  if (!settings.empty()) {
    notes.push_back(absl::StrCat("modelled, not probed: ", absl::StrJoin(settings, ", ")));
  }
  return absl::StrJoin(notes, "; ");
}

namespace {

Prediction ScoreWith(StrategyModel& model, const SearchLimits& limits, const Configuration& c,
                     double ideal, double memory_total, const StepTime& analytical) {
  const Workload& w = model.workload();
  // Real runs correct the analytical model (Extra-Deep: fitted from outcomes).
  std::optional<StepTime> corrected;  // only with a correction: no copy per candidate without
  if (limits.step_time_correction) corrected = limits.step_time_correction(c, analytical);
  const StepTime& t = corrected ? *corrected : analytical;
  Prediction p;
  // 0 = not computed here; the search fills it in for the candidates it keeps.
  p.memory_per_gpu_bytes = static_cast<int64_t>(std::ceil(memory_total));
  p.step_time_s = t.total_s;
  p.analytical_step_time_s = analytical.total_s;
  p.compute_s = t.compute_s;
  p.exposed_comm_s = t.exposed_comm_s;
  p.bubble_s = t.bubble_s;
  p.optimizer_s = t.optimizer_s;
  p.samples_per_s = t.total_s > 0 ? c.global_batch / t.total_s : 0;
  p.samples_needed = SamplesNeeded(w, c.global_batch);
  p.steps = std::ceil(p.samples_needed / c.global_batch);
  p.time_to_solution_s = p.steps * t.total_s;
  p.segments = SegmentsWithin(limits, p.time_to_solution_s);
  p.time_to_solution_s += (p.segments - 1) * limits.segment_restart_s;
  const double hours = p.time_to_solution_s / 3600.0;
  p.cost = limits.price_per_node_hour > 0 ? hours * c.nodes * limits.price_per_node_hour
                                          : hours * c.TotalGpus() * limits.price_per_gpu_hour;
  p.parallel_efficiency = t.total_s > 0 ? ideal * c.global_batch / (c.TotalGpus() * t.total_s) : 0;
  return p;
}

bool Lower(Objective o, const Prediction& a, const Prediction& b) {
  const bool by_time = o == Objective::kTime || o == Objective::kTimeUnderBudget;
  if (by_time) {
    if (a.time_to_solution_s != b.time_to_solution_s)
      return a.time_to_solution_s < b.time_to_solution_s;
    return a.cost < b.cost;
  }
  if (a.cost != b.cost) return a.cost < b.cost;
  return a.time_to_solution_s < b.time_to_solution_s;
}

std::string Gib(double bytes) {
  return absl::StrFormat("%.1f GiB", bytes / (1024.0 * 1024 * 1024));
}
std::string Money(double v) { return absl::StrFormat("%.2f", v); }
std::string Hours(double s) { return absl::StrFormat("%.2f h", s / 3600); }

enum Reason { kMemory, kPolicy, kBudget, kDeadline, kEfficiency, kReasons };

}  // namespace

Prediction Evaluate(const Workload& w, const HardwareProfile& hw, const SearchLimits& limits,
                    const Configuration& c) {
  StrategyModel model(w, hw);
  Prediction p = ScoreWith(model, limits, c, model.IdealTimePerSample(), model.Memory(c).Total(),
                           model.Time(c));
  p.extrapolated = ExtrapolationNote(w, hw, c);
  return p;
}

namespace {

// Search, SearchRecording and SearchInSpace: with `replay`, the recorded
// figures are scored instead of enumerating and timing; with `record`, the
// figures are kept for later searches.
absl::StatusOr<SearchResult> SearchImpl(const Workload& w, const HardwareProfile& hw,
                                        const SearchLimits& limits, const ScoredSpace* replay,
                                        std::shared_ptr<const ScoredSpace>* record);

}  // namespace

absl::StatusOr<SearchResult> Search(const Workload& w, const HardwareProfile& hw,
                                    const SearchLimits& limits) {
  return SearchImpl(w, hw, limits, nullptr, nullptr);
}

absl::StatusOr<SearchResult> SearchRecording(const Workload& w, const HardwareProfile& hw,
                                             const SearchLimits& limits,
                                             std::shared_ptr<const ScoredSpace>* space) {
  *space = nullptr;
  return SearchImpl(w, hw, limits, nullptr, space);
}

absl::StatusOr<SearchResult> SearchInSpace(const ScoredSpace& space, const Workload& w,
                                           const HardwareProfile& hw, const SearchLimits& limits) {
  return SearchImpl(w, hw, limits, &space, nullptr);
}

namespace {

absl::StatusOr<SearchResult> SearchImpl(const Workload& w, const HardwareProfile& hw,
                                        const SearchLimits& limits, const ScoredSpace* replay,
                                        std::shared_ptr<const ScoredSpace>* record) {
  if (limits.max_nodes < 1) return absl::InvalidArgumentError("max_nodes must be at least 1");
  if (hw.gpus_per_node < 1 || hw.memory_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("hardware profile '", hw.name, "' lacks gpus_per_node or memory"));
  }
  if (w.layers.empty() || w.samples <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload '", w.name, "' has no layers or no training length"));
  }
  if (limits.objective == Objective::kCostUnderDeadline && limits.deadline_s <= 0) {
    return absl::InvalidArgumentError(
        "objective=deadline needs a deadline: give --xdeep-deadline=TIME (xdeep plan: "
        "--deadline TIME)");
  }
  if (limits.objective == Objective::kTimeUnderBudget && limits.budget <= 0) {
    return absl::InvalidArgumentError(
        "objective=budget needs a budget: give --xdeep-budget=AMOUNT (xdeep plan: --budget "
        "AMOUNT)");
  }
  if (limits.time_limit_s > 0 && limits.time_limit_s <= 2 * limits.segment_restart_s) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a time limit of %s leaves no time to train: each checkpointed segment spends %s "
        "restarting; allow a longer --time (the site's segment_restart_s is %.0f s)",
        Hours(limits.time_limit_s), Hours(limits.segment_restart_s), limits.segment_restart_s));
  }
  // Strategies every list allows: the site's, the launch's, the workload's.
  bool allow_dp = true, allow_tp = true, allow_pp = true, allow_sp = true, allow_cp = true,
       allow_z[4] = {true, true, true, true};
  auto narrow = [&](const std::vector<std::string>& list) -> absl::Status {
    if (list.empty()) return absl::OkStatus();
    bool dp = false, tp = false, pp = false, sp = false, cp = false,
         z[4] = {false, false, false, false};
    for (const std::string& s : list) {
      if (s == "dp" || s == "ddp")
        dp = true;
      else if (s == "tp")
        tp = true;
      else if (s == "pp")
        pp = true;
      else if (s == "sp")
        sp = true;
      else if (s == "cp")
        cp = true;
      else if (s == "zero1")
        z[1] = true;
      else if (s == "zero2")
        z[2] = true;
      else if (s == "zero3" || s == "fsdp")
        z[3] = true;
      else
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown strategy '", s, "'; use dp, tp, pp, sp, cp, zero1, zero2, zero3 (or fsdp)"));
    }
    allow_dp &= dp;
    allow_tp &= tp;
    allow_pp &= pp;
    allow_sp &= sp;
    allow_cp &= cp;
    for (int i = 1; i < 4; ++i) allow_z[i] &= z[i];
    return absl::OkStatus();
  };
  const ParallelConstraints& user = w.parallel;
  for (const auto* list : {&limits.allowed_strategies, &limits.user_strategies, &user.strategies}) {
    if (absl::Status s = narrow(*list); !s.ok()) return s;
  }
  if (!user.sharding.empty()) {
    bool z[4] = {false, false, false, false};
    for (const std::string& s : user.sharding) {
      z[s == "none" ? 0 : s == "zero1" ? 1 : s == "zero2" ? 2 : 3] = true;
    }
    allow_dp &= z[0];
    for (int i = 1; i < 4; ++i) allow_z[i] &= z[i];
  }
  auto degree_ok = [](int d, int fixed, int most) {
    return (fixed == 0 || d == fixed) && (most == 0 || d <= most);
  };
  const int max_g = limits.max_gpus_per_node > 0 ? limits.max_gpus_per_node : hw.gpus_per_node;
  // GPUs per node: powers of two below the node size and the node size itself
  // (the shapes NCCL and tensor parallelism use).
  std::vector<int> gpn;
  for (int g = 1; g < max_g; g *= 2) gpn.push_back(g);
  gpn.push_back(max_g);

  StrategyModel model(w, hw);
  // The ideal time per sample scores every micro-batch the workload allows,
  // one per-layer table each (21 tables of 100k layers for the heaviest legal
  // request: ~180 ms of CPU). Built here one table at a time, the caller's
  // interrupt asked between them, so a cancelled request stops before its
  // first candidate too; IdealTimePerSample then reads what these left.
  if (replay == nullptr && limits.interrupt && w.layers.size() > 2048) {
    Configuration single;
    for (int mb = 1; mb <= std::max(1, w.max_micro_batch); mb *= 2) {
      if (absl::Status s = limits.interrupt(); !s.ok()) return s;
      single.micro_batch = mb;
      single.global_batch = mb;
      (void)model.Time(single);
      if (mb > (1 << 29)) break;
    }
    if (absl::Status s = limits.interrupt(); !s.ok()) return s;
  }
  const double ideal = replay ? replay->ideal_time_per_sample : model.IdealTimePerSample();
  const int max_mb = SearchMicroBatchLimit(w, hw);
  const double capacity = static_cast<double>(hw.memory_bytes);
  const int L = static_cast<int>(w.layers.size());

  SearchResult result;
  result.hardware_label = hw.Label();
  const size_t keep = static_cast<size_t>(std::max(0, limits.max_alternatives)) + 1;
  std::vector<Candidate> top;  // sorted, best first
  // Pareto front sorted by time; cost falls as time grows. A vector: lookups
  // (every feasible candidate) far outnumber insertions.
  std::vector<Candidate> pareto;
  // A (time, cost) point known to be on or behind the front: anything no
  // faster and no cheaper is dominated (points only leave the front for
  // better ones, so this stays true).
  double last_dominator_t = std::numeric_limits<double>::infinity();
  double last_dominator_cost = std::numeric_limits<double>::infinity();
  std::vector<Candidate> examples[kReasons];
  uint64_t counts[kReasons] = {};
  const size_t per_reason = static_cast<size_t>(std::max(1, limits.max_rejected_examples));
  // The reason text is only built for the examples kept.
  auto with_memory = [&](const Configuration& c, Prediction p) {
    if (p.memory_per_gpu_bytes == 0) {
      p.memory_per_gpu_bytes = static_cast<int64_t>(std::ceil(model.MemoryTotal(c)));
    }
    return p;
  };
  auto reject = [&](Reason r, const Configuration& c, const Prediction& p, auto&& why) {
    ++counts[r];
    if (examples[r].size() < per_reason) examples[r].push_back({c, with_memory(c, p), why()});
  };
  // Structure checks hoisted out of the inner loops (StructuralProblem says
  // the same in words): tp must split heads, kv-heads and the MLP of a
  // transformer; pp x virtual stages must divide its layers (Megatron's rule)
  // or not exceed a layer table's rows.
  auto tp_ok = [&](int tp) {
    if (tp == 1) return true;
    if (w.family != ModelFamily::kTransformer) return false;
    const TransformerShape& t = w.transformer;
    return t.heads % tp == 0 && t.kv_heads % tp == 0 && t.ffn % tp == 0;
  };
  auto pp_ok = [&](int stages) {
    if (stages == 1) return true;
    if (w.family == ModelFamily::kTransformer) {
      // An embedding and head counted as blocks take a stage slot each.
      return (w.transformer.layers + (w.settings.pipeline_ends_as_layers ? 2 : 0)) % stages == 0;
    }
    return stages <= L;
  };
  // Accumulation counts for a micro-batch of `per_ga` samples across dp: the
  // one that hits a fixed batch, or powers of two inside [min, max]; Megatron's
  // interleaved schedule needs them divisible by pp (`multiple_of`).
  // Range of powers of two: [first, last] (first > last when empty).
  auto pow2_range = [&](int64_t per_ga, int multiple_of, int64_t& first, int64_t& last) {
    first = 1;
    last = 0;
    // Configuration::grad_accum is an int: larger counts (a batch range up to
    // 2^40) would wrap negative and reach the model (UBSan, issue #27).
    const int64_t hi =
        std::min<int64_t>(w.max_global_batch / per_ga, std::numeric_limits<int>::max());
    if (hi < 1) return;
    const int64_t lo = std::max<int64_t>(1, (w.min_global_batch + per_ga - 1) / per_ga);
    last = int64_t{1} << (63 - std::countl_zero(static_cast<uint64_t>(hi)));
    first = std::bit_ceil(static_cast<uint64_t>(lo));
    if (multiple_of > 1) {
      // A power of two is a multiple of m only when m is one and <= it.
      if ((multiple_of & (multiple_of - 1)) != 0) {  // not a power of two
        first = 1;
        last = 0;
        return;
      }
      first = std::max<int64_t>(first, multiple_of);
    }
  };
  auto accumulations = [&](int64_t per_ga, int multiple_of, std::vector<int>& out) {
    out.clear();
    if (!w.batch_may_change) {
      if (w.reference_global_batch % per_ga == 0) {
        const int64_t ga = w.reference_global_batch / per_ga;
        if (ga % multiple_of == 0 && ga <= std::numeric_limits<int>::max()) {
          out.push_back(static_cast<int>(ga));
        }
      }
      return;
    }
    int64_t first, last;
    pow2_range(per_ga, multiple_of, first, last);
    for (int64_t ga = first; ga <= last; ga *= 2) out.push_back(static_cast<int>(ga));
  };
  auto count_accumulations = [&](int64_t per_ga, int multiple_of) -> uint64_t {
    if (!w.batch_may_change) {
      return w.reference_global_batch % per_ga == 0 &&
             (w.reference_global_batch / per_ga) % multiple_of == 0 &&
             w.reference_global_batch / per_ga <= std::numeric_limits<int>::max();
    }
    int64_t first, last;
    pow2_range(per_ga, multiple_of, first, last);
    if (first > last) return 0;
    return std::countr_zero(static_cast<uint64_t>(last)) -
           std::countr_zero(static_cast<uint64_t>(first)) + 1;
  };
  std::vector<int> gas;
  std::vector<int> vs;  // virtual stages per schedule option (schedule_options)
  // Context-parallel degrees: 1, and for a transformer with a fused attention
  // kernel powers of two up to 64 that split the sequence into 2 x cp equal
  // chunks and leave each rank at least 2,048 tokens (below that its GEMMs
  // shrink while the gathers stay: context parallelism is for long sequences).
  std::vector<int> cps;
  for (int cp = 1; cp <= 64; cp *= 2) {
    if (!degree_ok(cp, user.cp, user.max_cp)) continue;
    if (cp > 1) {
      if (!allow_cp || w.family != ModelFamily::kTransformer) break;
      if (MaterialisesScores(ResolvedAttention(w))) break;
      const int seq = w.transformer.seq_len;
      if (seq % (2 * cp) != 0 || seq / cp < 2048) break;
    }
    cps.push_back(cp);
  }
  std::vector<std::pair<size_t, int>> layouts;
  // A fixed global batch: its divisors, the only data-parallel degrees that
  // reach it (ascending).
  std::vector<int64_t> batch_divisors;
  if (!w.batch_may_change) {
    const int64_t b = w.reference_global_batch;
    for (int64_t d = 1; d * d <= b; ++d) {
      if (b % d != 0) continue;
      batch_divisors.push_back(d);
      if (d * d != b) batch_divisors.push_back(b / d);
    }
    std::sort(batch_divisors.begin(), batch_divisors.end());
  }
  const bool selective_matters = SelectiveRecomputeMatters(w);
  const int recompute_modes = selective_matters ? 3 : 2;
  // Memory-bound table per (tp, pp, schedule, recompute, sharding, log2 mb):
  // the largest dp known not to fit and the smallest known to fit.
  // Pipeline schedules tried per pp: 1F1B, then the interleaved schedule at
  // every number of model chunks v the model takes (Megatron: pp x v divides
  // the blocks; Llama 3 405B ran v 8, Meta 2024 sec. 3.3.2). A layer table
  // (no Megatron chunking) keeps v 2 alone. Index 0 is 1F1B.
  const int blocks = w.family == ModelFamily::kTransformer
                         ? w.transformer.layers + (w.settings.pipeline_ends_as_layers ? 2 : 0)
                         : 0;
  auto schedule_options = [&](int pp, std::vector<int>& vs) {
    vs.assign(1, 1);
    if (pp <= 1 || !limits.try_interleaved) return;
    if (w.family != ModelFamily::kTransformer) {
      if (pp_ok(pp * 2)) vs.push_back(2);
      return;
    }
    if (blocks % pp != 0) return;
    for (int v = 2; v <= blocks / pp; ++v) {
      if ((blocks / pp) % v == 0) vs.push_back(v);
    }
  };
  // The table's pipeline axis: one slot per (pp, schedule option), packed
  // (pipe_offset[pp] is pp's first), so that many v for the few pp that
  // divide the blocks do not multiply the table by the largest count.
  std::vector<size_t> pipe_offset(static_cast<size_t>(L) + 2, 0);
  {
    std::vector<int> options;
    for (int pp = 0; pp <= L; ++pp) {
      schedule_options(std::max(pp, 1), options);
      pipe_offset[pp + 1] = pipe_offset[pp] + options.size();
    }
  }
  const size_t pipe_slots = pipe_offset[L + 1];
  const size_t bound_slots =
      cps.size() * static_cast<size_t>(max_g + 1) * pipe_slots * recompute_modes * 4 * 32;
  const bool bound_table_ok = replay == nullptr && bound_slots <= (size_t{1} << 22);
  std::vector<int> bound_max_bad(bound_table_ok ? bound_slots : 0, 0);
  std::vector<int> bound_min_good(bound_table_ok ? bound_slots : 0,
                                  std::numeric_limits<int>::max());

  // Bounded work: the cap and the caller's interrupt are checked every few
  // model evaluations (each costs time in proportion to the layers), and a
  // stop leaves the loops below at once (goto: ten loops deep).
  absl::Status stopped;
  const uint32_t poll_every = static_cast<uint32_t>(std::max(1, 2048 / std::max(L, 1)));
  uint32_t since_poll = 0;
  auto poll = [&] {
    if (++since_poll < poll_every) return false;
    since_poll = 0;
    if (limits.max_candidates > 0 && result.evaluated > limits.max_candidates) {
      stopped = absl::ResourceExhaustedError(absl::StrCat(
          "the search for '", w.name, "' passed this site's limit of ", limits.max_candidates,
          " configurations per request; narrow it: fewer nodes (-N), a fixed global batch or a "
          "smaller [batch] max / max_micro, or fewer strategies (--xdeep-strategies)"));
    } else if (limits.interrupt) {
      stopped = limits.interrupt();
    }
    return !stopped.ok();
  };
  // Scores one configuration whose memory fits (`memory` 0: not figured, the
  // kept ones' figured at the end) and keeps it where it is among the best,
  // on the Pareto front, or as an example of what the scoring limits rule out.
  auto consider = [&](const Configuration& c, double memory, const StepTime& analytical) {
    Prediction p = ScoreWith(model, limits, c, ideal, memory, analytical);
    if (limits.budget > 0 && p.cost > limits.budget) {
      reject(kBudget, c, p, [&] {
        return absl::StrCat("budget: costs ", Money(p.cost), " > ", Money(limits.budget));
      });
      return;
    }
    if (limits.deadline_s > 0 && p.time_to_solution_s > limits.deadline_s) {
      reject(kDeadline, c, p, [&] {
        return absl::StrCat("deadline: takes ", Hours(p.time_to_solution_s), " > ",
                            Hours(limits.deadline_s));
      });
      return;
    }
    if (p.parallel_efficiency < limits.min_parallel_efficiency) {
      reject(kEfficiency, c, p, [&] {
        return absl::StrFormat("policy: parallel efficiency %.2f < %.2f", p.parallel_efficiency,
                               limits.min_parallel_efficiency);
      });
      return;
    }
    ++result.feasible;
    // Top list.
    if (top.size() < keep || Lower(limits.objective, p, top.back().prediction)) {
      auto pos =
          std::upper_bound(top.begin(), top.end(), p, [&](const Prediction& a, const Candidate& b) {
            return Lower(limits.objective, a, b.prediction);
          });
      top.insert(pos, Candidate{c, p, ""});
      if (top.size() > keep) top.pop_back();
    }
    // Pareto front of (time, cost).
    const double t = p.time_to_solution_s;
    // Fast path: no faster than and no cheaper than the
    // front's slowest (cheapest) point.
    if (!pareto.empty() && t >= pareto.back().prediction.time_to_solution_s &&
        p.cost >= pareto.back().prediction.cost) {
      return;
    }
    // Neighbouring candidates tend to fall to the same front
    // point: try the last one that dominated before searching.
    if (t >= last_dominator_t && p.cost >= last_dominator_cost) return;
    auto it = std::upper_bound(pareto.begin(), pareto.end(), t, [](double x, const Candidate& k) {
      return x < k.prediction.time_to_solution_s;
    });
    // Dominated by the fastest point not slower than it?
    const bool dominated = it != pareto.begin() && std::prev(it)->prediction.cost <= p.cost;
    if (dominated) {
      last_dominator_t = std::prev(it)->prediction.time_to_solution_s;
      last_dominator_cost = std::prev(it)->prediction.cost;
    } else {
      // Equal time and higher cost: the new point replaces it.
      if (it != pareto.begin() && std::prev(it)->prediction.time_to_solution_s == t) {
        --it;
        *it = Candidate{c, p, ""};
      } else {
        it = pareto.insert(it, Candidate{c, p, ""});
      }
      auto next = std::next(it), last = next;
      while (last != pareto.end() && last->prediction.cost >= p.cost) ++last;
      pareto.erase(next, last);
    }
  };
  std::unique_ptr<ScoredSpace> recording;
  if (record != nullptr) {
    recording = std::make_unique<ScoredSpace>();
    recording->ideal_time_per_sample = ideal;
  }
  Configuration c;
  if (replay != nullptr) {
    result.evaluated = replay->evaluated;
    result.pruned = replay->pruned;
    counts[kMemory] = replay->rejected_memory;
    counts[kPolicy] = replay->rejected_gpu_limit;
    examples[kMemory] = replay->memory_examples;
    for (const ScoredSpace::Entry& e : replay->entries) consider(e.config, e.memory, e.time);
    goto interrupted;
  }
  for (int nodes = 1; nodes <= limits.max_nodes; ++nodes) {
    for (int g : gpn) {
      const int n_gpus = nodes * g;
      if (limits.max_total_gpus > 0 && n_gpus > limits.max_total_gpus) {
        ++counts[kPolicy];
        continue;
      }
      c.nodes = nodes;
      c.gpus_per_node = g;
      for (int tp = 1; tp <= g; ++tp) {
        if (g % tp != 0) continue;
        if (tp > 1 && (!allow_tp || !tp_ok(tp))) continue;
        if (!degree_ok(tp, user.tp, user.max_tp)) continue;
        // Sequence parallelism never costs time and saves memory, so where
        // allowed every tensor-parallel layout uses it.
        c.sequence_parallel = tp > 1 && allow_sp;
        // (cp, pp) pairs: each context-parallel degree, then every pipeline
        // depth dividing the rest (a stage holds at least one layer) whose dp
        // can reach an allowed global batch: at a micro-batch of 1 a dp above
        // the largest batch overshoots it, and a fixed batch needs dp to
        // divide it. The loops below would score nothing for the others; on
        // 10,000 nodes they are nearly all.
        layouts.clear();
        for (size_t ci = 0; ci < cps.size(); ++ci) {
          if ((n_gpus / tp) % cps[ci] != 0) continue;
          const int rest = n_gpus / (tp * cps[ci]);
          if (batch_divisors.empty()) {
            const int64_t most = std::max<int64_t>(1, w.max_global_batch);
            for (int pp = static_cast<int>(std::max<int64_t>(1, (rest + most - 1) / most));
                 pp <= std::min(rest, L); ++pp) {
              if (rest % pp == 0) layouts.push_back({ci, pp});
            }
          } else {
            // Descending dp is ascending pp: the order ties are ranked in.
            for (auto d = batch_divisors.rbegin(); d != batch_divisors.rend(); ++d) {
              if (*d > rest || rest % *d != 0) continue;
              if (rest / *d <= L) layouts.push_back({ci, static_cast<int>(rest / *d)});
            }
          }
        }
        for (const auto& [ci, pp] : layouts) {
          const int cp = cps[ci];
          c.cp = cp;
          if (pp > 1 && (!allow_pp || !pp_ok(pp))) continue;
          if (!degree_ok(pp, user.pp, user.max_pp)) continue;
          const int dp = n_gpus / (tp * cp * pp);
          c.dp = dp;
          c.tp = tp;
          c.pp = pp;
          for (int z = 0; z < 4; ++z) {
            const Sharding sh = static_cast<Sharding>(z);
            if (dp == 1 && z != 0) continue;
            if (dp > 1 && (z == 0 ? !allow_dp : !allow_z[z])) continue;
            c.sharding = sh;
            c.schedule = PipelineSchedule::k1F1B;
            c.virtual_stages = 1;
            if (!PipelineEngineProblem(w, c).empty()) continue;  // DeepSpeed: no ZeRO-2/3 with pp
            schedule_options(pp, vs);
            for (int si = 0; si < static_cast<int>(vs.size()); ++si) {
              const int sched = si == 0 ? 0 : 1;
              c.schedule = sched == 0 ? PipelineSchedule::k1F1B : PipelineSchedule::kInterleaved;
              c.virtual_stages = vs[si];
              if (!pp_ok(pp * c.virtual_stages)) continue;
              if (sched == 1 && !PipelineEngineProblem(w, c).empty()) continue;
              if (pp > 1 && !user.pipeline_schedule.empty() &&
                  user.pipeline_schedule != (sched == 0 ? "1f1b" : "interleaved")) {
                continue;
              }
              // rc: 0 none, 1 full, 2 selective (only where attention keeps its scores).
              for (int rc = 0; rc < recompute_modes; ++rc) {
                c.recompute = rc == 1;
                c.selective_recompute = rc == 2;
                // The script checkpoints always, never, or as told
                // (XDEEP_RECOMPUTE, XDEEP_SELECTIVE_RECOMPUTE).
                const Checkpointing ck = w.settings.activation_checkpointing;
                if ((ck == Checkpointing::kOff && rc != 0) ||
                    (ck == Checkpointing::kOn && rc != 1)) {
                  continue;
                }
                if (!user.recompute.empty() && user.recompute != (rc == 0   ? "off"
                                                                  : rc == 1 ? "on"
                                                                            : "selective")) {
                  continue;
                }
                for (int mb = 1; mb <= max_mb; mb *= 2) {
                  c.micro_batch = mb;
                  const int64_t per_ga = int64_t{dp} * mb;
                  if (per_ga > w.max_global_batch) break;
                  accumulations(per_ga, sched == 1 ? pp : 1, gas);
                  if (gas.empty()) continue;
                  // Memory bound: with one micro-batch per step (fewest in
                  // flight, no gradients kept between micro-batches) memory
                  // is lowest, and it grows with the micro-batch. If that
                  // does not fit, nothing at this or a larger micro-batch
                  // does: count them as rejected for memory without scoring.
                  int mem_ga = -1;
                  double mem = 0;
                  {
                    Configuration lb = c;
                    lb.grad_accum = 1;
                    // With everything else fixed, this bound never grows with
                    // dp (sharded state divides by it; unsharded, dp > 1 adds
                    // the same bucket copy whatever dp is), so a dp known not
                    // to fit rules out every smaller one, and one known to fit
                    // every larger one. dp = 1 unsharded (no buckets) is left
                    // out of the table.
                    const bool monotone = bound_table_ok && dp > 1;
                    const size_t slot =
                        monotone
                            ? ((((ci * (max_g + 1) + static_cast<size_t>(tp)) * pipe_slots +
                                  pipe_offset[pp] + static_cast<size_t>(si)) *
                                    recompute_modes +
                                rc) *
                                   4 +
                               z) * 32 +
                                  static_cast<size_t>(std::countr_zero(static_cast<unsigned>(mb)))
                            : 0;
                    bool fits;
                    double need = -1;
                    if (monotone && dp <= bound_max_bad[slot]) {
                      fits = false;
                    } else if (monotone && dp >= bound_min_good[slot]) {
                      fits = true;
                    } else {
                      if (poll()) goto interrupted;
                      need = model.MemoryTotal(lb);
                      mem = need;
                      mem_ga = 1;
                      fits = need <= capacity;
                      if (monotone) {
                        if (fits)
                          bound_min_good[slot] = std::min(bound_min_good[slot], dp);
                        else
                          bound_max_bad[slot] = std::max(bound_max_bad[slot], dp);
                      }
                    }
                    if (!fits) {
                      uint64_t n = 0;
                      for (int m2 = mb; m2 <= max_mb; m2 *= 2) {
                        const int64_t pg = int64_t{dp} * m2;
                        if (pg > w.max_global_batch) break;
                        n += count_accumulations(pg, sched == 1 ? pp : 1);
                      }
                      result.pruned += n;
                      counts[kMemory] += n;
                      if (examples[kMemory].size() < per_reason) {
                        c.grad_accum = gas.front();
                        c.global_batch = per_ga * gas.front();
                        if (need < 0) need = model.MemoryTotal(lb);
                        Prediction p;
                        p.memory_per_gpu_bytes = static_cast<int64_t>(std::ceil(need));
                        examples[kMemory].push_back(
                            {c, p,
                             absl::StrCat("memory: needs at least ", Gib(need), " per GPU, the ",
                                          hw.gpu_name, " has ", Gib(capacity))});
                      }
                      break;
                    }
                  }
                  // Memory and step time are computed once per micro-batch
                  // and reused across accumulation counts where they cannot
                  // change (StrategyModel::MemoryAccumulation and
                  // WithAccumulation give bit-identical results).
                  bool timed = false;
                  StepTime base_time;
                  // Memory never falls with more accumulation: if the largest
                  // count fits, all do, and the exact figure is only needed
                  // for the candidates kept (filled in by with_memory).
                  bool all_fit = false;
                  {
                    Configuration cm = c;
                    cm.grad_accum = gas.back();
                    const int kmax = model.MemoryAccumulation(cm);
                    if (kmax != mem_ga) {
                      cm.grad_accum = kmax;
                      if (poll()) goto interrupted;
                      const double m = model.MemoryTotal(cm);
                      if (m <= capacity) {
                        all_fit = true;
                      } else if (gas.size() == 1) {
                        mem = m;  // the only count: this is its figure
                        mem_ga = kmax;
                      }
                    } else {
                      all_fit = mem <= capacity;
                    }
                  }
                  for (int ga : gas) {
                    c.grad_accum = ga;
                    c.global_batch = per_ga * ga;
                    ++result.evaluated;
                    const int key = all_fit ? 0 : model.MemoryAccumulation(c);
                    if (!all_fit && key != mem_ga) {
                      Configuration cm = c;
                      cm.grad_accum = key;
                      if (poll()) goto interrupted;
                      mem = model.MemoryTotal(cm);
                      mem_ga = key;
                    }
                    if (!all_fit && mem > capacity) {
                      Prediction p;
                      p.memory_per_gpu_bytes = static_cast<int64_t>(std::ceil(mem));
                      reject(kMemory, c, p, [&] {
                        return absl::StrCat("memory: needs ", Gib(mem), " per GPU, the ",
                                            hw.gpu_name, " has ", Gib(capacity));
                      });
                      break;  // more accumulation only holds more
                    }
                    if (!timed) {
                      if (poll()) goto interrupted;
                      base_time = model.Time(c);
                      timed = true;
                    }
                    const StepTime step = StrategyModel::WithAccumulation(base_time, ga);
                    if (recording != nullptr) {
                      if (recording->entries.size() < ScoredSpace::kMaxEntries) {
                        recording->entries.push_back({c, all_fit ? 0 : mem, step});
                      } else {
                        recording.reset();
                      }
                    }
                    consider(c, all_fit ? 0 : mem, step);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
interrupted:
  if (!stopped.ok()) return stopped;
  if (recording != nullptr) {
    recording->evaluated = result.evaluated;
    recording->pruned = result.pruned;
    recording->rejected_memory = counts[kMemory];
    recording->rejected_gpu_limit = counts[kPolicy];
    recording->memory_examples = examples[kMemory];
    *record = std::move(recording);
  }
  // Memory figures of the candidates kept, once (ranking never reads them;
  // candidates pass through the top list and the front many times).
  for (auto* kept : {&top, &pareto}) {
    for (Candidate& cand : *kept) cand.prediction = with_memory(cand.config, cand.prediction);
  }
  result.rejected_memory = counts[kMemory];
  result.rejected_policy = counts[kPolicy] + counts[kEfficiency];
  result.rejected_budget = counts[kBudget];
  result.rejected_deadline = counts[kDeadline];
  result.rejected_efficiency = counts[kEfficiency];
  for (int r = 0; r < kReasons; ++r) {
    for (Candidate& e : examples[r]) {
      if (static_cast<int>(result.rejected_examples.size()) >= limits.max_rejected_examples) break;
      result.rejected_examples.push_back(std::move(e));
    }
  }
  if (top.empty()) {
    std::vector<std::string> why;
    if (counts[kMemory]) {
      why.push_back(absl::StrCat(
          counts[kMemory], " did not fit in memory (e.g. ",
          examples[kMemory].empty()
              ? std::string("?")
              : StrategyName(examples[kMemory][0].config) + ": " + examples[kMemory][0].why,
          ")"));
    }
    if (counts[kBudget]) why.push_back(absl::StrCat(counts[kBudget], " exceeded the budget"));
    if (counts[kDeadline]) why.push_back(absl::StrCat(counts[kDeadline], " missed the deadline"));
    if (counts[kEfficiency]) {
      why.push_back(
          absl::StrCat(counts[kEfficiency], " fell below the minimum parallel efficiency"));
    }
    if (counts[kPolicy]) why.push_back(absl::StrCat(counts[kPolicy], " exceeded the GPU limit"));
    if (why.empty()) {
      why.push_back(
          absl::StrCat("no configuration matches the batch bounds and strategies allowed",
                       w.parallel.empty() ? "" : " (with the workload's [parallel] table)",
                       limits.user_strategies.empty() ? "" : " (with --xdeep-strategies)"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "no configuration of '", w.name, "' fits on up to ", limits.max_nodes, " node(s) of ",
        hw.Label(), ": ", absl::StrJoin(why, "; "),
        ". Allow more nodes, sharding (zero3) or recomputation, or a larger budget/deadline"));
  }
  for (Candidate& cand : top) cand.prediction.extrapolated = ExtrapolationNote(w, hw, cand.config);
  for (Candidate& cand : pareto) {
    cand.prediction.extrapolated = ExtrapolationNote(w, hw, cand.config);
  }
  // The least-cost objective with a tolerance or a value of time: the fastest
  // point of the Pareto front within tolerance of the least value. The value
  // grows with both cost and time, so its minimum and every configuration
  // that is fastest within a bound of it lie on the front.
  std::string chosen_why;
  const bool tolerant = limits.objective == Objective::kCost &&
                        (limits.cost_tolerance > 0 || limits.time_value_per_hour > 0);
  if (tolerant && !pareto.empty()) {
    auto value = [&](const Prediction& p) {
      return p.cost + limits.time_value_per_hour * p.time_to_solution_s / 3600;
    };
    double least = value(pareto.front().prediction);
    for (const Candidate& cand : pareto) least = std::min(least, value(cand.prediction));
    const double bound = least * (1 + limits.cost_tolerance);
    // Ascending time: the first within the bound is the fastest.
    auto pick = std::find_if(pareto.begin(), pareto.end(),
                             [&](const Candidate& k) { return value(k.prediction) <= bound; });
    if (pick != pareto.end()) {
      const Candidate cheapest = top.front();
      std::erase_if(top, [&](const Candidate& k) {
        return StrategyName(k.config) == StrategyName(pick->config) &&
               k.config.nodes == pick->config.nodes &&
               k.config.gpus_per_node == pick->config.gpus_per_node &&
               k.config.micro_batch == pick->config.micro_batch &&
               k.config.grad_accum == pick->config.grad_accum &&
               k.config.recompute == pick->config.recompute &&
               k.config.selective_recompute == pick->config.selective_recompute &&
               k.config.global_batch == pick->config.global_batch;
      });
      top.insert(top.begin(), *pick);
      if (top.size() > keep) top.pop_back();
      const std::string measure = limits.time_value_per_hour > 0
                                      ? absl::StrFormat("cost + %s per hour of time to solution",
                                                        Money(limits.time_value_per_hour))
                                      : std::string("cost");
      chosen_why = absl::StrFormat(
          "fastest configuration whose %s is within %.1f%% of the least (%s; the least-cost one, "
          "%s, takes %s for %s)",
          measure, 100 * limits.cost_tolerance, Money(least), StrategyName(cheapest.config),
          Hours(cheapest.prediction.time_to_solution_s), Money(cheapest.prediction.cost));
    }
  }
  result.best = top.front();
  const bool by_time =
      limits.objective == Objective::kTime || limits.objective == Objective::kTimeUnderBudget;
  const Prediction& b = result.best.prediction;
  result.best.why = absl::StrCat(
      !chosen_why.empty() ? chosen_why
      : by_time           ? "least time to solution"
                          : "least cost to solution",
      " of ", result.feasible, " feasible configurations (", result.evaluated, " scored, ",
      result.pruned, " ruled out by a memory bound): ", StrategyName(result.best.config), " on ",
      result.best.config.nodes, "x", result.best.config.gpus_per_node, " GPUs, ",
      Hours(b.time_to_solution_s), ", cost ", Money(b.cost),
      b.segments <= 1
          ? std::string()
          : absl::StrFormat(", as %d checkpointed jobs of at most %s each (time limit; %s "
                            "restarting each after the first)",
                            b.segments, Hours(limits.time_limit_s),
                            Hours(limits.segment_restart_s)),
      b.extrapolated.empty() ? std::string() : absl::StrCat(". Extrapolated: ", b.extrapolated));
  for (size_t i = 1; i < top.size(); ++i) {
    Candidate& a = top[i];
    const Prediction& p = a.prediction;
    const double dc = b.cost > 0 ? 100.0 * (p.cost / b.cost - 1) : 0;
    const double dt =
        b.time_to_solution_s > 0 ? 100.0 * (p.time_to_solution_s / b.time_to_solution_s - 1) : 0;
    a.why = by_time ? absl::StrFormat("time: %+.1f%% time to solution (cost %+.1f%%)", dt, dc)
                    : absl::StrFormat("cost: %+.1f%% cost (time to solution %+.1f%%)", dc, dt);
    // Its own extrapolation, where it is not the best one's (said above).
    if (!p.extrapolated.empty() && p.extrapolated != b.extrapolated) {
      absl::StrAppend(&a.why, "; extrapolated: ", p.extrapolated);
    }
    result.alternatives.push_back(std::move(a));
  }
  for (Candidate& cand : pareto) {
    cand.why = "pareto: no other configuration is both faster and cheaper";
    result.pareto.push_back(std::move(cand));
  }
  return result;
}

}  // namespace

}  // namespace xdeep::tuner
