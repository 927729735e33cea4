// Plugins: the example C-ABI library (dlopen) and the example JSON-lines subprocess give the
// datasheet roofline times; misbehaving plugins end with a clear error.
#include <gtest/gtest.h>

#include <filesystem>

#include "compute/plugin.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

using testing::error_of;

const std::filesystem::path kPlugins = testing::source_dir() / "tests" / "compute" / "plugins";

OpSignature test_gemm() { return gemm_signature("dot_general", ElementType::kBF16, {1, 1024, 1024, 1024}); }

// What both examples compute: (max(F / peak, B / bandwidth) + overhead) * scale.
double example_time(const OpSignature& op, const Hardware& h, double scale) {
  const double work = std::max(op.flops.value / h.roofline.peak_for(op).value,
                               op.bytes().as_double() / h.roofline.memory_bandwidth.value);
  return (work + h.roofline.launch_overhead.seconds()) * scale;
}

TEST(SharedLibraryPlugin, ExamplePluginCostsOps) {
  const Hardware h100 = load_hardware("H100");
  const SharedLibraryEstimator plugin(ORRERY_EXAMPLE_PLUGIN, "scale=2");
  EXPECT_EQ(plugin.name(), "example");
  const Estimate e = plugin.estimate(test_gemm(), h100);
  EXPECT_EQ(e.time, SimTime::from_seconds(example_time(test_gemm(), h100, 2.0)));
  EXPECT_EQ(e.estimator, "plugin:example");
  EXPECT_EQ(e.bound, Bound::kCompute);
  EXPECT_NE(e.note.find("example plugin: datasheet roofline x 2 on H100 for dot_general"), std::string::npos) << e.note;
}

TEST(SharedLibraryPlugin, LoadErrorsAreClear) {
  EXPECT_NE(error_of([] { SharedLibraryEstimator("/no/such/plugin.so", ""); }).find("cannot load"), std::string::npos);
  const std::string abi = error_of([] { SharedLibraryEstimator(ORRERY_BAD_ABI_PLUGIN, ""); });
  EXPECT_NE(abi.find("was built for estimator ABI version 99; this Orrery speaks version 1"), std::string::npos) << abi;
  const std::string options = error_of([] { SharedLibraryEstimator(ORRERY_EXAMPLE_PLUGIN, "speed=fast"); });
  EXPECT_NE(options.find("create() failed: bad options 'speed=fast'"), std::string::npos) << options;
}

TEST(SharedLibraryPlugin, MisbehavingAnswersAreErrors) {
  const Hardware h100 = load_hardware("H100");
  const SharedLibraryEstimator negative(ORRERY_NEGATIVE_TIME_PLUGIN, "");
  const std::string message = error_of([&] { (void)negative.estimate(test_gemm(), h100); });
  EXPECT_NE(message.find("estimator plugin bad: returned an invalid time -1 s for dot_general"), std::string::npos)
      << message;
  const SharedLibraryEstimator failing(ORRERY_FAILING_PLUGIN, "");
  const std::string failed = error_of([&] { (void)failing.estimate(test_gemm(), h100); });
  EXPECT_NE(failed.find("failed on dot_general (gemm, bf16) [1x1024x1024x1024]"), std::string::npos) << failed;
  EXPECT_NE(failed.find("(status 3): cannot cost dot_general"), std::string::npos) << failed;
}

TEST(SubprocessPlugin, ExampleJsonLinesPlugin) {
  if (!std::filesystem::exists("/usr/bin/python3")) {
    GTEST_SKIP() << "/usr/bin/python3 not found: the example JSON-lines plugin is a Python script";
  }
  const Hardware h100 = load_hardware("H100");
  const SubprocessEstimator plugin(testing::source_dir() / "src/compute/plugins/example_plugin.py", {}, "scale=1.5",
                                   std::chrono::seconds(20));
  EXPECT_EQ(plugin.name(), "example-jsonl");
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Estimate e = plugin.estimate(test_gemm(), h100);
    EXPECT_EQ(e.time, SimTime::from_seconds(example_time(test_gemm(), h100, 1.5)));
    EXPECT_EQ(e.estimator, "plugin:example-jsonl");
  }
  const OpSignature add = elementwise_signature("add", OpClass::kElementwise, ElementType::kF32, 1 << 20, 2, 1.0);
  const Estimate e = plugin.estimate(add, h100);
  EXPECT_EQ(e.bound, Bound::kMemory);
  EXPECT_EQ(e.time, SimTime::from_seconds(example_time(add, h100, 1.5)));
}

TEST(SubprocessPlugin, MisbehavingPluginsEndWithAClearError) {
  const Hardware h100 = load_hardware("H100");
  const auto run = [&](const std::string& script, double timeout_s = 10.0) {
    return error_of([&] {
      const SubprocessEstimator plugin(kPlugins / script, {}, "",
                                       std::chrono::milliseconds(static_cast<int>(timeout_s * 1000)));
      (void)plugin.estimate(test_gemm(), h100);
    });
  };
  const std::string garbage = run("garbage.sh");
  EXPECT_NE(garbage.find("estimator plugin garbage: answered request 1 (dot_general"), std::string::npos) << garbage;
  EXPECT_NE(garbage.find("with a line that is not JSON: this is not json"), std::string::npos) << garbage;

  const std::string exits = run("exits.sh");
  EXPECT_NE(exits.find("estimator plugin exits: exited with status 3 while Orrery waited for request 1"),
            std::string::npos)
      << exits;
  EXPECT_NE(exits.find("plugin stderr: boom: cannot cost this op"), std::string::npos) << exits;

  const std::string hangs = run("hangs.sh", 0.3);
  EXPECT_NE(hangs.find("estimator plugin hangs: no answer to request 1"), std::string::npos) << hangs;
  EXPECT_NE(hangs.find("within 300 ms"), std::string::npos) << hangs;

  EXPECT_NE(run("negative.sh").find("returned an invalid time -1 s"), std::string::npos);
  EXPECT_NE(run("wrong_protocol.sh").find("answered the handshake without \"protocol\": 1"), std::string::npos);
  EXPECT_NE(run("no_such_plugin").find("cannot start: No such file or directory"), std::string::npos);
}

TEST(PluginTransport, ChosenByExtensionOrConfig) {
  const auto library = make_plugin_estimator(ORRERY_EXAMPLE_PLUGIN, config::PluginTransport::kAuto, {}, "", 1.0);
  EXPECT_EQ(library->name(), "example");
  const std::string forced = error_of(
      [] { (void)make_plugin_estimator(kPlugins / "garbage.sh", config::PluginTransport::kSharedLibrary, {}, "", 1.0); });
  EXPECT_NE(forced.find("cannot load"), std::string::npos) << forced;
}

}  // namespace
}  // namespace orrery::compute
