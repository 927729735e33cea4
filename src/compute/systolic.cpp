#include "compute/systolic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/assert.h"
#include "util/error.h"

namespace orrery::compute {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// DRAM words one GEMM (batch 1) moves under the stall model of the header.
std::uint64_t dram_words(const GemmShape& g, const SystolicArray& array, const SystolicCycles& c) {
  const std::uint64_t a_words = g.m * g.k;  // ifmap (im2col view)
  const std::uint64_t b_words = g.k * g.n;  // filter
  const std::uint64_t c_words = g.m * g.n;  // ofmap
  std::uint64_t words = 0;
  switch (array.dataflow) {
    case Dataflow::kOutputStationary: {
      // Folds walk output row blocks (outer) and column blocks (inner): a row block of A (R x k)
      // stays for the inner loop; B is re-read per row fold unless it fits whole.
      const std::uint64_t a_block = std::min<std::uint64_t>(array.rows, g.m) * g.k;
      words += a_block <= array.ifmap_sram_words ? a_words : a_words * c.col_folds;
      words += b_words <= array.filter_sram_words ? b_words : b_words * c.row_folds;
      words += c_words;
      break;
    }
    case Dataflow::kWeightStationary:
    case Dataflow::kInputStationary: {
      // The stationary operand is read once; the streamed one is re-read per column fold unless it
      // fits whole; partial sums spill once per row (reduction) fold unless a column block fits.
      const bool weights = array.dataflow == Dataflow::kWeightStationary;
      const std::uint64_t stationary = weights ? b_words : a_words;
      const std::uint64_t streamed = weights ? a_words : b_words;
      const std::uint64_t streamed_sram = weights ? array.ifmap_sram_words : array.filter_sram_words;
      words += stationary;
      words += streamed <= streamed_sram ? streamed : streamed * c.col_folds;
      const std::uint64_t output_block = c.temporal * std::min<std::uint64_t>(array.cols, c.spatial_cols);
      words += output_block <= array.ofmap_sram_words ? c_words : c_words * (2 * c.row_folds - 1);
      break;
    }
  }
  return words;
}

}  // namespace

SystolicCycles systolic_gemm_cycles(const GemmShape& gemm, const SystolicArray& array) {
  ORRERY_ASSERT(array.rows > 0 && array.cols > 0 && array.arrays > 0, "a systolic array has a size");
  const std::uint64_t rows = array.rows;
  const std::uint64_t cols = array.cols;
  SystolicCycles c;
  // (Sr, Sc, T) per dataflow, as in the header.
  switch (array.dataflow) {
    case Dataflow::kOutputStationary:
      c.spatial_rows = gemm.m;
      c.spatial_cols = gemm.n;
      c.temporal = gemm.k;
      break;
    case Dataflow::kWeightStationary:
      c.spatial_rows = gemm.k;
      c.spatial_cols = gemm.n;
      c.temporal = gemm.m;
      break;
    case Dataflow::kInputStationary:
      c.spatial_rows = gemm.k;
      c.spatial_cols = gemm.m;
      c.temporal = gemm.n;
      break;
  }
  if (gemm.batch == 0 || c.spatial_rows == 0 || c.spatial_cols == 0 || c.temporal == 0) {
    return c;
  }
  c.row_folds = ceil_div(c.spatial_rows, rows);
  c.col_folds = ceil_div(c.spatial_cols, cols);
  c.folds = c.row_folds * c.col_folds * gemm.batch;
  c.cycles_per_fold = array.dataflow == Dataflow::kOutputStationary ? c.temporal + rows + cols - 2
                                                                    : 2 * rows + cols + c.temporal - 2;
  c.compute_cycles = ceil_div(c.folds, array.arrays) * c.cycles_per_fold - 1;
  c.mapping_efficiency = static_cast<double>(c.spatial_rows * c.spatial_cols) /
                         static_cast<double>(c.row_folds * rows * c.col_folds * cols);
  c.dram_words = dram_words(gemm, array, c) * gemm.batch;
  if (array.dram_words_per_cycle > 0.0) {
    const double dram_cycles = std::ceil(static_cast<double>(c.dram_words) / array.dram_words_per_cycle);
    const double compute = static_cast<double>(c.compute_cycles);
    c.stall_cycles = dram_cycles > compute ? static_cast<std::uint64_t>(dram_cycles - compute) : 0;
  }
  return c;
}

