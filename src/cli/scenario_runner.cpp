#include "cli/scenario_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "cli/trace_output.h"
#include "compute/hardware.h"
#include "compute/program_costs.h"
#include "compute/rules.h"
#include "frontend/chakra/workload.h"
#include "frontend/generate/llm.h"
#include "frontend/stablehlo/stablehlo.h"
#include "network/topology/multi_dim.h"
#include "pdes/mpi_communicator.h"
#include "system/rank_set.h"
#include "util/assert.h"
#include "workload/program_builder.h"
#include "workload/spmd_partition.h"

namespace orrery::cli {
namespace {

// The compute module's cost table seen as the system layer's op times.
class CostTableTimes final : public system::OpTimes {
 public:
  explicit CostTableTimes(compute::ProgramCosts costs) : costs_(std::move(costs)) {}
  [[nodiscard]] bool takes_time(workload::OpId op) const override {
    return costs_.ops[op].role == compute::CostRole::kCompute;
  }
  [[nodiscard]] SimTime time(workload::OpId op) const override { return costs_.ops[op].time; }
  [[nodiscard]] workload::OpId kernel_of(workload::OpId op) const override { return costs_.ops[op].fused_into; }
  [[nodiscard]] std::string kernel_label(workload::OpId op) const override {
    const compute::OpCost& c = costs_.ops[op];
    return c.fused_ops == 0 ? std::string()
                            : fmt::format("fusion of {} ops ({})", c.fused_ops + 1, config::enum_to_string(c.op_class));
  }
  [[nodiscard]] bool stored(workload::OpId op) const override { return costs_.ops[op].stored; }
  [[nodiscard]] const compute::ProgramCosts& costs() const { return costs_; }

 private:
  compute::ProgramCosts costs_;
};

// Chakra nodes: the trace's durations, or ASTRA-sim's roofline for nodes without one.
class ChakraTimes final : public system::OpTimes {
 public:
  ChakraTimes(std::vector<frontend::chakra::NodeCost> costs, double peak_flops, double memory_bandwidth)
      : costs_(std::move(costs)), peak_flops_(peak_flops), memory_bandwidth_(memory_bandwidth) {}
  [[nodiscard]] bool takes_time(workload::OpId op) const override {
    return costs_[op].kind != frontend::chakra::CostKind::kFree;
  }
  [[nodiscard]] SimTime time(workload::OpId op) const override {
    const frontend::chakra::NodeCost& c = costs_[op];
    switch (c.kind) {
      case frontend::chakra::CostKind::kFree: return SimTime::zero();
      case frontend::chakra::CostKind::kDuration: return SimTime::from_ps(c.duration_ps);
      case frontend::chakra::CostKind::kRoofline:
        return SimTime::from_seconds(std::max(static_cast<double>(c.num_ops) / peak_flops_,
                                              static_cast<double>(c.tensor_size) / memory_bandwidth_));
      case frontend::chakra::CostKind::kMemory:
        return SimTime::from_seconds(static_cast<double>(c.tensor_size) / memory_bandwidth_);
    }
    return SimTime::zero();
  }

