// Hardware presets: the shipped YAML presets, name resolution, errors naming file and key, and
// Hespas' JSON node configs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "compute/hardware.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

using testing::error_of;
using testing::source_dir;
using testing::test_data;
using testing::write_temp;

const std::vector<std::string> kRequired = {"A100_40GB", "A100_80GB", "H100",  "H200",   "B200",  "GH200",
                                            "MI300X",    "TPUv3",     "TPUv4", "TPUv5e", "TPUv5p"};

double peak(const Hardware& h, ElementType type) {
  return h.roofline.peak_for(gemm_signature("dot_general", type, {1, 1, 1, 1})).value;
}

TEST(Presets, EveryShippedPresetLoadsUnderItsFileName) {
  for (const auto& entry : std::filesystem::directory_iterator(source_dir() / "configs" / "hardware")) {
    const Hardware hardware = load_hardware(entry.path().string());
    EXPECT_EQ(hardware.name, entry.path().stem().string());
    EXPECT_GT(hardware.roofline.memory_bandwidth.value, 0.0);
  }
  for (const std::string& name : kRequired) {
    EXPECT_NO_THROW((void)load_hardware(name)) << name;
  }
}

TEST(Presets, DatasheetPeaksFromHardwareReference) {
  // Spot checks against ../shared/reference/hardware.md (dense peaks).
  EXPECT_DOUBLE_EQ(peak(load_hardware("A100_80GB"), ElementType::kBF16), 312e12);
  EXPECT_DOUBLE_EQ(peak(load_hardware("A100_80GB"), ElementType::kTF32), 156e12);
  EXPECT_DOUBLE_EQ(load_hardware("A100_40GB").roofline.memory_bandwidth.value, 1555e9);
  EXPECT_DOUBLE_EQ(peak(load_hardware("H100"), ElementType::kF8E4M3FN), 1979e12);
  EXPECT_DOUBLE_EQ(peak(load_hardware("B200"), ElementType::kBF16), 2250e12);  // dense, not the sparse 4500
  EXPECT_DOUBLE_EQ(peak(load_hardware("MI300X"), ElementType::kF16), 1307.4e12);
  EXPECT_DOUBLE_EQ(load_hardware("H200").roofline.memory_bandwidth.value, 4800e9);
  EXPECT_DOUBLE_EQ(peak(load_hardware("TPUv5p"), ElementType::kBF16), 459e12);
}

TEST(Presets, TpuSystolicArraysReachTheDatasheetPeak) {
  // peak = arrays * R * C * 2 FLOP * clock must equal the bf16 peak (within the rounding of the
  // derived clock, 1%).
  for (const std::string name : {"TPUv3", "TPUv4", "TPUv5e", "TPUv5p"}) {
    const Hardware tpu = load_hardware(name);
    ASSERT_TRUE(tpu.systolic.has_value()) << name;
    const SystolicParameters& s = *tpu.systolic;
    const double systolic_peak = s.arrays * s.rows * s.cols * 2.0 * s.clock_hz;
    EXPECT_NEAR(systolic_peak / peak(tpu, ElementType::kBF16), 1.0, 0.01) << name;
    EXPECT_NEAR(s.vector_flops_per_cycle * s.clock_hz / tpu.roofline.vector_peak.value, 1.0, 0.01) << name;
  }
  EXPECT_FALSE(load_hardware("H100").systolic.has_value());
}

TEST(Presets, CopiedFitValuesMatchTheA100Fit) {
  // Presets that declare the A100_80GB fit for a class must carry its current values.
  const Hardware fit = load_hardware("A100_80GB");
  const auto same = [&](const std::string& name, std::vector<OpClass> classes) {
    const Hardware other = load_hardware(name);
    EXPECT_EQ(other.roofline.launch_overhead, fit.roofline.launch_overhead) << name;
    for (const OpClass op_class : classes) {
      EXPECT_DOUBLE_EQ(other.roofline.efficiency_for(op_class).memory, fit.roofline.efficiency_for(op_class).memory)
          << name << " " << compute::name(op_class);
      EXPECT_DOUBLE_EQ(other.roofline.efficiency_for(op_class).compute, fit.roofline.efficiency_for(op_class).compute)
          << name << " " << compute::name(op_class);
    }
  };
  const std::vector<OpClass> all = {OpClass::kGemm, OpClass::kElementwise, OpClass::kTranscendental,
                                    OpClass::kNormalisation, OpClass::kGatherScatter, OpClass::kOther};
  for (const std::string name : {"A100_40GB", "B200", "MI300X"}) {
    same(name, all);
  }
  // H100 and H200 carry their own fits (validation/gpu kernels; tests/integration/compute_tool.sh).
}