SystolicArray systolic_array_for(const SystolicParameters& parameters, ElementType type) {
  const double word_bytes = std::max(1.0, static_cast<double>(info(type).bits) / 8.0);
  SystolicArray array;
  array.rows = parameters.rows;
  array.cols = parameters.cols;
  array.arrays = parameters.arrays;
  array.dataflow = parameters.dataflow;
  array.ifmap_sram_words = static_cast<std::uint64_t>(parameters.ifmap_sram.as_double() / word_bytes);
  array.filter_sram_words = static_cast<std::uint64_t>(parameters.filter_sram.as_double() / word_bytes);
  array.ofmap_sram_words = static_cast<std::uint64_t>(parameters.ofmap_sram.as_double() / word_bytes);
  array.dram_words_per_cycle = parameters.dram_bandwidth.value / parameters.clock_hz / word_bytes;
  return array;
}

Estimate SystolicEstimator::estimate(const OpSignature& op, const Hardware& hardware) const {
  if (!hardware.systolic) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("the systolic estimator needs a preset with a systolic section; {} ({}) has none",
                                  hardware.name, hardware.source));
  }
  const SystolicParameters& parameters = *hardware.systolic;
  Estimate estimate;
  estimate.flops = op.flops;
  estimate.bytes = op.bytes();
  estimate.estimator = "systolic";
  const double overhead_s = hardware.roofline.launch_overhead.seconds();
  if (op.op_class == OpClass::kGemm || op.op_class == OpClass::kConvolution) {
    const GemmShape gemm = op.op_class == OpClass::kGemm ? op.gemm : im2col_gemm(op.conv);
    const SystolicCycles cycles = systolic_gemm_cycles(gemm, systolic_array_for(parameters, op.element_type));
    if (cycles.folds == 0) {
      estimate.bound = Bound::kNone;
      estimate.note = "empty GEMM";
      return estimate;
    }
    estimate.time = SimTime::from_seconds(static_cast<double>(cycles.total_cycles()) / parameters.clock_hz + overhead_s);
    estimate.bound = cycles.stall_cycles > cycles.compute_cycles ? Bound::kMemory : Bound::kCompute;
    estimate.note = fmt::format(
        "{}: {} {}x{} x{} arrays, GEMM {}x{}x{} (batch {}): {} folds x {} cycles, {} compute + {} stall cycles "
        "at {:.4g} GHz, mapping efficiency {:.3f}",
        hardware.name, config::enum_to_string(parameters.dataflow), parameters.rows, parameters.cols,
        parameters.arrays, gemm.m, gemm.n, gemm.k, gemm.batch, cycles.folds, cycles.cycles_per_fold,
        cycles.compute_cycles, cycles.stall_cycles, parameters.clock_hz * 1e-9, cycles.mapping_efficiency);
    return estimate;
  }
  // The vector unit: compute cycles against DRAM time, as a roofline.
  if (op.flops.value == 0.0 && op.bytes().count == 0) {
    estimate.bound = Bound::kNone;
    estimate.note = "no work";
    return estimate;
  }
  const double compute_s = op.flops.value / (parameters.vector_flops_per_cycle * parameters.clock_hz);
  const double memory_s = op.bytes().as_double() / parameters.dram_bandwidth.value;
  estimate.time = SimTime::from_seconds(std::max(compute_s, memory_s) + overhead_s);
  estimate.bound = compute_s >= memory_s ? Bound::kCompute : Bound::kMemory;
  estimate.note = fmt::format("{}: vector unit {:.4g} s compute ({} FLOP/cycle), {:.4g} s DRAM", hardware.name,
                              compute_s, parameters.vector_flops_per_cycle, memory_s);
  return estimate;
}

}  // namespace orrery::compute
