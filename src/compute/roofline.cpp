#include "compute/roofline.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/assert.h"

namespace orrery::compute {

double RooflineTerms::total_s() const {
  if (compute_s == 0.0 && memory_s == 0.0) {
    return 0.0;
  }
  return overhead_s + std::max(compute_s, memory_s);
}

Bound RooflineTerms::bound() const {
  if (compute_s == 0.0 && memory_s == 0.0) {
    return Bound::kNone;
  }
  const double work = std::max(compute_s, memory_s);
  if (overhead_s > work) {
    return Bound::kOverhead;
  }
  return compute_s >= memory_s ? Bound::kCompute : Bound::kMemory;
}

RooflineTerms roofline_terms(const OpSignature& op, const RooflineParameters& parameters) {
  const Efficiency& efficiency = parameters.efficiency_for(op.op_class);
  RooflineTerms terms;
  if (op.flops.value > 0.0) {
    const FlopsPerSecond peak = parameters.peak_for(op);
    ORRERY_ASSERT(peak.value > 0.0, "a validated preset has a peak for every element type");
    terms.compute_s = op.flops.value / (peak.value * efficiency.compute);
  }
  if (op.bytes().count > 0) {
    terms.memory_s = op.bytes().as_double() / (parameters.memory_bandwidth.value * efficiency.memory);
  }
  terms.overhead_s = parameters.launch_overhead.seconds();
  return terms;
}

Estimate RooflineEstimator::estimate(const OpSignature& op, const Hardware& hardware) const {
  const RooflineTerms terms = roofline_terms(op, hardware.roofline);
  Estimate estimate;
  estimate.time = SimTime::from_seconds(terms.total_s());
  estimate.flops = op.flops;
  estimate.bytes = op.bytes();
  estimate.bound = terms.bound();
  estimate.estimator = "roofline";
  const Efficiency& efficiency = hardware.roofline.efficiency_for(op.op_class);
  estimate.note = fmt::format("{}: compute {:.4g} s at {:.4g} TFLOP/s x {}, memory {:.4g} s at {:.4g} GB/s x {}, overhead {:.4g} s",
                              hardware.name, terms.compute_s, hardware.roofline.peak_for(op).value * 1e-12,
                              efficiency.compute, terms.memory_s, hardware.roofline.memory_bandwidth.value * 1e-9,
                              efficiency.memory, terms.overhead_s);
  return estimate;
}

}  // namespace orrery::compute
