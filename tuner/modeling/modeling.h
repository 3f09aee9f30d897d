// xdeep::modeling — empirical scaling models (the Extra-Deep half of xdeep).
// One include for the tuner; a pure library: no I/O, no logging, no threads.
//
// What it does
//   * PMNF fitting, Extra-P's method (pmnf.h): f(x) = c0 + Σ c_k·Π x^i·log2(x)^j,
//     single- and multi-parameter, leave-one-out cross-validation, SMAPE
//     selection against a constant baseline. With ModelerOptions::ExtraP()
//     (the default) it selects the same model as Extra-P 4.2 on Extra-P's own
//     test cases (tests/tuner/modeling/extrap_conformance_test.cc);
//     ModelerOptions::Robust() is xdeep's choice for noisy, sparse probes.
//   * The default modeler (model_selection.h): Extra-P's model unless the
//     joint search extrapolates clearly better in cross-validation; says
//     which won and with what error.
//   * Generic expressions by differential evolution (generic_expression.h,
//     pagmo2) over rounded exponents, after Kavarakuntla et al.
//   * Quality of every fit (model.h): RSS, SMAPE, adjusted R², leave-one-out
//     errors, and Uncertainty()/Predict() for a new measurement anywhere.
//   * The sampling planner (sampling_planner.h): what to probe next within a
//     budget, and how a plan compares with the full grid.
//   * ScalingCorrection (scaling_correction.h): learns measured / predicted
//     from real runs and corrects analytical predictions.
//
// Typical use by the tuner (where it does: tuner/hardware_profile.cc extends
// collective latency over rank counts and a GEMM layer's time over tokens
// beyond the probed micro-batches with FitCurveSelected; the daemon corrects
// its predictions from real runs with ScalingCorrection)
//
//   absl::StatusOr<SelectedModel> lat = FitCurveSelected(ranks, seconds);
//   lat->model.Evaluate(512.0);
//   lat->Explain()  // "... (modeler Extra-P, cross-validated error 1.2 % vs robust 3.4 %)"
//
//   using namespace xdeep::modeling;
//   // Extrapolate all-reduce time over rank count from probe figures.
//   absl::StatusOr<Model> ar = FitCurve(ranks, seconds, ModelerOptions::Robust());
//   if (!ar.ok()) return ar.status();
//   const double at_512 = ar->Evaluate(512.0);
//   const double x[] = {512.0};
//   const PredictionInterval pi = ar->Predict(x, 0.95);   // prefer low pi.stddev
//   // ar->ToString() == "0.0021 + 0.00043 * log2(p)^(1)" (Extra-P notation)
//
//   // Two parameters (nodes × micro-batch), points need not form a full grid.
//   std::vector<Measurement> pts = {{{nodes, mb}, {t1, t2, t3}}, ...};
//   absl::StatusOr<Model> step = Fit(pts, ModelerOptions::Robust());
//
//   // Refine the analytical model from real runs the daemon stored.
//   std::vector<Outcome> runs = {{{nodes, mb}, predicted_s, measured_s}, ...};
//   absl::StatusOr<ScalingCorrection> corr = ScalingCorrection::Fit(runs);
//   const double corrected = corr->Apply(params, analytical_seconds);
//
//   // Plan probes: cost = nodes × expected seconds, budget 10 % of the grid.
//   absl::StatusOr<SamplingPlanner> planner = SamplingPlanner::Create(
//       {{1, 2, 4, 8, 16, 32}, {1, 2, 4, 8}},
//       [&](std::span<const double> x) { return x[0] * guess(x); });
//   // either step by step (the daemon probes between calls) ...
//   absl::StatusOr<std::optional<Point>> next = planner->Next(measured, spent);
//   // ... or all at once with a probe callback:
//   absl::StatusOr<PlanReport> plan = planner->Run(probe);   // plan->model, plan->cost_fraction
//
// Errors are absl::Status (InvalidArgument for bad input); nothing throws.
#ifndef XDEEP_TUNER_MODELING_MODELING_H_
#define XDEEP_TUNER_MODELING_MODELING_H_

#include "tuner/modeling/generic_expression.h"
#include "tuner/modeling/model.h"
#include "tuner/modeling/model_selection.h"
#include "tuner/modeling/pmnf.h"
#include "tuner/modeling/sampling_planner.h"
#include "tuner/modeling/scaling_correction.h"
#include "tuner/modeling/terms.h"

#endif  // XDEEP_TUNER_MODELING_MODELING_H_
