// Topology inputs: ASTRA-sim network.yml files load unchanged (and placeholder files are rejected
// clearly), and bad topology descriptions end with an error naming the key and value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "network/analytical_model.h"
#include "network/routing/routing.h"
#include "network/topology/multi_dim.h"
#include "network_test_util.h"

namespace orrery::network {
namespace {

namespace fs = std::filesystem;
using testing::scenario_from;
using testing::topology_from;

const fs::path kConfigs = fs::path(ORRERY_SHARED_DATA) / "configs";

std::string error_of(const std::string& yaml) {
  try {
    (void)topology_from(yaml);
  } catch (const OrreryError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(AstraSim, EveryNetworkFileLoadsOrIsRejectedClearly) {
  if (!fs::exists(kConfigs)) {
    GTEST_SKIP() << "shared data not found at " << kConfigs;
  }
  int loaded = 0;
  int rejected = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kConfigs)) {
    const fs::path& path = entry.path();
    if (path.extension() != ".yml") {
      continue;
    }
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool placeholder = text.find("tbd") != std::string::npos && text.find("bandwidth: [ tbd") != std::string::npos;
    try {
      const config::AstraNetworkSpec spec = load_astra_network(config::FilePath(path.string()));
      const MultiDim fabric(spec);
      std::uint32_t npus = 1;
      for (const std::uint32_t count : spec.npus_count) {
        npus *= count;
      }
      EXPECT_EQ(fabric.hosts(), npus) << path;
      EXPECT_FALSE(placeholder) << path;
      ++loaded;
    } catch (const OrreryError& error) {
      // The only files that may fail are those with placeholders; the message names the file,
      // the key and the value, and says why.
      EXPECT_TRUE(placeholder) << path << ": " << error.what();
      const std::string message = error.what();
      EXPECT_NE(message.find(path.string()), std::string::npos) << message;
      EXPECT_NE(message.find("bandwidth[0]: expected a finite number, got 'tbd'"), std::string::npos) << message;
      EXPECT_NE(message.find("placeholders such as 'tbd' are not accepted"), std::string::npos) << message;
      ++rejected;
    }
  }
  EXPECT_GE(loaded, 40);
  EXPECT_EQ(rejected, 1);  // inputs/network/dgx_v100_8gpu.yml
}

TEST(AstraSim, RingFileBuildsARingWithGibibyteLinks) {
  const fs::path file = kConfigs / "astra-sim/network/analytical/Ring_8npus.yml";
  if (!fs::exists(file)) {
    GTEST_SKIP() << "shared data not found at " << file;
  }
  const Topology topology = topology_from("network: {topology: {kind: astra_sim, file: '" + file.string() + "'}}\n");
  EXPECT_EQ(topology.num_endpoints(), 8U);
  EXPECT_EQ(topology.graph().num_links(), 16U);  // 8 bidirectional ring cables
  // 50 "GB/s" in ASTRA-sim's analytical backend is 50 * 2^30 B/s; latency 500 ns per link.
  EXPECT_DOUBLE_EQ(topology.graph().link(0).bandwidth.value, 50.0 * 1073741824.0);
  EXPECT_EQ(topology.graph().link(0).latency, SimTime::from_ns(500));
}

TEST(AstraSim, BadFilesNameFileKeyAndValue) {
  const fs::path dir = fs::temp_directory_path() / "orrery_astra_test";
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  auto message = [](const std::string& path) {
    try {
      config::FilePath file(path);
      file.key = "network.topology.file";
      (void)load_astra_network(file);
    } catch (const OrreryError& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  const std::string unknown = write("unknown.yml", "topology: [ Torus ]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [1]\n");
  EXPECT_NE(message(unknown).find("unknown.yml:1:13: error: topology[0]: unknown value 'Torus' (known: Ring, "
                                  "FullyConnected, Switch)"),
            std::string::npos)
      << message(unknown);
  const std::string lengths = write("lengths.yml", "topology: [Ring, Switch]\nnpus_count: [4]\nbandwidth: [1, 2]\nlatency: [1, 2]\n");
  EXPECT_NE(message(lengths).find("npus_count: needs one entry per dimension of 'topology'"), std::string::npos)
      << message(lengths);
  const std::string negative = write("negative.yml", "topology: [Ring]\nnpus_count: [4]\nbandwidth: [-5]\nlatency: [1]\n");
  EXPECT_NE(message(negative).find("bandwidth[0]: -5 is out of range (must be > 0)"), std::string::npos)
      << message(negative);
  EXPECT_NE(message(write("empty.yml", "")).find("not an ASTRA-sim network file"), std::string::npos);
  EXPECT_NE(message((dir / "missing.yml").string()).find("network.topology.file: cannot read"), std::string::npos);
  EXPECT_NE(message((dir / "missing.yml").string()).find("No such file or directory"), std::string::npos);
  fs::remove_all(dir);
}

TEST(TopologyErrors, NameTheKeyAndValue) {
  EXPECT_EQ(error_of("network: {topology: {kind: fat_tree, k: 4, levels: 2, oversubscription: [3]}}\n"),
            "error: network.topology.oversubscription[0]: 4 children / ratio 3 is not a whole number of up-links");
  EXPECT_EQ(error_of("network: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 10}}\n"),
            "error: network.topology.g: 10 groups need more global ports than a*h = 8 per group (g <= a*h + 1)");
  EXPECT_NE(error_of("network: {topology: {kind: dragonfly, p: 1, a: 2, h: 3, g: 5}}\n")
                .find("network.topology.arrangement: the absolute arrangement gives group"),
            std::string::npos);
  EXPECT_NE(error_of("network: {topology: {kind: torus, dims: [2, 2, 2, 2]}}\n")
                .find("network.topology.dims: a torus has 2 or 3 dimensions"),
            std::string::npos);
  EXPECT_NE(error_of("network: {topology: {kind: fat_tree, levels: 0}}\n")
                .find("network.topology.levels: 0 is out of range (must be 1 to 8)"),
            std::string::npos);
  EXPECT_NE(error_of("network: {topology: {kind: astra_sim}}\n")
                .find("network.topology.file: give exactly one of 'file' and 'spec'"),
            std::string::npos);
  EXPECT_NE(error_of("network: {topology: {kind: astra_sim, spec: {topology: [Ring], npus_count: [4, 2], "
                     "bandwidth: [1], latency: [1]}}}\n")
                .find("network.topology.spec.npus_count: needs one entry per dimension"),
            std::string::npos);
  EXPECT_NE(error_of("network: {nic: {rails: 0}}\n").find("network.nic.rails: 0 is out of range"), std::string::npos);
  EXPECT_NE(error_of("network: {routing: adaptive}\n")
                .find("network.routing: unknown value 'adaptive' (known: minimal, valiant, d_mod_k, ecmp, "
                      "dimension_order)"),
            std::string::npos);
  EXPECT_NE(error_of("network: {topology: {kind: fat_tree, k: 64, levels: 5}}\n").find("2^24"), std::string::npos);
}

}  // namespace
}  // namespace orrery::network
