// Benchmark: the tuner against published large training runs
// (bench/scale/published_runs.csv). For each row: the prediction for the
// published layout (iteration time and TFLOP/s per GPU counted the paper's
// way) against the paper's figure, and the tuner's own pick on the same GPUs
// and global batch against that prediction. Calibration rows and the
// independent check rows (never used to choose a figure) are summarised
// separately.
//
//   published_runs_bench [CSV] [--no-search] [--set calibration|check] [--terms] [--compare]
//
// --compare: the published layout and the pick with the run's software side
// by side, term by term (StepTerms: passes, recomputation, TP / CP / PP
// communication, exposed ZeRO-2 / FSDP and DP traffic, bubble, optimizer;
// memory by kind).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tuner/fabric.h"
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace {

using namespace xdeep::tuner;

// Splits one CSV line; quoted fields may hold commas.
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  out.push_back(cur);
  return out;
}

struct Row {
  std::map<std::string, std::string> f;
  const std::string& S(const std::string& k) const {
    static const std::string empty;
    auto it = f.find(k);
    return it == f.end() ? empty : it->second;
  }
  double D(const std::string& k) const { return S(k).empty() ? 0 : std::atof(S(k).c_str()); }
  int I(const std::string& k) const { return static_cast<int>(D(k)); }
};

// FLOPs of one iteration as the paper counts them.
double PaperFlops(const Row& r) {
  const double B = r.D("global_batch"), s = r.D("seq"), l = r.D("layers"), h = r.D("hidden"),
               V = r.D("vocab");
  const std::string how = r.S("flops");
  if (how == "megatron-hfu") return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  if (how == "megatron-mfu") return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  // palm: Chowdhery et al. 2022, appendix B (the usual MFU): 6 N per token
  // for the weights' matmuls and 12 l h s for attention, the masked half of
  // a causal mask counted too.
  const double f = r.D("ffn"), kvd = h / r.D("heads") * r.D("kv_heads");
  const double per_layer = h * (h + 2 * kvd) + h * h + (r.I("gated") ? 3 : 2) * h * f;
  const double n = l * per_layer + 2 * V * h;
  return B * s * (6 * n + 12 * l * h * s);
}

// The csv's engine column: deepspeed-2021 is [model] deepspeed_release,
// megatron-2021 / -2022 Megatron-LM of that year ([model] megatron_release),
// megatron megatron-core.
struct Engine {
  const char* name;
  PipelineParallel pipeline;
  MegatronRelease megatron = MegatronRelease::kCore;
  DeepSpeedRelease deepspeed = DeepSpeedRelease::kCurrent;
};
constexpr Engine kEngines[] = {
    {"megatron", PipelineParallel::kMegatron},
    {"megatron-2021", PipelineParallel::kMegatron, MegatronRelease::k2021},
    {"megatron-2022", PipelineParallel::kMegatron, MegatronRelease::k2022},
    {"deepspeed", PipelineParallel::kDeepSpeed},
    {"deepspeed-2021", PipelineParallel::kDeepSpeed, MegatronRelease::kCore,
     DeepSpeedRelease::k2021},
};

