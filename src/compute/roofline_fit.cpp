#include "compute/roofline_fit.h"

#include <cmath>
#include <limits>
#include <vector>

#include "compute/roofline.h"

namespace orrery::compute {
namespace {

// One row reduced to what the model needs: seconds at 100% of peak and of bandwidth.
struct Sample {
  double compute_s;
  double memory_s;
  double log_measured;
};

std::vector<double> grid(double low, double high, double step) {
  std::vector<double> values;
  const auto count = static_cast<int>(std::llround((high - low) / step));
  for (int i = 0; i <= count; ++i) {
    values.push_back(std::round((low + step * i) * 1e6) / 1e6);  // 0.3 + 14 * 0.05 is 1, not 1 + 2e-16
  }
  return values;
}

struct Best {
  Efficiency efficiency;
  double loss = std::numeric_limits<double>::infinity();
};

Best fit_class(const std::vector<Sample>& samples, double overhead_s, const std::vector<double>& computes,
               const std::vector<double>& memories) {
  Best best;
  // Scan from 1 down so that an unidentifiable fraction stays at 1.
  for (auto c = computes.rbegin(); c != computes.rend(); ++c) {
    for (auto m = memories.rbegin(); m != memories.rend(); ++m) {
      double loss = 0.0;
      for (const Sample& s : samples) {
        const double t = overhead_s + std::max(s.compute_s / *c, s.memory_s / *m);
        const double error = std::log(t) - s.log_measured;
        loss += error * error;
      }
      if (loss < best.loss - 1e-12) {
        best.loss = loss;
        best.efficiency = Efficiency{*c, *m};
      }
    }
  }
  return best;
}

}  // namespace

RooflineFit fit_roofline(std::span<const MeasuredOp> measured, const Hardware& hardware, const FitGrid& spec) {
  // Terms at efficiency 1 and no overhead.
  RooflineParameters unit = hardware.roofline;
  unit.efficiency.fill(Efficiency{});
  unit.launch_overhead = SimTime::zero();
  std::map<OpClass, std::vector<Sample>> by_class;
  for (const MeasuredOp& m : measured) {
    const RooflineTerms terms = roofline_terms(m.op, unit);
    by_class[m.op.op_class].push_back(Sample{terms.compute_s, terms.memory_s, std::log(m.time_s)});
  }
  // Fractions: a coarse grid, then the fine grid within one coarse step of the coarse optimum.
  const auto fit_at = [&](double overhead_us) {
    RooflineFit fit;
    fit.launch_overhead_us = overhead_us;
    for (const auto& [op_class, samples] : by_class) {
      const Best coarse = fit_class(samples, overhead_us * 1e-6, grid(spec.compute_min, 1.0, spec.coarse_step),
                                    grid(spec.memory_min, 1.0, spec.coarse_step));
      const auto around = [&](double centre, double low) {
        return grid(std::max(low, centre - spec.coarse_step + spec.fine_step),
                    std::min(1.0, centre + spec.coarse_step - spec.fine_step), spec.fine_step);
      };
      const Best fine = fit_class(samples, overhead_us * 1e-6, around(coarse.efficiency.compute, spec.compute_min),
                                  around(coarse.efficiency.memory, spec.memory_min));
      const Best& chosen = fine.loss < coarse.loss ? fine : coarse;
      fit.classes[op_class] = ClassFit{chosen.efficiency, samples.size(), chosen.loss};
      fit.loss += chosen.loss;
      fit.rows += samples.size();
    }
    return fit;
  };
  // Overhead: a coarse grid, then the fine grid within one coarse step of the coarse optimum.
  const auto best_of = [&](const std::vector<double>& overheads) {
    RooflineFit best;
    best.loss = std::numeric_limits<double>::infinity();
    for (const double overhead_us : overheads) {
      RooflineFit candidate = fit_at(overhead_us);
      if (candidate.loss < best.loss - 1e-12) {
        best = std::move(candidate);
      }
    }
    return best;
  };
  const RooflineFit coarse = best_of(grid(spec.overhead_min_us, spec.overhead_max_us, spec.overhead_coarse_step_us));
  const RooflineFit fine = best_of(grid(std::max(spec.overhead_min_us, coarse.launch_overhead_us - spec.overhead_coarse_step_us),
                                        std::min(spec.overhead_max_us, coarse.launch_overhead_us + spec.overhead_coarse_step_us),
                                        spec.overhead_fine_step_us));
  return fine.loss < coarse.loss ? fine : coarse;
}

Hardware with_fit(Hardware hardware, const RooflineFit& fit) {
  hardware.roofline.launch_overhead = SimTime::from_microseconds(fit.launch_overhead_us);
  for (const auto& [op_class, class_fit] : fit.classes) {
    hardware.roofline.efficiency[static_cast<std::size_t>(op_class)] = class_fit.efficiency;
  }
  return hardware;
}

}  // namespace orrery::compute
