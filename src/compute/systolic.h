// The systolic-array estimator: SCALE-Sim's analytical fold model (Samajdar et al., "A systematic
// methodology for characterizing scalability of DNN accelerators using SCALE-Sim", ISPASS 2020;
// ../shared/reference/validation.md) for GEMM and convolution, a DRAM-stall estimate, and a vector
// unit for every other op.
//
// A GEMM of m x k by k x n on an R x C array maps to spatial extents (Sr, Sc) and a temporal extent T:
//   output-stationary  Sr = m, Sc = n, T = k   cycles per fold = T + R + C - 2
//   weight-stationary  Sr = k, Sc = n, T = m   cycles per fold = 2R + C + T - 2
//   input-stationary   Sr = k, Sc = m, T = n   cycles per fold = 2R + C + T - 2
//   folds = ceil(Sr / R) * ceil(Sc / C);  compute cycles = folds * cycles per fold - 1.
// A convolution is the GEMM of its im2col view: m = output pixels, k = kernel volume * C_in /
// groups (input-dilated convolutions: only the taps on real input, im2col_gemm), n = C_out /
// groups, once per group. Batched GEMMs and groups multiply the folds; a device
// with several arrays spreads the folds evenly: ceil(folds / arrays) * cycles per fold - 1.
//
// DRAM stalls (an approximation of SCALE-Sim's double-buffered memory system, compared with its
// reports but not required to match): each operand is read from DRAM once if the SRAM that holds
// it can keep it for its whole reuse, otherwise once per fold of the other spatial dimension;
// partial outputs that do not fit the output SRAM are written and read back once per fold of the
// reduction. stall cycles = max(0, DRAM words / words per cycle - compute cycles).
#pragma once

#include <cstdint>

#include "compute/estimator.h"

namespace orrery::compute {

// The array as the fold model sees it; sizes in words (elements), bandwidth in words per cycle.
struct SystolicArray {
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  std::uint32_t arrays = 1;
  Dataflow dataflow = Dataflow::kWeightStationary;
  std::uint64_t ifmap_sram_words = 0;
  std::uint64_t filter_sram_words = 0;
  std::uint64_t ofmap_sram_words = 0;
  double dram_words_per_cycle = 0.0;  // 0: unlimited (SCALE-Sim's InterfaceBandwidth: CALC)
};

struct SystolicCycles {
  std::uint64_t spatial_rows = 0;   // Sr
  std::uint64_t spatial_cols = 0;   // Sc
  std::uint64_t temporal = 0;       // T
  std::uint64_t row_folds = 0;      // ceil(Sr / R)
  std::uint64_t col_folds = 0;      // ceil(Sc / C)
  std::uint64_t folds = 0;          // row_folds * col_folds * batch
  std::uint64_t cycles_per_fold = 0;
  std::uint64_t compute_cycles = 0; // ceil(folds / arrays) * cycles_per_fold - 1
  std::uint64_t dram_words = 0;
  std::uint64_t stall_cycles = 0;
  double mapping_efficiency = 0.0;  // Sr * Sc / (row_folds * R * col_folds * C)
  [[nodiscard]] std::uint64_t total_cycles() const { return compute_cycles + stall_cycles; }
};

// The fold model for a (batched) GEMM.
SystolicCycles systolic_gemm_cycles(const GemmShape& gemm, const SystolicArray& array);

class SystolicEstimator final : public Estimator {
 public:
  [[nodiscard]] std::string_view name() const override { return "systolic"; }
  // Throws OrreryError(kConfig) when the hardware preset has no systolic section.
  [[nodiscard]] Estimate estimate(const OpSignature& op, const Hardware& hardware) const override;
};

// The array of a hardware preset for ops of `type` (words are elements of that type).
SystolicArray systolic_array_for(const SystolicParameters& parameters, ElementType type);

}  // namespace orrery::compute
