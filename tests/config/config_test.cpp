// The scenario loader: every key typed and validated, errors with file:line:col, key path and
// reason, and --set overrides checked exactly like keys in the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/loader.h"
#include "config/scenario.h"

namespace orrery::config {
namespace {

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    (void)load_scenario_text(text, "scenario.yaml", overrides);
  } catch (const OrreryError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Scenario, DefaultsWhenEmpty) {
  const Scenario scenario = load_scenario_text("", "empty.yaml", {});
  EXPECT_EQ(scenario.hardware.path, "H100");
  EXPECT_EQ(scenario.system.devices_per_node, 8U);
  EXPECT_DOUBLE_EQ(scenario.system.endpoint_delay_ns, 1000.0);
  EXPECT_EQ(scenario.workload.steps, 1U);
  EXPECT_TRUE(std::holds_alternative<NoFabricConfig>(scenario.network.topology));
}

TEST(Scenario, ReadsEverySection) {
  const Scenario scenario = load_scenario_text(R"(
hardware: A100_40GB
system:
  devices_per_node: 4
  scale_up: {bandwidth_GBps: 300, latency_ns: 250, in_switch_reduction: true}
  endpoint_delay_ns: 500
  collectives: {all_reduce: ring, all_gather: direct}
network:
  topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9, link_GBps: 25, latency_ns: 80}
  placement: round_robin
  model: flow
workload:
  programs: [{file: /data/llama.mlir, ranks: "0-3"}]
  steps: 3
compute:
  default: roofline
  rules: [{ops: [dot_general, convolution], estimator: table, table: /data/kernels.csv}]
output: {trace: /tmp/run.h5, detail: collectives}
simulation: {seed: 7, partition: round-robin, end_time_s: 0.5}
)",
                                               "s.yaml", {});
  EXPECT_EQ(scenario.hardware.path, "A100_40GB");
  EXPECT_EQ(scenario.system.devices_per_node, 4U);
  EXPECT_DOUBLE_EQ(scenario.system.scale_up.bandwidth_gbps, 300.0);
  EXPECT_TRUE(scenario.system.scale_up.in_switch_reduction);
  EXPECT_EQ(scenario.system.collectives.all_reduce, CollectiveAlgorithm::kRing);
  EXPECT_EQ(scenario.system.collectives.all_gather, CollectiveAlgorithm::kDirect);
  EXPECT_EQ(scenario.system.collectives.reduce_scatter, CollectiveAlgorithm::kAuto);
  const auto& dragonfly = std::get<DragonflyTopologyConfig>(scenario.network.topology);
  EXPECT_EQ(dragonfly.g, 9U);
  EXPECT_DOUBLE_EQ(dragonfly.link_gbps, 25.0);
  EXPECT_EQ(scenario.network.placement, PlacementPolicy::kRoundRobin);
  EXPECT_EQ(scenario.network.model, NetworkModelKind::kFlow);
  ASSERT_EQ(scenario.workload.programs.size(), 1U);
  EXPECT_EQ(scenario.workload.programs[0].file.path, "/data/llama.mlir");
  EXPECT_EQ(scenario.workload.programs[0].ranks, "0-3");
  EXPECT_EQ(scenario.workload.steps, 3U);
  ASSERT_EQ(scenario.compute.rules.size(), 1U);
  EXPECT_EQ(scenario.compute.rules[0].ops, (std::vector<std::string>{"dot_general", "convolution"}));
  EXPECT_EQ(scenario.compute.rules[0].estimator, EstimatorKind::kTable);
  EXPECT_EQ(scenario.output.detail, TraceDetail::kCollectives);
  EXPECT_EQ(scenario.simulation.seed, 7U);
  ASSERT_TRUE(scenario.simulation.end_time_s.has_value());
  EXPECT_DOUBLE_EQ(*scenario.simulation.end_time_s, 0.5);
}

TEST(ScenarioErrors, UnknownKeyNamesFileLineColumnPathAndSuggestion) {
  const std::string message = error_of("system:\n  scale_up:\n    bandwith_GBps: 300\n");
  EXPECT_NE(message.find("scenario.yaml:3:5: error: system.scale_up.bandwith_GBps: unknown key "
                         "'bandwith_GBps' (did you mean 'bandwidth_GBps'?)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\n      bandwith_GBps: 300\n      ^"), std::string::npos) << message;
}

