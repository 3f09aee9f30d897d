// Accuracy of the modelers on the synthetic cases (synthetic_cases.h): per
// noise condition, true-model recovery and the median / 95th-percentile /
// worst held-out error of every xdeep modeler and, given its results, of
// Extra-P itself (extrap_models.py; run_accuracy.sh runs the whole chain).
//
//   xdeep_modeling_accuracy [--seed N] --cases-out FILE   write the cases for Extra-P, exit
//   xdeep_modeling_accuracy [--seed N] [--extrap FILE] [--csv FILE] [--dims N] [--skip-generic]
//
// --seed picks the noise draw (default: the development seed, 1000); the
// Extra-P results must come from cases written with the same seed.
//
// Without --extrap the Extra-P column is absent; the Extra-P mode modeler
// (which selects Extra-P 4.2.5's model on all 791 conformance cases) stands
// in as the reference for the per-case comparison.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/modeling/synthetic_cases.h"
#include "tuner/modeling/generic_expression.h"
#include "tuner/modeling/model_selection.h"
#include "tuner/modeling/pmnf.h"

namespace {

using namespace xdeep::modeling;
using xdeep::modeling::bench::SyntheticCase;

struct Result {
  double error = std::numeric_limits<double>::infinity();  // held-out, %
  bool recovered = false;
  std::string model;
  std::string detail;  // e.g. the winning modeler
};

struct Modeler {
  std::string name;
  std::function<absl::StatusOr<Model>(const SyntheticCase&, std::string*)> fit;
};

Result Judge(const SyntheticCase& c, const absl::StatusOr<Model>& m) {
  Result r;
  if (!m.ok()) {
    r.model = std::string(m.status().message());
    return r;
  }
  std::vector<double> predicted;
  for (const auto& x : c.held_out) predicted.push_back(m->Evaluate(x));
  r.error = bench::HeldOutError(c, predicted);
  r.recovered = !c.truth.empty() && bench::StructureKey(*m) == c.truth;
  r.model = m->ToString(c.params);
  return r;
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - 1);
  return v[i];
}

void WriteCases(const std::vector<SyntheticCase>& cases, uint64_t seed, const char* path) {
  nlohmann::json out;
  out["seed"] = seed;
  out["cases"] = nlohmann::json::array();
  for (const SyntheticCase& c : cases) {
    nlohmann::json j;
    j["id"] = c.id;
    j["params"] = c.params;
    j["points"] = nlohmann::json::array();
    for (const Measurement& m : c.points)
      j["points"].push_back({{"x", m.coordinate}, {"v", m.values}});
    j["held_out"] = c.held_out;
    out["cases"].push_back(std::move(j));
  }
  std::ofstream(path) << out.dump();
}