 private:
  std::vector<frontend::chakra::NodeCost> costs_;
  double peak_flops_;
  double memory_bandwidth_;
};

// The Chakra traces of `workload.chakra` as the simulation's programs.
// With a communicator, each process reads its block of the ranks' files (load_workload).
void load_chakra(const config::Scenario& scenario, const compute::Hardware& hardware,
                 system::SimulationInput& input, RunResult& result, pdes::Communicator* communicator) {
  const config::ChakraConfig& chakra = scenario.workload.chakra;
  frontend::chakra::WorkloadOptions options;
  options.prefix = chakra.prefix.path;
  options.ranks = chakra.ranks;
  options.comm_groups = chakra.comm_groups.path;
  if (const auto* astra = std::get_if<config::AstraSimTopologyConfig>(&scenario.network.topology)) {
    options.dimensions = (astra->file.empty() ? astra->inline_spec : network::load_astra_network(astra->file)).npus_count;
  }
  auto loaded = frontend::chakra::load_workload(options, communicator);
  if (!loaded) {
    const Error& error = loaded.error();
    throw OrreryError(error.code == ErrorCode::kIo ? config::attributed_to(chakra.prefix, error) : error);
  }
  frontend::chakra::Workload& workload = loaded.value();
  for (std::string& warning : workload.warnings) {
    result.warnings.push_back(std::move(warning));
  }
  // ASTRA-sim's roofline for COMP nodes without a duration: the preset's bf16 matrix peak (its
  // vector peak if it has none) and its memory bandwidth.
  const auto bf16 = static_cast<std::size_t>(workload::ElementType::kBF16);
  double peak = hardware.roofline.matrix_peak[bf16].value > 0 ? hardware.roofline.matrix_peak[bf16].value
                                                               : hardware.roofline.vector_peak.value;
  double bandwidth = hardware.roofline.memory_bandwidth.value;
  if (chakra.roofline_peak_tflops > 0) {
    peak = chakra.roofline_peak_tflops * 1e12;
  }
  if (chakra.roofline_memory_gbps > 0) {
    bandwidth = chakra.roofline_memory_gbps * 1e9;
  }
  for (frontend::chakra::Program& program : workload.programs) {
    system::ProgramInput in{program.program, program.label, program.ranks,
                            std::make_shared<ChakraTimes>(std::move(program.costs), peak, bandwidth),
                            0};
    in.estimate_memory = false;
    if (program.memory) {  // the device tensors the trace lists (PyTorch-converted traces)
      system::MemoryEstimate given;
      given.program = program.label;
      given.arguments = program.memory->arguments;
      given.peak = program.memory->peak;
      in.memory = given;
    }
    if (!program.joint_groups.empty()) {
      in.joint_groups = std::make_shared<const workload::JointGroups>(std::move(program.joint_groups));
    }
    input.programs.push_back(std::move(in));
  }
  result.compute.estimators = "chakra trace (durations; roofline where a node has none)";
}

std::string describe_estimators(const config::ComputeConfig& compute) {
  std::string text(config::enum_to_string(compute.estimator));
  for (const auto& rule : compute.rules) {
    std::string ops;
    for (const auto& op : rule.ops) {
      ops += (ops.empty() ? "" : ",") + op;
    }
    for (const auto& op_class : rule.classes) {
      ops += (ops.empty() ? "" : ",") + std::string(config::enum_to_string(op_class));
    }
    text += fmt::format("; {} for {}", config::enum_to_string(rule.estimator), ops);
  }
  return text;
}

std::shared_ptr<const workload::Program> load_program(const config::ProgramConfig& entry, std::size_t index,
                                                      std::vector<std::string>& warnings) {
  frontend::stablehlo::Options options;
  options.trip_counts = entry.loop_trip_counts;
  auto modules = frontend::stablehlo::parse_file(entry.file.path, options);
  if (!modules) {
    Error error = config::attributed_to(entry.file, modules.error());
    if (error.code == ErrorCode::kIo && !entry.missing_hint.empty()) {
      error.notes.push_back(entry.missing_hint);
    }
    throw OrreryError(std::move(error));
  }
  auto& parsed = modules.value();
  if (entry.module >= parsed.size()) {
    throw OrreryError(ErrorCode::kConfig, fmt::format("workload.programs[{}].module: {} has {} modules, not {}", index,
                                                      entry.file.path, parsed.size(), entry.module + 1));
  }
  for (const auto& warning : parsed[entry.module].warnings) {
    warnings.push_back(fmt::format("{}: {}", entry.file.path, warning));
  }
  return parsed[entry.module].program;
}

// Costs a StableHLO program and adds it to the simulation's programs, counting the ops costed by
// a fallback estimator.
void add_program(std::shared_ptr<const workload::Program> program, std::string label,
                 std::vector<std::uint32_t> ranks, std::uint32_t replicas, const config::Scenario& scenario,
                 compute::ComputeModel& compute_model, system::SimulationInput& input, RunResult& result) {
  if (scenario.compute.inline_calls) {  // as XLA does before it fuses (compute.inline_calls)
    program = workload::ProgramBuilder::inline_calls(*program);
  }
  if (program->form() == workload::ProgramForm::kPrePartitioning && program->num_devices() > 1) {
    // The global program with its shardings: every device runs its part of it, as XLA's SPMD
    // partitioner makes it (calls are inlined first, whatever compute.inline_calls says).
    workload::SpmdReport report;
    program = workload::partition_spmd(workload::ProgramBuilder::inline_calls(*program), &report);
    std::uint64_t inserted = 0;
    for (const auto& [kind, count] : report.collectives) {
      inserted += count;
    }
    spdlog::info("{}: partitioned for {} devices by Orrery's SPMD partitioner: {} collectives inserted",
                 label, report.devices, inserted);
    if (!report.replicated_ops.empty()) {
      std::string ops;
      for (const auto& [name, count] : report.replicated_ops) {
        ops += fmt::format("{}{} x{}", ops.empty() ? "" : ", ", name, count);
      }
      result.warnings.push_back(fmt::format(
          "{}: ops with no SPMD partitioning rule run on whole operands on every device (their operands "
          "gathered; docs/stablehlo.md, \"SPMD partitioning\"): {}",
          label, ops));
    }
    result.partitioned.emplace_back(label, std::move(report));
  }
  compute::ProgramCosts costs =
      compute::cost_program(*program, compute_model, compute::CostOptions::from(scenario.compute));
  for (const compute::OpCost& cost : costs.ops) {
    if (cost.role == compute::CostRole::kCompute && cost.estimator.starts_with("fallback")) {
      ++result.compute.fallbacks;
    }
  }
  input.programs.push_back(system::ProgramInput{std::move(program), std::move(label), std::move(ranks),
                                                std::make_shared<CostTableTimes>(std::move(costs)),
                                                replicas});
}

// `workload.llm` as the generator's job. The generator's messages name command-line options
// (`--kv-heads`); here they name the scenario's keys (`workload.llm.kv_heads`).
frontend::generate::LlmJob llm_job(const config::LlmWorkloadConfig& c) {
  namespace gen = frontend::generate;
  try {
    gen::LlmJob job;
    job.model = gen::resolve_model(
        c.model,
        gen::ModelOverrides{c.layers, c.hidden, c.heads, c.head_dim, c.kv_heads, c.ffn, c.vocab, c.experts,
                            c.top_k, c.shared_ffn, c.dense_layers, c.dense_ffn, c.kv_lora_rank, c.q_lora_rank,
                            c.rope_head_dim, c.v_head_dim, c.tie_embeddings, c.untie_embeddings});
    job.ep = c.ep;
    job.capacity_factor = c.capacity_factor;
    job.tp = c.tp;
    job.pp = c.pp;
    job.cp = c.cp;
    job.cp_comm = c.cp_comm == config::LlmCpCommConfig::kP2p   ? gen::CpComm::kP2p
                  : c.cp_comm == config::LlmCpCommConfig::kA2a ? gen::CpComm::kA2a
                                                               : gen::CpComm::kAllGather;
    job.virtual_stages = c.virtual_stages;
    job.first_stage_layers = c.first_stage_layers;
    job.last_stage_layers = c.last_stage_layers;
    job.dp = c.dp;
    job.micro_batch = c.micro_batch;
    job.micro_batches = c.micro_batches;
    job.seq = c.seq;
    job.schedule = c.schedule == config::LlmScheduleConfig::kGPipe ? gen::PipelineSchedule::kGPipe
                   : c.schedule == config::LlmScheduleConfig::kZeroBubbleH1
                       ? gen::PipelineSchedule::kZeroBubbleH1
                       : gen::PipelineSchedule::kOneFOneB;
    job.recompute =
        c.recompute == config::LlmRecomputeConfig::kFull ? gen::Recompute::kFull : gen::Recompute::kNone;
    job.attention =
        c.attention == config::LlmAttentionConfig::kNaive ? gen::Attention::kNaive : gen::Attention::kFlash;
    job.sequence_parallel = c.sequence_parallel;
    job.tp_comm_overlap = c.tp_comm_overlap;
    job.zero = c.distributed_optimizer;
    job.fsdp = c.fsdp;
    job.shard_group = c.shard_group;
    job.no_sync = c.no_sync;
    job.fp8 = c.fp8;
    job.grads_in_bf16 = c.grad_dtype == config::LlmGradTypeConfig::kBf16;
    job.bucket_elements = c.bucket_elements;
    gen::validate(job);
    return job;
  } catch (const OrreryError& error) {
    std::string message = error.error().message;
    for (std::size_t at = message.find("--"); at != std::string::npos; at = message.find("--", at)) {
      std::size_t end = at + 2;
      while (end < message.size() &&
             (std::isalnum(static_cast<unsigned char>(message[end])) != 0 || message[end] == '-')) {
        ++end;
      }
      std::string key = message.substr(at + 2, end - at - 2);
      std::replace(key.begin(), key.end(), '-', '_');  // the options' names are the keys' names
      const std::string replacement = "workload.llm." + key;
      message.replace(at, end - at, replacement);
      at += replacement.size();
    }
    throw OrreryError(ErrorCode::kConfig, message);
  }
}

// The stages of `workload.llm`, generated and parsed in memory, with their ranks.
void load_llm(const config::Scenario& scenario, compute::ComputeModel& compute_model,
              system::SimulationInput& input, RunResult& result) {
  const frontend::generate::LlmJob job = llm_job(scenario.workload.llm);
  const std::uint32_t per_stage = job.tp * job.dp;
  for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
    auto source = std::make_shared<workload::SourceText>();
    source->path = fmt::format("workload.llm/stage_{}.mlir", stage);
    source->text = frontend::generate::stage_program(job, stage);
    auto modules = frontend::stablehlo::parse_source(source, {});
    ORRERY_ASSERT(modules.ok() && modules.value().size() == 1, "a generated stage parses");
    auto program = modules.value().front().program;
    std::vector<std::uint32_t> ranks(per_stage);
    for (std::uint32_t i = 0; i < per_stage; ++i) {
      ranks[i] = stage * per_stage + i;
    }
    add_program(std::move(program), source->path, std::move(ranks), 0, scenario, compute_model, input,
                result);
  }
}

}  // namespace

