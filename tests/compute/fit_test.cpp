// The roofline fit: it recovers known constants, and the A100_80GB preset carries what it gives on
// the Llama-2-7B kernel data (the constants' provenance).
#include <gtest/gtest.h>

#include "compute/roofline.h"
#include "compute/roofline_fit.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

TEST(RooflineFit, PresetCarriesTheFitOfTheLlama7bKernels) {
  const std::filesystem::path data = testing::shared_compute_data();
  ORRERY_SKIP_WITHOUT_SHARED_DATA(data);
  const Hardware a100 = load_hardware("A100_80GB");
  const std::vector<MeasuredOp> kernels =
      read_vidur_mlp_csv((data / "vidur/compute/a100/Llama-2-7b-hf_mlp.csv").string());
  const RooflineFit fit = fit_roofline(kernels, a100);
  EXPECT_NEAR(a100.roofline.launch_overhead.seconds() * 1e6, fit.launch_overhead_us, 1e-9)
      << "run: orrery_compute_tool fit-roofline --preset configs/hardware/A100_80GB.yaml --vidur ... --write";
  for (const auto& [op_class, class_fit] : fit.classes) {
    EXPECT_NEAR(a100.roofline.efficiency_for(op_class).compute, class_fit.efficiency.compute, 1e-9) << name(op_class);
    EXPECT_NEAR(a100.roofline.efficiency_for(op_class).memory, class_fit.efficiency.memory, 1e-9) << name(op_class);
  }
  EXPECT_NE(a100.provenance.find("fitted by orrery_compute_tool fit-roofline"), std::string::npos);
}

TEST(RooflineFit, RecoversKnownConstants) {
  // Kernels generated from t = 3 us + max(F / (P * 0.6), B / (W * 0.7)) are fitted back exactly.
  Hardware device = load_hardware("A100_80GB");
  Hardware truth = device;
  truth.roofline.launch_overhead = SimTime::from_microseconds(3.0);
  truth.roofline.efficiency[static_cast<std::size_t>(OpClass::kGemm)] = Efficiency{0.6, 0.7};
  std::vector<MeasuredOp> kernels;
  for (std::uint64_t m = 1; m <= 8192; m *= 2) {
    MeasuredOp kernel;
    kernel.op = gemm_signature("dot_general", ElementType::kF16, {1, m, 4096, 4096});
    const RooflineTerms terms = roofline_terms(kernel.op, truth.roofline);
    kernel.time_s = terms.total_s();
    kernels.push_back(kernel);
  }
  const RooflineFit fit = fit_roofline(kernels, device);
  EXPECT_NEAR(fit.launch_overhead_us, 3.0, 1e-9);
  EXPECT_NEAR(fit.classes.at(OpClass::kGemm).efficiency.compute, 0.6, 1e-9);
  EXPECT_NEAR(fit.classes.at(OpClass::kGemm).efficiency.memory, 0.7, 1e-9);
}

}  // namespace
}  // namespace orrery::compute