// Extra-P's results, or an error message (unreadable, or another seed's).
std::map<int, Result> ReadExtraP(const std::vector<SyntheticCase>& cases, uint64_t seed,
                                 const char* path, double* seconds, std::string* error) {
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("results")) {
    *error = std::string(path) + " is not extrap_models.py's output; rerun run_accuracy.sh";
    return {};
  }
  // Files from before seeds were recorded hold the development seed's cases.
  const uint64_t file_seed = j.contains("seed") && j["seed"].is_number_unsigned()
                                 ? j["seed"].get<uint64_t>()
                                 : bench::kDevelopmentSeed;
  if (file_seed != seed) {
    *error = std::string(path) + " holds Extra-P's results for noise seed " +
             std::to_string(file_seed) + ", not " + std::to_string(seed) +
             "; pass the same --seed or rerun run_accuracy.sh with SEED=" + std::to_string(seed);
    return {};
  }
  *seconds = j.value("seconds", 0.0);
  std::map<int, Result> out;
  for (const auto& r : j.at("results")) {
    const int id = r.at("id").get<int>();
    if (id < 0 || id >= static_cast<int>(cases.size())) continue;
    const SyntheticCase& c = cases[id];
    Result res;
    res.error = bench::HeldOutError(c, r.at("held_out").get<std::vector<double>>());
    const std::string key =
        bench::StructureKey(r.at("terms").get<std::vector<std::vector<std::vector<double>>>>());
    res.recovered = !c.truth.empty() && key == c.truth;
    res.model = r.at("model").get<std::string>();
    out[id] = res;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const char* extrap_path = nullptr;
  const char* csv_path = nullptr;
  int only_dims = 0;
  bool skip_generic = false;
  uint64_t seed = bench::kDevelopmentSeed;
  const char* cases_out = nullptr;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--seed") && has_value) {
      char* end = nullptr;
      seed = std::strtoull(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0') {
        std::fprintf(stderr, "--seed needs a non-negative integer, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--cases-out") && has_value) {
      cases_out = argv[++i];
    } else if (!std::strcmp(argv[i], "--extrap") && has_value) {
      extrap_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--csv") && has_value) {
      csv_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--dims") && has_value) {
      only_dims = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--skip-generic")) {
      skip_generic = true;
    } else {
      std::fprintf(stderr,
                   "unknown or incomplete option %s\nusage: %s [--seed N] [--cases-out FILE] "
                   "[--extrap FILE] [--csv FILE] [--dims 1|2|3] [--skip-generic]\n",
                   argv[i], argv[0]);
      return 2;
    }
  }

  const std::vector<SyntheticCase> cases = bench::SyntheticCases(seed);
  if (cases_out != nullptr) {
    WriteCases(cases, seed, cases_out);
    std::printf("wrote %zu cases (seed %llu) to %s\n", cases.size(),
                static_cast<unsigned long long>(seed), cases_out);
    return 0;
  }

  std::vector<Modeler> modelers = {
      {"xdeep Extra-P mode", [](const SyntheticCase& c,
                                std::string*) { return Fit(c.points, ModelerOptions::ExtraP()); }},
      {"xdeep robust", [](const SyntheticCase& c,
                          std::string*) { return Fit(c.points, ModelerOptions::Robust()); }},
      {"xdeep robust absolute-LS",
       [](const SyntheticCase& c, std::string*) {
         ModelerOptions o = ModelerOptions::Robust();
         o.relative_least_squares = false;
         return Fit(c.points, o);
       }},
      {"xdeep averaged",
       [](const SyntheticCase& c, std::string*) {
         return c.params.size() == 1 ? Fit(c.points, ModelerOptions::Robust())
                                     : FitAveraged(c.points, 10);
       }},
      {"xdeep default (selected)",
       [](const SyntheticCase& c, std::string* detail) -> absl::StatusOr<Model> {
         absl::StatusOr<SelectedModel> s = FitSelected(c.points);
         if (!s.ok()) return s.status();
         *detail = s->Explain();
         return s->model;
       }},
  };
  if (!skip_generic) {
    modelers.push_back({"xdeep generic (DE)", [](const SyntheticCase& c, std::string*) {
                          absl::StatusOr<GenericFit> g = FitGenericExpression(c.points);
                          if (!g.ok()) return absl::StatusOr<Model>(g.status());
                          return absl::StatusOr<Model>(g->model);
                        }});
  }
  std::vector<std::string> columns;
  for (const Modeler& m : modelers) columns.push_back(m.name);
  std::map<int, Result> extrap;
  double extrap_seconds = 0.0;
  if (extrap_path != nullptr) {
    std::string error;
    extrap = ReadExtraP(cases, seed, extrap_path, &extrap_seconds, &error);
    if (!error.empty()) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    columns.insert(columns.begin(), "Extra-P 4.2.5");
  }

  // results[case][column]
  std::vector<const SyntheticCase*> selected;
  for (const SyntheticCase& c : cases) {
    if (only_dims == 0 || static_cast<int>(c.params.size()) == only_dims) selected.push_back(&c);
  }
  std::vector<std::vector<Result>> results;
  std::vector<double> seconds(modelers.size(), 0.0), slowest(modelers.size(), 0.0);
  for (const SyntheticCase* c : selected) {
    std::vector<Result> row;
    if (extrap_path != nullptr) {
      auto it = extrap.find(c->id);
      row.push_back(it != extrap.end() ? it->second : Result{});
    }
    for (size_t m = 0; m < modelers.size(); ++m) {
      std::string detail;
      // CPU time of this thread: the 2-core machine is shared, and wall time
      // there counts the other builds' load.
      const double start = ThreadCpuSeconds();
      const absl::StatusOr<Model> fit = modelers[m].fit(*c, &detail);
      const double s = ThreadCpuSeconds() - start;
      seconds[m] += s;
      if (c->params.size() == 2) slowest[m] = std::max(slowest[m], s);
      row.push_back(Judge(*c, fit));
      row.back().detail = detail;
    }
    results.push_back(std::move(row));
  }

  std::printf(
      "xdeep modeling accuracy: %zu synthetic cases (%s, noise seed %llu), held-out error = "
      "mean relative error at 8-64x the largest measured values\n",
      selected.size(), only_dims ? "one dimension" : "1-3 parameters",
      static_cast<unsigned long long>(seed));
  // Noise conditions in first-seen order.
  std::vector<std::string> labels;
  for (const SyntheticCase* c : selected) {
    if (std::find(labels.begin(), labels.end(), c->NoiseLabel()) == labels.end())
      labels.push_back(c->NoiseLabel());
  }
  const char* metrics[] = {"true-model recovery (PMNF-space cases)", "median held-out error %",
                           "mean held-out error %", "95th-percentile held-out error %",
                           "worst held-out error %"};
  for (int metric = 0; metric < 5; ++metric) {
    std::printf("\n%s\n%-10s", metrics[metric], "noise");
    for (const std::string& col : columns) std::printf(" %24s", col.c_str());
    std::printf("\n");
    std::vector<std::string> rows = labels;
    rows.push_back("all");
    for (const std::string& label : rows) {
      std::printf("%-10s", label.c_str());
      for (size_t col = 0; col < columns.size(); ++col) {
        std::vector<double> errors;
        int recovered = 0, pmnf = 0;
        for (size_t i = 0; i < selected.size(); ++i) {
          if (label != "all" && selected[i]->NoiseLabel() != label) continue;
          errors.push_back(results[i][col].error);
          if (!selected[i]->truth.empty()) {
            ++pmnf;
            recovered += results[i][col].recovered ? 1 : 0;
          }
        }
        if (metric == 0) {
          std::printf(" %17d / %4d", recovered, pmnf);
        } else if (metric == 2) {
          double sum = 0.0;
          for (double e : errors) sum += e;
          std::printf(" %24.2f", sum / static_cast<double>(errors.size()));
        } else {
          const double q = metric == 1 ? 0.5 : metric == 3 ? 0.95 : 1.0;
          std::printf(metric == 1 ? " %24.3f" : " %24.2f", Percentile(errors, q));
        }
      }
      std::printf("\n");
    }
  }
  std::printf("\nfit CPU time, all cases (s) / slowest 2-parameter fit (ms):");
  if (extrap_path != nullptr) std::printf(" Extra-P %.1f s;", extrap_seconds);
  for (size_t m = 0; m < modelers.size(); ++m) {
    std::printf(" %s %.2f s / %.1f ms;", modelers[m].name.c_str(), seconds[m], slowest[m] * 1e3);
  }
  std::printf("\n");

  // The default against the reference, case by case.
  const size_t reference = 0;  // Extra-P itself, else the Extra-P mode
  size_t default_col = 0;
  for (size_t col = 0; col < columns.size(); ++col) {
    if (columns[col] == "xdeep default (selected)") default_col = col;
  }
  // Every case where the default is worse by > 0.1 pp, and how many by > 2 pp.
  std::printf("\ncases where the default is > 0.1 pp worse than %s:\n", columns[reference].c_str());
  int worse = 0, much_worse = 0;
  for (size_t i = 0; i < selected.size(); ++i) {
    const Result& ref = results[i][reference];
    const Result& def = results[i][default_col];
    if (!(def.error > ref.error + 0.1)) continue;
    ++worse;
    much_worse += def.error > ref.error + 2.0 ? 1 : 0;
    std::printf(
        "  #%d %s, %s: default %.2f %% vs %.2f %% (%+.2f pp)\n    default: %s\n    %s: %s\n",
        selected[i]->id, selected[i]->function.c_str(), selected[i]->NoiseLabel().c_str(),
        def.error, ref.error, def.error - ref.error, def.detail.c_str(), columns[reference].c_str(),
        ref.model.c_str());
  }
  std::printf("  %d of %zu worse by > 0.1 pp, %d by > 2 pp\n", worse, selected.size(), much_worse);

  if (csv_path != nullptr) {
    std::ofstream csv(csv_path);
    csv << "id,function,noise,column,error,recovered,model,detail\n";
    for (size_t i = 0; i < selected.size(); ++i) {
      for (size_t col = 0; col < columns.size(); ++col) {
        const Result& r = results[i][col];
        csv << selected[i]->id << ",\"" << selected[i]->function << "\","
            << selected[i]->NoiseLabel() << ",\"" << columns[col] << "\"," << r.error << ","
            << r.recovered << ",\"" << r.model << "\",\"" << r.detail << "\"\n";
      }
    }
  }
  return 0;
}