compute::Hardware load_scenario_hardware(const config::Scenario& scenario) {
  try {
    return compute::load_hardware(scenario.hardware.path);
  } catch (const OrreryError& error) {
    throw OrreryError(config::attributed_to(scenario.hardware, error.error()));
  }
}

system::SimulationInput prepare_simulation(const config::Scenario& scenario, RunResult& result,
                                           pdes::Communicator* communicator) {
  system::SimulationInput input;
  input.scenario = &scenario;
  std::unique_ptr<compute::ComputeModel> compute_model;
  if (scenario.workload.programs.empty() && scenario.workload.chakra.prefix.empty() &&
      !scenario.workload.llm.enabled()) {
    throw OrreryError(ErrorCode::kConfig, "workload.programs: the scenario names no program to run");
  }
  compute::Hardware hardware = load_scenario_hardware(scenario);
  input.hardware = hardware.name;
  input.memory_bandwidth = hardware.roofline.memory_bandwidth;
  input.memory_capacity = hardware.memory_capacity;
  result.compute.hardware = hardware.name;
  if (!scenario.workload.chakra.prefix.empty()) {
    load_chakra(scenario, hardware, input, result, communicator);
    return input;
  }
  result.compute.estimators = describe_estimators(scenario.compute);
  compute_model = std::make_unique<compute::ComputeModel>(scenario.compute, std::move(hardware));
  if (scenario.workload.llm.enabled()) {
    load_llm(scenario, *compute_model, input, result);
  }
  const bool single = scenario.workload.programs.size() == 1;
  for (std::size_t i = 0; i < scenario.workload.programs.size(); ++i) {
    const config::ProgramConfig& entry = scenario.workload.programs[i];
    auto program = load_program(entry, i, result.warnings);
    const std::string where = fmt::format("workload.programs[{}].ranks", i);
    if (entry.ranks == "all" && !single) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("{}: 'all' needs a single program; give each program its ranks", where));
    }
    const std::uint32_t devices = entry.replicas > 0 ? entry.replicas : program->num_devices();
    std::vector<std::uint32_t> ranks = system::parse_rank_set(entry.ranks, devices, where);
    std::string label = entry.file.path;
    if (entry.module > 0) {
      label += fmt::format(" (module {})", entry.module);
    }
    add_program(std::move(program), std::move(label), std::move(ranks), entry.replicas, scenario,
                *compute_model, input, result);
  }
  const compute::CacheStats cache = compute_model->cache_stats();
  result.compute.lookups = cache.lookups;
  result.compute.hits = cache.hits;
  return input;
}