TEST(ScenarioErrors, WrongTypeAndOutOfRange) {
  EXPECT_NE(error_of("system:\n  devices_per_node: eight\n")
                .find("scenario.yaml:2:21: error: system.devices_per_node: expected a non-negative "
                      "integer, got 'eight'"),
            std::string::npos);
  EXPECT_NE(error_of("system:\n  devices_per_node: 0\n").find("0 is out of range (must be >= 1)"),
            std::string::npos);
  EXPECT_NE(error_of("system:\n  endpoint_delay_ns: 0\n").find("system.endpoint_delay_ns: 0 is out of range (must be > 0)"),
            std::string::npos);
  EXPECT_NE(error_of("system:\n  endpoint_delay_ns: .nan\n").find("expected a finite number"), std::string::npos);
  EXPECT_EQ((Bounds{0.0, 1.0, true}).describe(), "> 0 and <= 1");  // an efficiency: 0 excluded
  EXPECT_EQ(between(0, 4).describe(), "0 to 4");
  EXPECT_NE(error_of("system:\n  devices_per_node: -3\n").find("expected a non-negative integer"), std::string::npos);
  EXPECT_NE(error_of("system:\n  scale_up: 5\n").find("system.scale_up: expected a mapping"), std::string::npos);
  EXPECT_NE(error_of("workload:\n  programs: foo.mlir\n").find("workload.programs: expected a list"),
            std::string::npos);
}

TEST(ScenarioErrors, UnknownEnumAndVariantKind) {
  EXPECT_NE(error_of("simulation:\n  partition: metis\n")
                .find("unknown partition 'metis' (known: auto, topology, programs, block, round-robin)"),
            std::string::npos);
  EXPECT_NE(
      error_of("workload:\n  llm: {model: llama3-8b, cp: 2, cp_comm: ring}\n").find("workload.llm.cp_comm"),
      std::string::npos);
  EXPECT_NE(error_of("network:\n  model: fluid\n")
                .find("network.model: unknown value 'fluid' (known: analytical, flow, packet)"),
            std::string::npos);
  EXPECT_NE(error_of("network:\n  topology: {kind: hypercube}\n")
                .find("network.topology.kind: unknown kind 'hypercube' (known: none, switch, fat_tree, dragonfly, torus, astra_sim)"),
            std::string::npos);
  EXPECT_NE(error_of("network:\n  topology: {p: 4}\n").find("network.topology.kind: missing 'kind'"),
            std::string::npos);
  // Keys of another kind are unknown for this one.
  EXPECT_NE(error_of("network:\n  topology: {kind: torus, p: 4}\n").find("network.topology.p: unknown key 'p'"),
            std::string::npos);
}

TEST(ScenarioErrors, CrossFieldRulesAndListPaths) {
  EXPECT_NE(error_of("compute:\n  rules: [{ops: [dot_general], estimator: table}]\n")
                .find("compute.rules[0].table: the table estimator needs a table file"),
            std::string::npos);
  EXPECT_NE(error_of("workload:\n  programs: [{ranks: all}]\n").find("workload.programs[0].file: a program needs a file"),
            std::string::npos);
}

TEST(ScenarioErrors, EveryProblemIsReported) {
  const std::string message = error_of("hardwre: H100\nsystem: {chunks: 0}\n");
  EXPECT_NE(message.find("hardwre"), std::string::npos);
  EXPECT_NE(message.find("system.chunks"), std::string::npos);
}

TEST(ScenarioErrors, DuplicateKeysAndYamlSyntax) {
  EXPECT_NE(error_of("hardware: H100\nhardware: B200\n").find("scenario.yaml:2:1: error: hardware: duplicate key"),
            std::string::npos);
  const std::string syntax = error_of("system:\n  scale_up: {bandwidth_GBps: 3\n");
  EXPECT_NE(syntax.find("scenario.yaml:3:1: error: invalid YAML"), std::string::npos) << syntax;
}

TEST(ScenarioErrors, MissingFile) {
  try {
    (void)load_scenario("/nonexistent/scenario.yaml", {});
    FAIL();
  } catch (const OrreryError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(error.what()).find("cannot read '/nonexistent/scenario.yaml'"), std::string::npos);
  }
}

TEST(Overrides, ScalarNestedAndCreatedKeys) {
  const Scenario scenario = load_scenario_text(
      "hardware: H100\nsystem: {devices_per_node: 8}\n", "s.yaml",
      {"hardware=B200", "system.devices_per_node=4", "system.scale_up.latency_ns=120", "network.model=flow",
       "network.topology={kind: fat_tree, k: 4, levels: 2}"});
  EXPECT_EQ(scenario.hardware.path, "B200");
  EXPECT_EQ(scenario.system.devices_per_node, 4U);
  EXPECT_DOUBLE_EQ(scenario.system.scale_up.latency_ns, 120.0);
  EXPECT_EQ(scenario.network.model, NetworkModelKind::kFlow);
  EXPECT_EQ(std::get<FatTreeTopologyConfig>(scenario.network.topology).k, 4U);
}