TEST(Presets, GH200CarriesTheH100Fit) {
  // The GH200's GPU is the H100's: its preset copies the H100 fit, class by class.
  const Hardware h100 = load_hardware("H100");
  const Hardware gh200 = load_hardware("GH200");
  EXPECT_EQ(gh200.roofline.launch_overhead, h100.roofline.launch_overhead);
  for (const OpClass op_class : {OpClass::kGemm, OpClass::kConvolution, OpClass::kElementwise,
                                 OpClass::kTranscendental, OpClass::kReduction, OpClass::kNormalisation,
                                 OpClass::kDataMovement, OpClass::kGatherScatter, OpClass::kOther}) {
    EXPECT_DOUBLE_EQ(gh200.roofline.efficiency_for(op_class).memory,
                     h100.roofline.efficiency_for(op_class).memory)
        << compute::name(op_class);
    EXPECT_DOUBLE_EQ(gh200.roofline.efficiency_for(op_class).compute,
                     h100.roofline.efficiency_for(op_class).compute)
        << compute::name(op_class);
  }
  EXPECT_NE(gh200.roofline.memory_bandwidth.value, h100.roofline.memory_bandwidth.value);  // its own HBM
}

TEST(Presets, ErrorsNameFileLineAndKey) {
  const auto path = write_temp("bad/unknown_key.yaml",
                               "name: x\nroofline:\n  peak_tflops: {default: 1}\n  vector_tflops: 1\n"
                               "  memory_bandwith_GBps: 100\n");
  const std::string message = error_of([&] { (void)load_hardware(path.string()); });
  EXPECT_NE(message.find(path.string() + ":5:3"), std::string::npos) << message;
  EXPECT_NE(message.find("roofline.memory_bandwith_GBps: unknown key"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'memory_bandwidth_GBps'"), std::string::npos) << message;
  // ... and the missing key is reported too.
  EXPECT_NE(message.find("roofline.memory_bandwidth_GBps: missing"), std::string::npos) << message;

  const auto bad_type = write_temp("bad/bad_type.yaml",
                                   "roofline:\n  peak_tflops: {default: 1, f17: 3}\n  vector_tflops: 1\n"
                                   "  memory_bandwidth_GBps: 100\n  efficiency: {gemm: {compute: 1.5}}\n");
  const std::string type_message = error_of([&] { (void)load_hardware(bad_type.string()); });
  EXPECT_NE(type_message.find("roofline.peak_tflops: unknown element type or family 'f17'"), std::string::npos)
      << type_message;
  EXPECT_NE(type_message.find("roofline.efficiency.gemm.compute: 1.5 is out of range"), std::string::npos)
      << type_message;

  // A class named twice in a mapping (YAML itself would silently keep one of the two values).
  const auto duplicate = write_temp("bad/duplicate.yaml",
                                    "roofline:\n  peak_tflops: {default: 1}\n  vector_tflops: 1\n"
                                    "  memory_bandwidth_GBps: 100\n  efficiency:\n"
                                    "    gemm: {compute: 0.5}\n    gemm: {compute: 0.7}\n");
  const std::string duplicate_message = error_of([&] { (void)load_hardware(duplicate.string()); });
  EXPECT_NE(
      duplicate_message.find(duplicate.string() + ":7:5: error: roofline.efficiency.gemm: duplicate key"),
      std::string::npos)
      << duplicate_message;

  const auto no_roofline = write_temp("bad/no_roofline.yaml", "name: x\n");
  EXPECT_NE(error_of([&] { (void)load_hardware(no_roofline.string()); }).find("roofline: missing"), std::string::npos);
}

TEST(Presets, NameResolution) {
  const std::string message = error_of([] { (void)load_hardware("H10"); });
  EXPECT_NE(message.find("unknown hardware preset 'H10' (did you mean 'H100'?)"), std::string::npos) << message;
  EXPECT_NE(message.find("ORRERY_CONFIG_DIR"), std::string::npos) << message;
  EXPECT_NE(error_of([] { (void)load_hardware("missing/file.yaml"); }).find("cannot read 'missing/file.yaml'"),
            std::string::npos);

  // ORRERY_CONFIG_DIR comes first.
  const auto custom = write_temp("configs/hardware/H100.yaml",
                                 "description: custom\nroofline:\n  peak_tflops: {default: 7}\n  vector_tflops: 1\n"
                                 "  memory_bandwidth_GBps: 9\n");
  ASSERT_EQ(::setenv("ORRERY_CONFIG_DIR", custom.parent_path().parent_path().c_str(), 1), 0);
  const Hardware overridden = load_hardware("H100");
  ::unsetenv("ORRERY_CONFIG_DIR");
  EXPECT_EQ(overridden.description, "custom");
  EXPECT_DOUBLE_EQ(overridden.roofline.memory_bandwidth.value, 9e9);
  EXPECT_NE(load_hardware("H100").description, "custom");
}

TEST(HespasPresets, RooflineNodeConfigLoads) {
  const Hardware a100 = load_hardware((test_data() / "hespas/A100_SXM_40GB/roofline/config.json").string());
  EXPECT_EQ(a100.name, "A100_SXM_40GB");
  EXPECT_DOUBLE_EQ(a100.roofline.memory_bandwidth.value, 1555e9);
  EXPECT_DOUBLE_EQ(peak(a100, ElementType::kBF16), 312e12);
  EXPECT_DOUBLE_EQ(peak(a100, ElementType::kI8), 624e12);       // "si8" and "i8" both given
  EXPECT_DOUBLE_EQ(peak(a100, ElementType::kF8E4M3FN), 9.7e12);  // peak_flops for types not listed
  // Hespas' semantics: efficiency 1, no launch overhead.
  EXPECT_DOUBLE_EQ(a100.roofline.efficiency_for(OpClass::kGemm).compute, 1.0);
  EXPECT_EQ(a100.roofline.launch_overhead, SimTime::zero());
  const Hardware tpu = load_hardware((test_data() / "hespas/TPUv3/cocossim/config.json").string());
  EXPECT_DOUBLE_EQ(peak(tpu, ElementType::kBF16), 63.3e12);
  EXPECT_DOUBLE_EQ(tpu.roofline.memory_bandwidth.value, 429.2e9);
}

TEST(HespasPresets, InvalidJsonNamesFileLineAndColumn) {
  // Hespas' own V100 config lacks a comma after "f16": 125e12 (line 12).
  const std::string path = (test_data() / "hespas/V100_32GB/roofline/config.json").string();
  const std::string message = error_of([&] { (void)load_hardware(path); });
  EXPECT_NE(message.find(path + ":13:"), std::string::npos) << message;
  EXPECT_NE(message.find("invalid JSON"), std::string::npos) << message;
  EXPECT_NE(message.find("\"i8\": 15.7e12"), std::string::npos) << message;  // the offending line
}

TEST(HespasPresets, MissingOrInvalidFieldsNameTheKey) {
  const std::string xla = (test_data() / "hespas/profiling/xla/config.json").string();
  EXPECT_NE(error_of([&] { (void)load_hardware(xla); }).find(xla + ": error: perf_estimator.method: 'xla' carries no"),
            std::string::npos);
  const auto missing = write_temp("hespas/missing.json",
                                  R"({"perf_estimator": {"method": "roofline", "hardware": {"peak_flops": 1e12}}})");
  EXPECT_NE(error_of([&] { (void)load_hardware(missing.string()); })
                .find("perf_estimator.hardware.memory_bandwidth: missing (required)"),
            std::string::npos);
  const auto wrong = write_temp("hespas/wrong.json",
                                R"({"perf_estimator": {"method": "roofline", "hardware": {"peak_flops": "fast",
                                    "memory_bandwidth": 1e9}}})");
  EXPECT_NE(error_of([&] { (void)load_hardware(wrong.string()); })
                .find("perf_estimator.hardware.peak_flops: expected a number, got string"),
            std::string::npos);
  const auto dtype = write_temp("hespas/dtype.json",
                                R"({"perf_estimator": {"method": "roofline", "hardware": {"peak_flops": 1e12,
                                    "memory_bandwidth": 1e9, "per_datatype_flops": {"f99": 1e12}}}})");
  EXPECT_NE(error_of([&] { (void)load_hardware(dtype.string()); })
                .find("perf_estimator.hardware.per_datatype_flops.f99: unknown element type"),
            std::string::npos);
}

TEST(HespasPresets, EveryNodeConfigInTheSharedData) {
  const std::filesystem::path nodes = testing::shared_data() / "configs" / "hespas" / "nodes";
  if (!std::filesystem::is_directory(nodes)) {
    GTEST_SKIP() << "shared data not found at " << nodes.string() << ": this test reads Hespas' node configs in place";
  }
  std::size_t loaded = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(nodes)) {
    if (entry.path().filename() != "config.json") {
      continue;
    }
    const std::string method = entry.path().parent_path().filename().string();
    const std::string node = entry.path().parent_path().parent_path().filename().string();
    const std::string message = error_of([&] { (void)load_hardware(entry.path().string()); });
    if (node == "V100_32GB") {
      EXPECT_NE(message.find("invalid JSON"), std::string::npos) << message;
    } else if (node == "profiling") {
      EXPECT_NE(message.find("carries no hardware constants"), std::string::npos) << message;
    } else {
      EXPECT_EQ(message, "(no error)") << entry.path();
      ++loaded;
    }
  }
  EXPECT_EQ(loaded, 14U);  // 13 roofline configs and the TPUv3 cocossim one
}

}  // namespace
}  // namespace orrery::compute