RunResult run_scenario(pdes::Communicator& communicator, const config::Scenario& scenario) {
  const auto start = std::chrono::steady_clock::now();
  RunResult result;
  system::SimulationInput input;
  pdes::run_collectively(communicator, [&] { input = prepare_simulation(scenario, result, &communicator); });
  // The trace file is created before the run, so that a path that cannot be written fails first.
  std::unique_ptr<trace::Writer> writer;
  system::TraceRecord record;
  if (!scenario.output.trace.empty()) {
    const auto* mpi = dynamic_cast<const pdes::MpiCommunicator*>(&communicator);
    if (mpi == nullptr) {
      throw OrreryError(ErrorCode::kUnsupported, "output.trace: traces are written with MPI-IO (orrery run)");
    }
    // Every process fails alike if the file cannot be created (the writer agrees on it); only the
    // first reports it.
    pdes::run_collectively(communicator, [&] {
      try {
        writer = std::make_unique<trace::Writer>(mpi->comm(), scenario.output.trace.path);
      } catch (const OrreryError& error) {
        throw OrreryError(config::attributed_to(scenario.output.trace, error.error()));
      }
    });
    begin_trace(*writer, scenario);
    record.detail = scenario.output.detail;
  }
  result.summary = system::simulate(communicator, input, writer ? &record : nullptr);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (writer) {
    write_trace(*writer, result, record, communicator.rank(), communicator.size());
  }
  return result;
}

}  // namespace orrery::cli