const Engine* EngineNamed(const std::string& name) {
  for (const Engine& e : kEngines) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

Workload MakeWorkload(const Row& r) {
  Workload w;
  w.name = r.S("model");
  w.family = ModelFamily::kTransformer;
  TransformerShape& t = w.transformer;
  t.layers = r.I("model_layers") > 0 ? r.I("model_layers") : r.I("layers");
  t.hidden = r.I("hidden");
  t.heads = r.I("heads");
  t.kv_heads = r.I("kv_heads");
  t.ffn = r.I("ffn");
  t.seq_len = r.I("seq");
  t.vocab = r.I("vocab");
  t.gated_mlp = r.I("gated") != 0;
  t.tied_embeddings = !t.gated_mlp;  // GPT-3 / BLOOM tie them; Llama does not
  t.learned_positions = r.S("model").rfind("gpt", 0) == 0 || r.S("model").rfind("mtnlg", 0) == 0;
  // Megatron / DeepSpeed: bf16 weights and gradients with fp32 master weights,
  // fused kernels (as torch.compile's fusion), FlashAttention-like attention.
  w.precision = Precision::kBf16Mixed;
  w.optimizer = OptimizerKind::kAdamW;
  w.settings.optimizer_impl = OptimizerImpl::kFused;
  w.settings.compile = true;
  w.settings.tensor_parallel = TensorParallel::kMegatron;
  w.settings.attention =
      r.S("attention") == "math" ? AttentionKernel::kMath : AttentionKernel::kFlash;
  w.settings.linear_bias = r.I("bias") != 0;
  const Engine& engine = *EngineNamed(r.S("engine"));  // checked in main
  w.settings.pipeline_parallel = engine.pipeline;
  w.settings.megatron_release = engine.megatron;
  w.settings.deepspeed_release = engine.deepspeed;
  w.settings.activation = t.gated_mlp ? Activation::kSilu : Activation::kGelu;
  w.settings.pipeline_ends_as_layers = r.I("split_ends") != 0;
  w.settings.fp32_grad_reduce = r.S("grad_reduce") == "fp32";
  w.settings.pipeline_async_p2p = r.S("p2p") == "async";
  BuildTransformerLayers(w);
  w.reference_global_batch = w.min_global_batch = w.max_global_batch = r.I("global_batch");
  w.batch_may_change = false;
  w.samples = 1e12 / t.seq_len;
  w.max_micro_batch = 16;
  return w;
}

Configuration MakeConfig(const Row& r, int gpn) {
  Configuration c;
  c.gpus_per_node = gpn;
  c.nodes = r.I("gpus") / gpn;
  c.tp = r.I("tp");
  c.pp = r.I("pp");
  c.cp = std::max(1, r.I("cp"));
  c.dp = r.I("dp");
  c.sequence_parallel = r.I("sp") != 0 && c.tp > 1;
  const std::string sh = r.S("sharding");
  c.sharding = sh == "zero1"   ? Sharding::kZero1
               : sh == "zero2" ? Sharding::kZero2
               : sh == "fsdp"  ? Sharding::kZero3
                               : Sharding::kNone;
  c.micro_batch = std::max(1, r.I("micro_batch"));
  c.global_batch = r.I("global_batch");
  c.grad_accum = static_cast<int>(c.global_batch / (int64_t{c.dp} * c.micro_batch));
  c.recompute = r.S("recompute") == "full";
  c.selective_recompute = r.S("recompute") == "selective";
  const std::string sched = r.S("schedule");
  if (sched.rfind("interleaved", 0) == 0) {
    c.schedule = PipelineSchedule::kInterleaved;
    c.virtual_stages = std::atoi(sched.c_str() + sched.size() - 1);
  }
  return c;
}

// The published layout's configurations: one, or where the paper leaves the
// micro-batch or the interleaving depth out ("" / "interleaved-?"), every
// value of them the layout allows.
std::vector<Configuration> LayoutConfigs(const Row& r, const Workload& w, int gpn) {
  const Configuration base = MakeConfig(r, gpn);
  std::vector<int> mbs = {base.micro_batch};
  if (r.S("micro_batch").empty()) mbs = {1, 2, 4, 8, 16};
  std::vector<int> vs = {base.virtual_stages};
  const std::string sched = r.S("schedule");
  if (sched == "interleaved-?") vs = {2, 3, 4, 6, 8};
  if (sched == "?") vs = {1, 2, 3, 4};
  std::vector<Configuration> out;
  for (int mb : mbs) {
    for (int v : vs) {
      Configuration c = base;
      c.micro_batch = mb;
      if (c.global_batch % (int64_t{c.dp} * mb) != 0) continue;
      c.grad_accum = static_cast<int>(c.global_batch / (int64_t{c.dp} * mb));
      c.schedule = v > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
      c.virtual_stages = v;
      if (StructuralProblem(w, c).empty()) out.push_back(c);
    }
  }
  return out;
}

// One layout's step, term by term (seconds a step) and its memory (GiB), in
// PrintComparison's row order.
std::vector<double> Terms(StrategyModel& model, const Configuration& c, const HardwareProfile& hw) {
  StepTerms t;
  const StepTime st = model.Time(c, &t);
  const double m = st.micro_batches;
  const MemoryBreakdown mb = model.Memory(c);
  const double gib = 1 << 30;
  return {m, 1e3 * st.per_micro_batch_s, m * t.forward_s, m * t.backward_s, m * t.recompute_s,
           m * t.tp_comm_s, m * t.cp_comm_s, m * t.pp_comm_s, m * t.sharded_dp_s,
           m * t.accumulation_s - st.first_accumulation_s, st.bubble_s, t.dp_reduce_s,
           t.dp_gather_s, t.tied_s, st.optimizer_s, st.total_s, mb.weights / gib,
           mb.gradients / gib, mb.optimizer / gib, mb.activations / gib, mb.transient / gib,
           (mb.workspace + mb.reserved + mb.margin + mb.comm_buffers + mb.compute_weights +
            mb.ddp_rebuild) /
               gib,
           mb.Total() / gib, hw.memory_bytes / gib};
}

std::string LayoutName(const Configuration& c) {
  return "tp" + std::to_string(c.tp) + "pp" + std::to_string(c.pp) + "cp" + std::to_string(c.cp) +
         "dp" + std::to_string(c.dp);
}

void PrintComparison(const std::string& layout_name, const std::vector<double>& a,
                     const std::string& pick_name, const std::vector<double>& b) {
  static const char* kNames[] = {"micro-batches a step",
                                 "one micro-batch, slowest rank (ms)",
                                 "forward passes (kernels, as launched)",
                                 "backward passes",
                                 "recomputed forwards (full recomputation)",
                                 "TP collectives",
                                 "CP collectives",
                                 "PP transfers that wait",
                                 "ZeRO-2 / FSDP traffic exposed in the passes",
                                 "gradient accumulation passes",
                                 "bubble (fill and drain)",
                                 "DP gradient reduction exposed",
                                 "DP parameter all-gather (ZeRO)",
                                 "tied embedding reduction",
                                 "optimizer",
                                 "step (s)",
                                 "memory (GiB): weights",
                                 "  gradients",
                                 "  optimizer states",
                                 "  activations",
                                 "  transient",
                                 "  workspace + reserved + margin + buffers",
                                 "  total",
                                 "  card"};
  std::printf("    %-44s %12s %12s %10s\n", "compare (s a step unless said)", "published",
              "pick", "pick-pub");
  std::printf("    %-44s %12s %12s\n", "", layout_name.substr(0, 12).c_str(),
              pick_name.substr(0, 12).c_str());
  for (size_t i = 0; i < a.size(); ++i) {
    std::printf("    %-44s %12.3f %12.3f %+10.3f\n", kNames[i], a[i], b[i], b[i] - a[i]);
  }
}

struct Summary {
  std::vector<double> layout_err, pick_gain, pick_same_gain;
  int misses = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string path = "bench/scale/published_runs.csv";
  bool search = true;
  std::string only_set;  // --set calibration: leave the check rows unseen while modelling
  bool terms = false;     // --terms: the layout's micro-batch split into kernels and the rest
  bool compare = false;   // --compare: the layout and the run's-software pick term by term
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-search") {
      search = false;
    } else if (a == "--terms") {
      terms = true;
    } else if (a == "--compare") {
      compare = true;
    } else if (a == "--set" && i + 1 < argc) {
      only_set = argv[++i];
    } else {
      path = a;
    }
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "published_runs_bench: cannot read %s; run from the checkout's root\n",
                 path.c_str());
    return 2;
  }
  std::string line;
  std::vector<std::string> header;
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto cells = SplitCsv(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    Row r;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) r.f[header[i]] = cells[i];
    rows.push_back(std::move(r));
  }
  std::map<std::string, Summary> sums;
  std::printf("%-28s %-11s %6s %-30s %9s %9s %7s | %-40s %8s %6s\n", "run", "set", "GPUs", "layout",
              "paper", "model", "error", "tuner's pick", "pick/lay", "ms");
  for (const Row& r : rows) {
    if (!only_set.empty() && r.S("set") != only_set) continue;
    auto hw = BuiltinHardwareProfile(r.S("profile"));
    auto fabric = BuiltinFabric(r.S("fabric"));
    if (!hw.ok() || !fabric.ok()) {
      std::fprintf(
          stderr, "%s: %s\n", r.S("id").c_str(),
          std::string(hw.ok() ? fabric.status().message() : hw.status().message()).c_str());
      return 2;
    }
    hw->fabric = *fabric;
    if (EngineNamed(r.S("engine")) == nullptr) {
      std::string names;
      for (const Engine& e : kEngines) names += std::string(names.empty() ? "" : ", ") + e.name;
      std::fprintf(stderr, "%s: unknown engine '%s'; use one of %s\n", r.S("id").c_str(),
                   r.S("engine").c_str(), names.c_str());
      return 2;
    }
    const Workload w = MakeWorkload(r);
    const std::vector<Configuration> layouts = LayoutConfigs(r, w, hw->gpus_per_node);
    if (layouts.empty()) {
      std::fprintf(stderr, "%s: layout invalid: %s\n", r.S("id").c_str(),
                   StructuralProblem(w, MakeConfig(r, hw->gpus_per_node)).c_str());
      return 2;
    }
    StrategyModel model(w, *hw);
    // Where the paper leaves details out: the fastest that fits, else the fastest.
    Configuration c = layouts.front();
    StepTime st = model.Time(c);
    double mem = model.Memory(c).Total();
    for (const Configuration& k : layouts) {
      const StepTime t = model.Time(k);
      const double m = model.Memory(k).Total();
      const bool fits = m <= hw->memory_bytes, best_fits = mem <= hw->memory_bytes;
      if ((fits && !best_fits) || (fits == best_fits && t.total_s < st.total_s)) {
        c = k;
        st = t;
        mem = m;
      }
    }
    SearchLimits limits;
    limits.objective = Objective::kTime;
    limits.max_nodes = c.nodes;
    limits.max_total_gpus = c.TotalGpus();
    const double flops = PaperFlops(r);
    const double predicted_tflops = flops / st.total_s / c.TotalGpus() / 1e12;
    const double paper_tflops = r.D("published_iter_s") > 0
                                    ? flops / r.D("published_iter_s") / c.TotalGpus() / 1e12
                                    : r.D("published_tflops");
    const double err = predicted_tflops / paper_tflops - 1;
    // The tuner's pick with every strategy, and with only what the run's
    // software offered (its recomputation as the run had it).
    std::string pick = "-", pick_same = "-", pick_breakdown, pick_same_breakdown;
    double gain = 0, gain_same = 0, ms = 0;
    Configuration pick_config, pick_same_config;
    if (search) {
      auto run_search = [&](const Workload& sw, std::string* name, double* g,
                            std::string* breakdown, Configuration* picked) {
        const auto t0 = std::chrono::steady_clock::now();
        auto res = Search(sw, *hw, limits);
        ms = std::max(
            ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
        if (!res.ok()) {
          *name = std::string(res.status().message()).substr(0, 40);
          return;
        }
        const Configuration& b = res->best.config;
        *picked = b;
        *name = StrategyName(b) + " mb" + std::to_string(b.micro_batch) +
                (b.recompute             ? " rc"
                 : b.selective_recompute ? " src"
                                         : "");
        *g = st.total_s / res->best.prediction.step_time_s - 1;
        const StepTime t = model.Time(b);
        char line[200];
        std::snprintf(line, sizeof line,
                      "step %.2f s: compute %.2f, bubble %.2f, exposed comm %.2f, optimizer "
                      "%.2f; memory %.1f GiB",
                      t.total_s, t.compute_s, t.bubble_s, t.exposed_comm_s, t.optimizer_s,
                      model.Memory(b).Total() / (1 << 30));
        *breakdown = line;
      };
      run_search(w, &pick, &gain, &pick_breakdown, &pick_config);
      Workload same = w;
      std::string list = r.S("software");
      for (size_t at = 0; at < list.size();) {
        const size_t end = std::min(list.find(';', at), list.size());
        same.parallel.strategies.push_back(list.substr(at, end - at));
        at = end + 1;
      }
      const std::string rc = r.S("recompute");
      same.settings.activation_checkpointing = rc == "full"        ? Checkpointing::kOn
                                               : rc == "selective" ? Checkpointing::kTuned
                                                                   : Checkpointing::kOff;
      if (rc == "selective") same.parallel.recompute = "selective";
      run_search(same, &pick_same, &gain_same, &pick_same_breakdown, &pick_same_config);
    }
    Summary& s = sums[r.S("set")];
    s.layout_err.push_back(err);
    if (std::abs(err) > 0.10) ++s.misses;
    if (search) {
      s.pick_gain.push_back(gain);
      s.pick_same_gain.push_back(gain_same);
    }
    char layout[96];
    std::snprintf(layout, sizeof layout, "tp%d pp%d cp%d dp%d mb%d v%d%s", c.tp, c.pp, c.cp, c.dp,
                  c.micro_batch, c.virtual_stages, mem > hw->memory_bytes ? " OOM" : "");
    std::printf("%-28s %-11s %6d %-30s %9.1f %9.1f %+6.1f%% | %-40s %+7.1f%% %6.0f\n",
                r.S("id").c_str(), r.S("set").c_str(), c.TotalGpus(), layout, paper_tflops,
                predicted_tflops, 100 * err, pick.c_str(), 100 * gain, ms);
    std::printf("    same software: %-44s %+7.1f%%\n", pick_same.c_str(), 100 * gain_same);
    if (!pick_same_breakdown.empty()) {
      std::printf("    same software's pick: %s\n", pick_same_breakdown.c_str());
    }
    std::printf(
        "    step %.2f s: compute %.2f, bubble %.2f, exposed comm %.2f, optimizer %.2f; "
        "memory %.1f GiB\n",
        st.total_s, st.compute_s, st.bubble_s, st.exposed_comm_s, st.optimizer_s, mem / (1 << 30));
    if (terms) {
      // Per micro-batch of the slowest rank: its kernels (a recomputed forward
      // counted twice) and what the mode adds in the pass (tensor- and
      // context-parallel collectives, pipeline transfers, exposed ZeRO-2 /
      // FSDP traffic, accumulation passes, launches beyond kernels).
      const auto& p = st.passes;
      const double kernels = p.forwards * double(p.fwd_kernel_s) + p.bwd_kernel_s;
      std::printf(
          "    per micro-batch (x %d): %.1f ms = kernels %.1f (forward %.1f x %d, backward %.1f)"
          " + the mode's terms %.1f ms; fill and drain %.2f s\n",
          st.micro_batches, 1e3 * st.per_micro_batch_s, 1e3 * kernels, 1e3 * p.fwd_kernel_s,
          p.forwards, 1e3 * p.bwd_kernel_s, 1e3 * (st.per_micro_batch_s - kernels),
          st.fill_drain_s);
    }
    if (compare && search && pick_same_config.TotalGpus() > 0) {
      // The pick is scored by a model of the workload with the run's
      // software; the layout's model is the same but for the strategy list,
      // which Time() and Memory() do not read.
      PrintComparison(LayoutName(c), Terms(model, c, *hw), LayoutName(pick_same_config),
                      Terms(model, pick_same_config, *hw));
    }
    const MemoryBreakdown mb = model.Memory(c);
    const double gib = 1 << 30;
    std::printf(
        "    memory of rank %d (GiB): weights %.1f, gradients %.1f, optimizer %.1f, activations "
        "%.1f, transient %.1f, workspace + reserved + margin %.1f\n",
        mb.worst_rank, mb.weights / gib, mb.gradients / gib, mb.optimizer / gib,
        mb.activations / gib, mb.transient / gib,
        (mb.workspace + mb.reserved + mb.margin + mb.comm_buffers + mb.compute_weights +
         mb.ddp_rebuild) /
            gib);
  }
  for (const auto& [set, s] : sums) {
    double sum = 0, worst = 0, gain_worst = 0;
    for (double e : s.layout_err) {
      sum += std::abs(e);
      worst = std::max(worst, std::abs(e));
    }
    double same_worst = 0;
    for (double g : s.pick_gain) gain_worst = std::max(gain_worst, g);
    for (double g : s.pick_same_gain) same_worst = std::max(same_worst, g);
    std::printf(
        "%s: %zu runs, TFLOP/s per GPU error mean |%.1f %%|, worst %.1f %%, %d beyond 10 %%;"
        " tuner's pick at most %+.1f %% faster than the published layout (%+.1f %% with the"
        " run's software)\n",
        set.c_str(), s.layout_err.size(), 100 * sum / s.layout_err.size(), 100 * worst, s.misses,
        100 * gain_worst, 100 * same_worst);
  }
  return 0;
}
