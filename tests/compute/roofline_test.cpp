// The roofline estimator: time = overhead + max(F / (P f_c), B / (W f_m)).
#include <gtest/gtest.h>

#include "compute/roofline.h"

namespace orrery::compute {
namespace {

// A small made-up device: matrix f16 100 TF/s, default 10 TF/s, vector 5 TF/s, 1000 GB/s,
// gemm efficiencies 0.5 / 0.8, others 1 / 0.5, 2 us launch overhead.
Hardware toy_device() {
  HardwarePresetConfig preset;
  preset.name = "toy";
  preset.roofline.peak_tflops = {{"default", 10.0}, {"f16", 100.0}, {"f8", 200.0}};
  preset.roofline.vector_tflops = 5.0;
  preset.roofline.memory_bandwidth_gbps = 1000.0;
  preset.roofline.launch_overhead_us = 2.0;
  preset.roofline.efficiency = {{"default", {1.0, 0.5}}, {"gemm", {0.5, 0.8}}};
  return hardware_from_config(preset, "test");
}

TEST(Roofline, ComputeBoundGemm) {
  // 4096^3 f16 GEMM: F = 2 * 4096^3 = 1.374e11; compute = F / (100e12 * 0.5) = 2.749 ms.
  // B = 3 * 4096^2 * 2 = 1.007e8; memory = B / (1000e9 * 0.8) = 125.8 us. time = 2 us + compute.
  const Hardware device = toy_device();
  const OpSignature op = gemm_signature("dot_general", ElementType::kF16, {1, 4096, 4096, 4096});
  const Estimate e = RooflineEstimator().estimate(op, device);
  const double compute = 2.0 * 4096.0 * 4096.0 * 4096.0 / (100e12 * 0.5);
  EXPECT_EQ(e.time, SimTime::from_seconds(2e-6 + compute));
  EXPECT_EQ(e.bound, Bound::kCompute);
  EXPECT_EQ(e.estimator, "roofline");
  EXPECT_DOUBLE_EQ(e.flops.value, op.flops.value);
  EXPECT_EQ(e.bytes, op.bytes());
}

TEST(Roofline, MemoryBoundElementwiseUsesVectorPeakAndClassFraction) {
  // add of 1e8 f16 elements: B = 3 * 1e8 * 2 = 6e8 B at 1000 GB/s * 0.5 (default) = 1.2 ms;
  // F = 1e8 at the vector peak 5 TF/s = 20 us. time = 2 us + 1.2 ms.
  const OpSignature op = elementwise_signature("add", OpClass::kElementwise, ElementType::kF16, 100'000'000, 2, 1.0);
  const Estimate e = RooflineEstimator().estimate(op, toy_device());
  EXPECT_EQ(e.time, SimTime::from_seconds(2e-6 + 6e8 / (1000e9 * 0.5)));
  EXPECT_EQ(e.bound, Bound::kMemory);
}

TEST(Roofline, OverheadBoundAndNoWork) {
  // A 1-element add: work ~ns, the 2 us overhead dominates.
  const OpSignature tiny = elementwise_signature("add", OpClass::kElementwise, ElementType::kF32, 1, 2, 1.0);
  EXPECT_EQ(RooflineEstimator().estimate(tiny, toy_device()).bound, Bound::kOverhead);
  // No FLOPs and no bytes (a bitcast reshape): no kernel, no time.
  OpSignature reshape;
  reshape.op_class = OpClass::kDataMovement;
  reshape.kind = "reshape";
  const Estimate e = RooflineEstimator().estimate(reshape, toy_device());
  EXPECT_EQ(e.time, SimTime::zero());
  EXPECT_EQ(e.bound, Bound::kNone);
}

TEST(Roofline, PeakLookupByTypeThenFamilyThenDefault) {
  const Hardware device = toy_device();
  const auto peak = [&](ElementType type) {
    return device.roofline.peak_for(gemm_signature("dot_general", type, {1, 1, 1, 1})).value;
  };
  EXPECT_DOUBLE_EQ(peak(ElementType::kF16), 100e12);        // exact type
  EXPECT_DOUBLE_EQ(peak(ElementType::kF8E4M3FN), 200e12);   // family f8
  EXPECT_DOUBLE_EQ(peak(ElementType::kF8E5M2), 200e12);     // family f8
  EXPECT_DOUBLE_EQ(peak(ElementType::kF32), 10e12);         // default
  EXPECT_DOUBLE_EQ(device.roofline.peak_for(elementwise_signature("exp", OpClass::kTranscendental,
                                                                  ElementType::kF16, 1, 1, 1.0)).value,
                   5e12);  // vector unit for non-matrix classes
}

TEST(Roofline, TimeRoundsUpToWholePicoseconds) {
  // 1 FLOP on a 1 TF/s device, no overhead, efficiency 1: exactly 1 ps; 1.5 FLOP rounds up to 2 ps.
  HardwarePresetConfig preset;
  preset.roofline.peak_tflops = {{"default", 1.0}};
  preset.roofline.vector_tflops = 1.0;
  preset.roofline.memory_bandwidth_gbps = 1e12;
  const Hardware device = hardware_from_config(preset, "test");
  OpSignature op = elementwise_signature("x", OpClass::kElementwise, ElementType::kF32, 1, 0, 1.0);
  op.bytes_written = Bytes{0};
  EXPECT_EQ(RooflineEstimator().estimate(op, device).time, SimTime::from_ps(1));
  op.flops = Flops{1.5};
  EXPECT_EQ(RooflineEstimator().estimate(op, device).time, SimTime::from_ps(2));
}

}  // namespace
}  // namespace orrery::compute
