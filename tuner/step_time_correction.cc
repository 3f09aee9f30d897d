// Learning from reported runs by component (see step_time_correction.h).
#include "tuner/step_time_correction.h"

#include <cmath>

namespace xdeep::tuner {

std::string LearningMode(const Configuration& c) {
  std::string mode;
  auto add = [&](const char* part) {
    if (!mode.empty()) mode += '+';
    mode += part;
  };
  if (c.dp > 1) {
    switch (c.sharding) {
      case Sharding::kNone:
        add("ddp");
        break;
      case Sharding::kZero1:
        add("zero1");
        break;
      case Sharding::kZero2:
        add("zero2");
        break;
      case Sharding::kZero3:
        add("fsdp");
        break;
    }
  }
  if (c.tp > 1) add("tp");
  if (c.pp > 1) add("pp");
  if (c.cp > 1) add("cp");
  return mode.empty() ? "single" : mode;
}

std::vector<double> CorrectionParameters(const Configuration& c) {
  return {static_cast<double>(c.TotalGpus()), static_cast<double>(c.micro_batch)};
}

namespace {

StepTime ScaledComponent(const StepTime& st, modeling::StepComponent component, double f) {
  return component == modeling::StepComponent::kHost ? StrategyModel::ScaledCompute(st, 1, f)
                                                     : StrategyModel::ScaledCompute(st, f, 1);
}

}  // namespace

modeling::Outcome ReportedOutcome(const Configuration& c, const StepTime& predicted,
                                  double measured_over_predicted) {
  const modeling::StepComponent component = predicted.bound() == StepTime::Bound::kHost
                                                ? modeling::StepComponent::kHost
                                                : modeling::StepComponent::kKernel;
  const double part = component == modeling::StepComponent::kHost ? predicted.host_s()
                                                                   : predicted.kernel_s();
  const double target = measured_over_predicted * predicted.total_s;
  // The step grows monotonically with either component's factor: bisection
  // over log(factor) in [1/16, 16].
  constexpr double kBound = 16;
  double lo = -std::log(kBound), hi = std::log(kBound);
  if (!(part > 0) || !(target > 0) || !std::isfinite(target)) {
    lo = hi = std::log(std::isfinite(measured_over_predicted) && measured_over_predicted > 0
                           ? measured_over_predicted
                           : 1.0);
  } else if (ScaledComponent(predicted, component, kBound).total_s <= target) {
    lo = hi;
  } else if (ScaledComponent(predicted, component, 1 / kBound).total_s >= target) {
    hi = lo;
  }
  for (int i = 0; i < 80 && hi - lo > 1e-13; ++i) {
    const double mid = 0.5 * (lo + hi);
    (ScaledComponent(predicted, component, std::exp(mid)).total_s < target ? lo : hi) = mid;
  }
  const double factor = std::exp(0.5 * (lo + hi));
  const double base = part > 0 ? part : predicted.total_s;
  return {CorrectionParameters(c), base, base * factor, component, LearningMode(c)};
}

namespace {

// c's mode's factors on its kernel and host time.
std::pair<double, double> Factors(const modeling::ComponentCorrection& correction,
                                  const Configuration& c) {
  const std::string mode = LearningMode(c);
  const std::vector<double> x = CorrectionParameters(c);
  return {correction.Factor(mode, modeling::StepComponent::kKernel, x),
          correction.Factor(mode, modeling::StepComponent::kHost, x)};
}

StepTime Scaled(const StepTime& analytical, std::pair<double, double> factors) {
  const auto [kf, hf] = factors;
  return kf == 1 && hf == 1 ? analytical : StrategyModel::ScaledCompute(analytical, kf, hf);
}

}  // namespace

StepTime CorrectedStepTime(const modeling::ComponentCorrection& correction,
                           const Configuration& c, const StepTime& analytical) {
  if (correction.is_identity()) return analytical;
  return Scaled(analytical, Factors(correction, c));
}

StepTime StepTimeCorrector::operator()(const Configuration& c, const StepTime& analytical) {
  auto [it, fresh] =
      factors_.try_emplace({LearningMode(c), c.TotalGpus(), c.micro_batch}, 1.0, 1.0);
  if (fresh) it->second = Factors(*correction_, c);
  return Scaled(analytical, it->second);
}

}  // namespace xdeep::tuner
