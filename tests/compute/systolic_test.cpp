// The systolic estimator: SCALE-Sim's fold model, reproduced exactly on every golden report.
#include <gtest/gtest.h>

#include "compute/scalesim_files.h"
#include "compute/systolic.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

SystolicArray array_32(Dataflow dataflow) {
  SystolicArray array;
  array.rows = 32;
  array.cols = 32;
  array.dataflow = dataflow;
  array.ifmap_sram_words = array.filter_sram_words = array.ofmap_sram_words = 64 * 1024;
  return array;
}

TEST(SystolicFolds, WeightStationaryAlexNetConv1) {
  // WS on 32x32: Sr = K = 11*11*3 = 363, Sc = N = 96, T = M = 55*55 = 3025.
  // folds = ceil(363/32) * ceil(96/32) = 12 * 3 = 36; cycles/fold = 2*32 + 32 + 3025 - 2 = 3119;
  // compute = 36 * 3119 - 1 = 112283 (validation.md).
  const GemmShape gemm = im2col_gemm(convolution_from_scalesim_layer(224, 224, 11, 11, 3, 96, 4));
  const SystolicCycles c = systolic_gemm_cycles(gemm, array_32(Dataflow::kWeightStationary));
  EXPECT_EQ(c.folds, 36U);
  EXPECT_EQ(c.cycles_per_fold, 3119U);
  EXPECT_EQ(c.compute_cycles, 112283U);
  EXPECT_NEAR(c.mapping_efficiency, 0.9453125, 1e-12);  // SCALE-Sim's "Mapping Efficiency %" 94.53125
  EXPECT_EQ(c.stall_cycles, 0U);                        // unlimited bandwidth (CALC)
}

TEST(SystolicFolds, ThreeDataflowsOnOneGemm) {
  // M = 256, N = 128, K = 256 on 32x32:
  //   OS: Sr = 256, Sc = 128, T = 256: 8 * 4 = 32 folds x (256 + 62) - 1 = 10175
  //   WS: Sr = 256, Sc = 128, T = 256: 32 folds x (96 + 256 - 2) - 1 = 11199
  //   IS: Sr = 256, Sc = 256, T = 128: 64 folds x (96 + 128 - 2) - 1 = 14207
  const GemmShape gemm{1, 256, 128, 256};
  EXPECT_EQ(systolic_gemm_cycles(gemm, array_32(Dataflow::kOutputStationary)).compute_cycles, 10175U);
  EXPECT_EQ(systolic_gemm_cycles(gemm, array_32(Dataflow::kWeightStationary)).compute_cycles, 11199U);
  EXPECT_EQ(systolic_gemm_cycles(gemm, array_32(Dataflow::kInputStationary)).compute_cycles, 14207U);
}

TEST(SystolicFolds, BatchAndArraysSpreadFolds) {
  // Batch 3 triples the folds: 96 folds; on 4 arrays ceil(96 / 4) = 24 rounds of 350 cycles: 8399.
  SystolicArray array = array_32(Dataflow::kWeightStationary);
  array.arrays = 4;
  const SystolicCycles c = systolic_gemm_cycles(GemmShape{3, 256, 128, 256}, array);
  EXPECT_EQ(c.folds, 96U);
  EXPECT_EQ(c.compute_cycles, 24U * 350U - 1U);
}

TEST(SystolicFolds, StallsWhenBandwidthIsShort) {
  // WS, M = N = K = 256 with 1 word/cycle: DRAM words = A + B + C = 3 * 65536 (A and B fit their
  // SRAMs, a 256 x 32 output column block fits too) = 196608 cycles > 8 * 8 * 350 - 1 compute.
  SystolicArray array = array_32(Dataflow::kWeightStationary);
  array.dram_words_per_cycle = 1.0;
  const SystolicCycles c = systolic_gemm_cycles(GemmShape{1, 256, 256, 256}, array);
  EXPECT_EQ(c.dram_words, 3U * 65536U);
  EXPECT_EQ(c.stall_cycles, 3U * 65536U - c.compute_cycles);
}