TEST(Overrides, ListIndexAndRelativePaths) {
  const Scenario scenario =
      load_scenario_text("workload:\n  programs: [{file: a.mlir}, {file: b.mlir}]\n", "s.yaml",
                         {"workload.programs.1.ranks=4-7", "workload.programs.0.file=c.mlir"});
  EXPECT_EQ(scenario.workload.programs[1].ranks, "4-7");
  EXPECT_EQ(scenario.workload.programs[0].file.path, (std::filesystem::current_path() / "c.mlir").string());
}

TEST(Overrides, ErrorsNameTheOverride) {
  EXPECT_NE(error_of("", {"system.devices_per_nodes=4"})
                .find("--set system.devices_per_nodes=4: error: system.devices_per_nodes: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of("", {"system.devices_per_node=many"}).find("--set system.devices_per_node=many: error:"),
            std::string::npos);
  EXPECT_NE(error_of("", {"hardware"}).find("--set hardware: expected key.path=value"), std::string::npos);
  EXPECT_NE(error_of("", {"system..chunks=2"}).find("empty key component"), std::string::npos);
  EXPECT_NE(error_of("workload: {programs: [{file: a}]}", {"workload.programs.3.file=x"})
                .find("'3' is not an index of a list with 1 entries"),
            std::string::npos);
  EXPECT_NE(error_of("", {"network.topology={kind: [}"}).find("the value is not valid YAML"), std::string::npos);
  // An index past any list is an error, not an exception from the number conversion.
  EXPECT_NE(error_of("workload: {programs: [{file: a}]}", {"workload.programs.99999999999999999999999.file=x"})
                .find("'99999999999999999999999' is not an index of a list with 1 entries"),
            std::string::npos);
}

TEST(Overrides, KeyPathsNameListEntriesOneWay) {
  EXPECT_EQ(override_path("workload.programs.007.ranks=0-3"),
            (std::vector<std::string>{"workload", "programs", "7", "ranks"}));
  EXPECT_EQ(override_path("a.00=1"), (std::vector<std::string>{"a", "0"}));
  EXPECT_EQ(override_path("hardware=x=y"), (std::vector<std::string>{"hardware"}));
  const Scenario scenario = load_scenario_text("workload:\n  programs: [{file: a.mlir}, {file: b.mlir}]\n", "s.yaml",
                                               {"workload.programs.01.ranks=4-7"});
  EXPECT_EQ(scenario.workload.programs[1].ranks, "4-7");
  EXPECT_THROW((void)override_path("=1"), OrreryError);
  EXPECT_THROW((void)override_path("a..b=1"), OrreryError);
}

TEST(Scenario, RelativePathsResolveAgainstTheScenarioDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / "orrery_config_test";
  std::filesystem::create_directories(dir);
  const auto file = dir / "s.yaml";
  std::ofstream(file) << "workload:\n  programs: [{file: models/x.mlir}]\n";
  const Scenario scenario = load_scenario(file.string(), {});
  EXPECT_EQ(scenario.workload.programs[0].file.path, (dir / "models/x.mlir").string());
  std::filesystem::remove_all(dir);
}

TEST(Scenario, HardwareIsANameOrAPathResolvedLikeOtherPaths) {
  const auto dir = std::filesystem::temp_directory_path() / "orrery_config_hardware_test";
  std::filesystem::create_directories(dir);
  const auto file = dir / "s.yaml";
  std::ofstream(file) << "hardware: presets/mine.yaml\n";
  EXPECT_EQ(load_scenario(file.string(), {}).hardware.path, (dir / "presets/mine.yaml").string());
  std::ofstream(file) << "hardware: A100_40GB\n";
  EXPECT_EQ(load_scenario(file.string(), {}).hardware.path, "A100_40GB");  // a name is looked up later
  EXPECT_EQ(load_scenario(file.string(), {"hardware=local.json"}).hardware.path,
            (std::filesystem::current_path() / "local.json").string());  // --set paths: the working directory
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(names_a_file("x/H100"));
  EXPECT_TRUE(names_a_file("H100.yml"));
  EXPECT_FALSE(names_a_file("H100"));
}

// A file that cannot be read is reported at the scenario key that named it.
TEST(FilePaths, ErrorsFromReadingAFileNameTheKeyAndItsLine) {
  const Scenario scenario = load_scenario_text("output:\n  summary_json: out/s.json\nworkload:\n  programs:\n"
                                               "    - {file: /abs/p.mlir}\n",
                                               "scenario.yaml", {});
  const FilePath& program = scenario.workload.programs[0].file;
  EXPECT_EQ(program.key, "workload.programs[0].file");
  ASSERT_TRUE(program.where.has_value());
  EXPECT_EQ(program.where->line, 5U);
  EXPECT_EQ(program.where->column, 14U);

  Error cannot_open{ErrorCode::kIo, "cannot open '/abs/p.mlir': No such file or directory", std::nullopt, {}};
  const std::string opened = attributed_to(program, cannot_open).render();
  EXPECT_NE(opened.find("scenario.yaml:5:14: error: workload.programs[0].file: cannot open '/abs/p.mlir'"),
            std::string::npos)
      << opened;
  EXPECT_EQ(opened.find("relative"), std::string::npos) << "an absolute path needs no note";

  const FilePath& summary = scenario.output.summary_json;
  const Error relative = attributed_to(summary, Error{ErrorCode::kIo, "cannot write", std::nullopt, {}});
  ASSERT_EQ(relative.notes.size(), 1U);
  EXPECT_NE(relative.notes[0].find("'out/s.json' is relative, so it was resolved to '" +
                                   (std::filesystem::current_path() / "out/s.json").string() +
                                   "' (against the directory of the scenario file)"),
            std::string::npos)
      << relative.notes[0];

  // An error inside the file keeps the file's own line and names the key in a note.
  const Error inside = attributed_to(
      program, Error{ErrorCode::kParse, "unknown op", SourceLocation{"/abs/p.mlir", 7, 3, "x"}, {}});
  EXPECT_EQ(inside.where->file, "/abs/p.mlir");
  EXPECT_EQ(inside.message, "unknown op");
  ASSERT_EQ(inside.notes.size(), 1U);
  EXPECT_EQ(inside.notes[0], "the file is named by workload.programs[0].file (scenario.yaml:5:14)");

  // A path given with --set is reported at the --set and resolved against the working directory.
  const Scenario overridden = load_scenario_text("", "scenario.yaml", {"compute.table=k.csv"});
  const std::string set =
      attributed_to(overridden.compute.table, Error{ErrorCode::kIo, "cannot read 'k.csv'", std::nullopt, {}}).render();
  EXPECT_NE(set.find("--set compute.table=k.csv: error: compute.table: cannot read"), std::string::npos) << set;
  EXPECT_NE(set.find("against the working directory"), std::string::npos) << set;

  // A path not read from a config (built by a tool) is left alone.
  const Error plain = attributed_to(FilePath("/x"), cannot_open);
  EXPECT_EQ(plain.message, cannot_open.message);
  EXPECT_FALSE(plain.where.has_value());
}

TEST(Scenario, RoundTripsThroughYaml) {
  const Scenario original = load_scenario_text(
      "hardware: B200\nnetwork: {topology: {kind: torus, dims: [4, 4, 2]}, model: flow}\n"
      "workload: {programs: [{file: /x.mlir, loop_trip_counts: {body: 12}}]}\n",
      "s.yaml", {});
  const Scenario again = load_scenario_text(scenario_to_yaml(original), "again.yaml", {});
  EXPECT_EQ(scenario_to_yaml(again), scenario_to_yaml(original));
  EXPECT_EQ(std::get<TorusTopologyConfig>(again.network.topology).dims, (std::vector<std::uint32_t>{4, 4, 2}));
  EXPECT_EQ(again.workload.programs[0].loop_trip_counts.at("body"), 12U);
}

// docs/config.md carries the generated reference between markers; this test keeps it in sync
// (run `make docs` to regenerate).
TEST(ConfigReference, DocsPageMatchesTheSchema) {
  const std::filesystem::path page = std::filesystem::path(ORRERY_SOURCE_DIR) / "docs" / "config.md";
  std::string text = read_text_file(page.string());
  const std::string begin = "<!-- BEGIN GENERATED REFERENCE -->\n";
  const std::string end = "<!-- END GENERATED REFERENCE -->";
  const auto from = text.find(begin);
  const auto to = text.find(end);
  ASSERT_NE(from, std::string::npos) << "docs/config.md lacks the generated-reference markers";
  ASSERT_NE(to, std::string::npos);
  const std::string current = text.substr(from + begin.size(), to - from - begin.size());
  const std::string expected = scenario_reference_markdown();
  if (std::getenv("ORRERY_UPDATE_DOCS") != nullptr) {
    text.replace(from + begin.size(), to - from - begin.size(), expected);
    std::ofstream(page) << text;
    return;
  }
  EXPECT_EQ(current, expected) << "docs/config.md is out of date: run `make docs`";
}

}  // namespace
}  // namespace orrery::config
