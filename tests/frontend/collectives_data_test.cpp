// Collectives of three real training steps, as `orrery inspect` reports them (workload::summarize),
// against counts and bytes this test derives from the file text itself with a plain line scan:
// every line that names a collective op is one op; its per-device result bytes come from the
// result types after the last `->` of the op's signature (on the same line, or on the line that
// closes its reduction region).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "frontend/stablehlo/stablehlo.h"
#include "workload/collectives.h"
#include "workload/summary.h"

namespace orrery::frontend::stablehlo {
namespace {

namespace fs = std::filesystem;

struct Expected {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
};

std::uint64_t element_bytes(const std::string& element) {
  static const std::map<std::string, std::uint64_t> sizes = {{"bf16", 2}, {"f16", 2}, {"f32", 4}, {"f64", 8},
                                                             {"i1", 1},   {"i8", 1},  {"i16", 2}, {"i32", 4},
                                                             {"i64", 8},  {"ui8", 1}, {"ui32", 4}};
  const auto it = sizes.find(element);
  return it == sizes.end() ? 0 : it->second;
}

// Bytes of the tensor types in `text` (e.g. "tensor<576xbf16>" or "(tensor<4xf32>, tensor<f32>)").
std::uint64_t bytes_of_types(const std::string& text) {
  static const std::regex tensor(R"(tensor<((?:\d+x)*)([a-z0-9]+)>)");
  std::uint64_t total = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), tensor); it != std::sregex_iterator(); ++it) {
    std::uint64_t elements = 1;
    const std::string dims = (*it)[1].str();
    std::size_t begin = 0;
    while (begin < dims.size()) {
      const std::size_t x = dims.find('x', begin);
      elements *= std::stoull(dims.substr(begin, x - begin));
      begin = x + 1;
    }
    total += elements * element_bytes((*it)[2].str());
  }
  return total;
}

// kind -> (count, bytes), by scanning lines.
std::map<std::string, Expected> scan(const fs::path& path) {
  static const std::regex op(
      R"re("stablehlo\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|collective_broadcast)")re");
  std::ifstream in(path);
  std::map<std::string, Expected> found;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch match;
    if (line.find("//") == 0 || !std::regex_search(line, match, op)) {
      continue;
    }
    Expected& e = found[match[1].str()];
    ++e.count;
    std::string signature = line;
    if (line.size() >= 2 && line.compare(line.size() - 2, 2, "({") == 0) {
      // The signature follows the region: the first line that starts (after spaces) with "}) :".
      while (std::getline(in, signature) && signature.find("}) :") == std::string::npos) {
      }
    }
    e.bytes += bytes_of_types(signature.substr(signature.rfind("->") + 2));
  }
  return found;
}

void check_file(const std::string& relative, std::uint32_t expected_group_size) {
  const fs::path path = fs::path(ORRERY_SHARED_DATA) / "stablehlo" / relative;
  if (!fs::exists(path)) {
    GTEST_SKIP() << "shared data file absent: " << path;
  }
  const std::map<std::string, Expected> expected = scan(path);
  ASSERT_FALSE(expected.empty()) << "the scan found no collectives in " << relative;
  auto modules = parse_file(path.string(), Options{});
  ASSERT_TRUE(modules.ok()) << modules.error().render();
  ASSERT_EQ(modules.value().size(), 1U);
  const workload::ProgramSummary summary = workload::summarize(*modules.value()[0].program);
  ASSERT_EQ(summary.collectives.size(), expected.size());
  for (const auto& [kind, e] : expected) {
    SCOPED_TRACE(relative + ": " + kind);
    const auto it = summary.collectives.find(kind);
    ASSERT_NE(it, summary.collectives.end());
    EXPECT_EQ(it->second.count, e.count);
    EXPECT_EQ(it->second.bytes, e.bytes);
    // Every group in these programs spans all devices.
    ASSERT_EQ(it->second.group_sizes.size(), 1U);
    EXPECT_EQ(it->second.group_sizes.begin()->first, expected_group_size);
  }
}

TEST(CollectivesOfRealPrograms, Llama3PartitionedForFourDevices) {
  check_file("hespas_workloads/llama3-100m.post-spmd-4dev.mlir", 4);
}

TEST(CollectivesOfRealPrograms, ResNet18PmapOnFourReplicas) {
  check_file("hespas_workloads/resnet18_train_4_devices.mlir", 4);
}

TEST(CollectivesOfRealPrograms, ResNet50TrainStepOnFourReplicas) {
  check_file("hespas/resnet50_train_step_4dev_b1024.mlir", 4);
}

// The Llama module's collectives in detail: channel handles, use_global_device_ids (so
// flattened ids), the single group of all four devices, and the reductions.
TEST(CollectivesOfRealPrograms, Llama3CollectiveAttributes) {
  const fs::path path =
      fs::path(ORRERY_SHARED_DATA) / "stablehlo/hespas_workloads/llama3-100m.post-spmd-4dev.mlir";
  if (!fs::exists(path)) {
    GTEST_SKIP() << "shared data file absent: " << path;
  }
  auto modules = parse_file(path.string(), Options{});
  ASSERT_TRUE(modules.ok()) << modules.error().render();
  const workload::Program& p = *modules.value()[0].program;
  EXPECT_EQ(p.num_partitions(), 4U);
  EXPECT_EQ(p.num_replicas(), 1U);
  EXPECT_EQ(p.form(), workload::ProgramForm::kPartitioned);
  std::size_t all_reduce = 0;
  for (workload::OpId id = 0; id < p.op_count(); ++id) {
    const workload::Op& op = p.op(id);
    if (workload::op_category(op.kind) != workload::OpCategory::kCollective) {
      continue;
    }
    const workload::CollectiveAttributes& c = p.collective(op);
    EXPECT_TRUE(c.has_channel);
    EXPECT_GT(c.channel_id, 0);
    EXPECT_TRUE(c.use_global_device_ids);
    EXPECT_EQ(workload::group_mode(c), workload::GroupMode::kFlattenedIds);
    auto groups = workload::device_groups(p, op);
    ASSERT_TRUE(groups.ok());
    EXPECT_EQ(groups.value(), (workload::DeviceGroups{{0, 1, 2, 3}}));
    if (c.kind == workload::CollectiveKind::kAllReduce) {
      ++all_reduce;
      EXPECT_EQ(c.reduction, workload::ReductionKind::kSum);
    } else {
      EXPECT_EQ(c.kind, workload::CollectiveKind::kAllGather);
      EXPECT_GE(c.all_gather_dim, 0);
    }
  }
  EXPECT_EQ(all_reduce, 272U);
}

}  // namespace
}  // namespace orrery::frontend::stablehlo
