// Fitting the roofline's achievable fractions and launch overhead to measured kernel times
// (docs/compute.md, "How the constants were fitted"). Kernel data only: never end-to-end step times.
//
// Model: t = L + max(F / (P * c_k), B / (W * m_k)) for an op of class k, with P and W the preset's
// datasheet peak and bandwidth. Objective: the sum of squared log errors (ln t_model - ln t_measured)^2,
// which weighs a 2x miss on a 5 us kernel like one on a 5 ms kernel. Search: L shared by every
// class, on a coarse grid and then a fine one around the coarse optimum; for each L and class, c_k
// and m_k likewise (coarse 0.05, fine 0.01). A class whose compute term never binds keeps c_k = 1
// (ties go to the larger fraction). Classes absent from the data are not fitted.
#pragma once

#include <map>
#include <span>
#include <string>

#include "compute/hardware.h"
#include "compute/kernel_table.h"

namespace orrery::compute {

struct FitGrid {
  double overhead_min_us = 0.0;
  double overhead_max_us = 10.0;
  double overhead_coarse_step_us = 0.5;
  double overhead_fine_step_us = 0.1;
  double compute_min = 0.30;
  double memory_min = 0.10;
  double coarse_step = 0.05;  // fractions run from their minimum to 1
  double fine_step = 0.01;
};

struct ClassFit {
  Efficiency efficiency;
  std::size_t rows = 0;
  double loss = 0.0;  // sum of squared log errors at the optimum
};

struct RooflineFit {
  double launch_overhead_us = 0.0;
  std::map<OpClass, ClassFit> classes;
  double loss = 0.0;
  std::size_t rows = 0;
};

// Fits on `measured` (all on one device) with the peaks and bandwidth of `hardware`.
RooflineFit fit_roofline(std::span<const MeasuredOp> measured, const Hardware& hardware, const FitGrid& grid = {});

// `hardware` with the fitted overhead and efficiencies (classes not fitted keep theirs).
Hardware with_fit(Hardware hardware, const RooflineFit& fit);

}  // namespace orrery::compute