TEST(SystolicGolden, EveryScaleSimReportComputeCyclesExact) {
  const std::filesystem::path data = testing::shared_compute_data();
  ORRERY_SKIP_WITHOUT_SHARED_DATA(data);
  const std::vector<ScaleSimGoldenCase> cases = scalesim_golden_cases(data / "scalesim_golden");
  ASSERT_EQ(cases.size(), 5U);
  for (const ScaleSimGoldenCase& golden : cases) {
    ScaleSimConfig config = read_scalesim_config(golden.config.string());
    config.dataflow = golden.dataflow;
    config.user_bandwidth = golden.user_bandwidth;
    const std::vector<ScaleSimLayer> layers = read_scalesim_topology(golden.topology.string());
    const std::vector<ScaleSimReportRow> rows = read_scalesim_compute_report(golden.report.string());
    ASSERT_FALSE(rows.empty()) << golden.report;
    for (const ScaleSimReportRow& row : rows) {
      ASSERT_LT(row.layer, layers.size());
      const SystolicCycles cycles = systolic_gemm_cycles(layers[row.layer].gemm, config.array());
      EXPECT_EQ(cycles.compute_cycles, row.compute_cycles()) << golden.report;
      // Stalls come from SCALE-Sim's cycle-level memory model: compared and reported, not matched.
      std::printf("%s: compute cycles %llu (SCALE-Sim %llu); stall cycles %llu (SCALE-Sim %llu)\n",
                  golden.report.filename().c_str(), static_cast<unsigned long long>(cycles.compute_cycles),
                  static_cast<unsigned long long>(row.compute_cycles()),
                  static_cast<unsigned long long>(cycles.stall_cycles),
                  static_cast<unsigned long long>(row.stall_cycles));
      if (!golden.user_bandwidth) {
        EXPECT_EQ(cycles.stall_cycles, row.stall_cycles);  // CALC bandwidth: no stalls on either side
      }
    }
  }
}

TEST(SystolicEstimator, TpuPresetTimesAndVectorUnit) {
  const Hardware tpu = load_hardware("TPUv4");
  const SystolicParameters& s = *tpu.systolic;
  // bf16 4096^3 on 8 WS arrays of 128x128: folds = 32 * 32 = 1024, 128 per array; cycles per
  // fold = 2*128 + 128 + 4096 - 2 = 4478; compute = 128 * 4478 - 1.
  const OpSignature gemm = gemm_signature("dot_general", ElementType::kBF16, {1, 4096, 4096, 4096});
  const Estimate e = SystolicEstimator().estimate(gemm, tpu);
  const SystolicCycles c = systolic_gemm_cycles(gemm.gemm, systolic_array_for(s, ElementType::kBF16));
  EXPECT_EQ(c.compute_cycles, 128U * 4478U - 1U);
  EXPECT_EQ(e.time, SimTime::from_seconds(static_cast<double>(c.total_cycles()) / s.clock_hz +
                                          tpu.roofline.launch_overhead.seconds()));
  EXPECT_EQ(e.estimator, "systolic");
  // Vector unit: max(F / (flops per cycle * clock), B / DRAM bandwidth).
  const OpSignature add = elementwise_signature("add", OpClass::kElementwise, ElementType::kBF16, 1 << 20, 2, 1.0);
  const double expected = std::max(add.flops.value / (s.vector_flops_per_cycle * s.clock_hz),
                                   add.bytes().as_double() / s.dram_bandwidth.value);
  EXPECT_EQ(SystolicEstimator().estimate(add, tpu).time, SimTime::from_seconds(expected));
}

TEST(SystolicEstimator, GpuPresetHasNoArray) {
  const std::string message = testing::error_of([] {
    (void)SystolicEstimator().estimate(gemm_signature("dot_general", ElementType::kBF16, {1, 8, 8, 8}),
                                       load_hardware("H100"));
  });
  EXPECT_NE(message.find("H100"), std::string::npos) << message;
  EXPECT_NE(message.find("needs a preset with a systolic section; H100"), std::string::npos) << message;
}

}  // namespace
}  // namespace orrery::compute
