// The roofline estimator (Williams, Waterman, Patterson, "Roofline: an insightful visual
// performance model", CACM 2009), with achievable fractions per op class and a launch overhead:
//
//   time = overhead + max(FLOPs / (peak(dtype, class) * f_compute(class)),
//                         bytes / (bandwidth * f_memory(class)))
//
// peak(dtype, class) is the matrix-unit peak for the op's element type for gemm and convolution,
// the vector-unit peak for every other class. An op with no FLOPs and no bytes (a reshape that is
// a bitcast) costs nothing: no kernel runs. Fusion of elementwise chains into their producers is a
// program-level decision made where the op graph is known (the counting layer), not here.
#pragma once

#include "compute/estimator.h"

namespace orrery::compute {

// The three terms of the formula above, in seconds.
struct RooflineTerms {
  double compute_s = 0.0;
  double memory_s = 0.0;
  double overhead_s = 0.0;
  [[nodiscard]] double total_s() const;
  [[nodiscard]] Bound bound() const;
};

RooflineTerms roofline_terms(const OpSignature& op, const RooflineParameters& parameters);

class RooflineEstimator final : public Estimator {
 public:
  [[nodiscard]] std::string_view name() const override { return "roofline"; }
  [[nodiscard]] Estimate estimate(const OpSignature& op, const Hardware& hardware) const override;
};

}  // namespace orrery::compute
