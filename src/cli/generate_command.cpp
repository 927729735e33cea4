// `orrery generate llm [--model NAME] [--layers ...] --dp D --tp T --pp P ... --out DIR`: writes
// one StableHLO module per pipeline stage (DIR/stage_<s>.mlir) and a scenario that runs them
// (DIR/scenario.yaml), and prints what was generated (docs/generate.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "frontend/generate/llm.h"
#include "util/error.h"
#include "util/file.h"

namespace orrery::cli {
namespace {

namespace gen = frontend::generate;

struct GenerateArguments {
  std::string model;
  gen::ModelOverrides dimensions;  // 0: the preset's
  gen::LlmJob job;
  std::string schedule = "1f1b";
  std::string recompute = "none";
  std::string grad_dtype = "f32";
  std::string attention = "flash";
  std::string cp_comm = "all-gather";
  gen::ScenarioOptions scenario;
  std::string out;
  bool json = false;
  bool zero = false;
  bool fsdp = false;
  bool fp8 = false;
  bool sequence_parallel = false;
  bool tp_comm_overlap = false;
};

void write_or_throw(const std::filesystem::path& path, const std::string& text) {
  auto written = write_file(path.string(), text);
  if (!written) {
    throw OrreryError(written.error());
  }
}

int generate_llm(GenerateArguments& a) {
  gen::LlmJob job = a.job;
  job.model = gen::resolve_model(a.model, a.dimensions);
  job.schedule = a.schedule == "gpipe"   ? gen::PipelineSchedule::kGPipe
                 : a.schedule == "zb-h1" ? gen::PipelineSchedule::kZeroBubbleH1
                                         : gen::PipelineSchedule::kOneFOneB;
  job.recompute = a.recompute == "full" ? gen::Recompute::kFull : gen::Recompute::kNone;
  job.grads_in_bf16 = a.grad_dtype == "bf16";
  job.attention = a.attention == "naive" ? gen::Attention::kNaive : gen::Attention::kFlash;
  job.cp_comm = a.cp_comm == "p2p"   ? gen::CpComm::kP2p
                : a.cp_comm == "a2a" ? gen::CpComm::kA2a
                                     : gen::CpComm::kAllGather;
  job.zero = a.zero;
  job.fsdp = a.fsdp;
  job.fp8 = a.fp8;
  job.sequence_parallel = a.sequence_parallel;
  job.tp_comm_overlap = a.tp_comm_overlap;
  gen::validate(job);

  const std::filesystem::path out(a.out);
  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error) {
    throw OrreryError(ErrorCode::kIo,
                      fmt::format("--out {}: cannot create the directory: {}", a.out, error.message()));
  }
  nlohmann::json files = nlohmann::json::array();
  for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
    const std::filesystem::path path = out / fmt::format("{}{}.mlir", a.scenario.program_prefix, stage);
    write_or_throw(path, gen::stage_program(job, stage));
    files.push_back(path.string());
  }
  const std::filesystem::path scenario = out / "scenario.yaml";
  write_or_throw(scenario, gen::scenario_yaml(job, a.scenario));

  const gen::LlmFacts facts = gen::facts(job);
  if (a.json) {
    nlohmann::json j;
    j["model"] = job.model.name;
    j["parameters"] = facts.parameters;
    j["active_parameters"] = facts.active_parameters;
    j["devices"] = facts.devices;
    j["global_batch"] = facts.global_batch;
    j["tokens_per_step"] = facts.tokens_per_step;
    j["model_flops"] = facts.model_flops;
    j["stage_layers"] = gen::stage_layers(job);
    j["stage_parameters_per_device"] = facts.stage_parameters;
    j["programs"] = files;
    j["scenario"] = scenario.string();
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf(
      "%s",
      fmt::format(
          "{}: {} layers, width {}, {} heads of {} ({} kv), FFN {}, vocabulary {}{}: {:.4g} B parameters\n",
          job.model.name, job.model.layers, job.model.hidden, job.model.heads, job.model.head_dimension(),
          job.model.kv_heads, job.model.ffn, job.model.vocab,
          job.model.tied_embeddings ? " (tied embeddings)" : "", static_cast<double>(facts.parameters) / 1e9)
          .c_str());
  if (job.model.moe()) {
    std::printf(
        "%s",
        fmt::format("  {} experts, {} per token ({:.4g} B active parameters), ep {}, capacity factor {}\n",
                    job.model.experts, job.model.top_k, static_cast<double>(facts.active_parameters) / 1e9,
                    job.ep, job.capacity_factor)
            .c_str());
  }
  std::printf(
      "%s", fmt::format(
                "{} devices (tp {} x cp {} x dp {} x pp {}), global batch {} x {} tokens, {:.4g} model "
                "FLOPs per step\n",
                facts.devices, job.tp, job.cp, job.dp, job.pp, facts.global_batch, job.seq, facts.model_flops)
                .c_str());
  const auto layers = gen::stage_layers(job);
  for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
    std::printf("%s", fmt::format("  {}: {} layers, {:.4g} M parameters per device\n",
                                  files[stage].get<std::string>(), layers[stage],
                                  static_cast<double>(facts.stage_parameters[stage]) / 1e6)
                          .c_str());
  }
  std::printf("%s", fmt::format("run it: orrery run {}\n", scenario.string()).c_str());
  return 0;
}

}  // namespace

Action register_generate(CLI::App& app, const GlobalOptions& /*global*/) {
  auto a = std::make_shared<GenerateArguments>();
  auto* command =
      app.add_subcommand("generate", "Synthesise training programs and a scenario that runs them.");
  command->require_subcommand(1, 1);
  auto* llm = command->add_subcommand("llm",
                                      "A Llama-style decoder (dense or mixture of experts) trained with "
                                      "AdamW under tensor, pipeline, data and expert parallelism.");
  std::vector<std::string> presets;
  for (const gen::LlmModel& model : gen::llm_presets()) {
    presets.push_back(model.name);
  }
  llm->add_option("--model", a->model, fmt::format("Preset: {}", fmt::join(presets, ", ")));
  llm->add_option("--layers", a->dimensions.layers, "Decoder layers");
  llm->add_option("--hidden", a->dimensions.hidden, "Model width");
  llm->add_option("--heads", a->dimensions.heads, "Attention heads");
  llm->add_option("--head-dim", a->dimensions.head_dim, "Head dimension (default: --hidden / --heads)");
  llm->add_option("--kv-heads", a->dimensions.kv_heads,
                  "Key/value heads (grouped-query attention; default: --heads)");
  llm->add_option("--ffn", a->dimensions.ffn, "SwiGLU inner width");
  llm->add_option("--vocab", a->dimensions.vocab, "Vocabulary size");
  llm->add_option(
      "--experts", a->dimensions.experts,
      "Mixture of experts: SwiGLU experts per layer (of width --ffn; default: the preset's, 0 dense)");
  llm->add_option(
      "--shared-ffn", a->dimensions.shared_ffn,
      "Shared experts' inner width: a dense SwiGLU every token takes beside its routed experts (0: none)");
  llm->add_option("--top-k", a->dimensions.top_k, "Experts per token (default: the preset's, or 2)");
  llm->add_option("--dense-layers", a->dimensions.dense_layers,
                  "Mixture of experts: the first this many layers have a dense MLP (DeepSeekMoE's "
                  "first_k_dense_replace; default: the preset's, 0)");
  llm->add_option("--kv-lora-rank", a->dimensions.kv_lora_rank,
                  "Multi-head latent attention (DeepSeek-V2/V3): the key/value latent's width (default: the "
                  "preset's, 0: none)");
  llm->add_option("--q-lora-rank", a->dimensions.q_lora_rank,
                  "Multi-head latent attention: the query latent's width (0: queries from the hidden state)");
  llm->add_option(
      "--rope-head-dim", a->dimensions.rope_head_dim,
      "Multi-head latent attention: the rotary part of each query and key head (the shared rotary "
      "key's width)");
  llm->add_option("--v-head-dim", a->dimensions.v_head_dim,
                  "Multi-head latent attention: the value head dimension (default: --head-dim)");
  llm->add_option("--dense-ffn", a->dimensions.dense_ffn,
                  "The dense first layers' SwiGLU inner width (default: the preset's, or --ffn)");
  llm->add_flag("--tie-embeddings", a->dimensions.tie_embeddings,
                "Tie the LM head to the embedding table (the Llama 3.2 presets are tied already)");
  llm->add_flag("--untie-embeddings", a->dimensions.untie_embeddings,
                "Give a tied preset (Llama 3.2) an LM head of its own");
  llm->add_option("--ep", a->job.ep,
                  "Expert-parallel degree: experts spread over groups of this many data-parallel replicas")
      ->capture_default_str();
  llm->add_option("--capacity-factor", a->job.capacity_factor,
                  "Expert slots per device as a multiple of the balanced share")
      ->capture_default_str();
  llm->add_option("--dp", a->job.dp, "Data-parallel replicas")->capture_default_str();
  llm->add_option("--tp", a->job.tp, "Tensor-parallel degree")->capture_default_str();
  llm->add_option("--pp", a->job.pp, "Pipeline stages")->capture_default_str();
  llm->add_option("--cp", a->job.cp,
                  "Context-parallel degree: each sequence split over this many devices (see --cp-comm)")
      ->capture_default_str();
  llm->add_option("--cp-comm", a->cp_comm,
                  "Context parallelism's key/value exchange: all-gather (Llama 3's), p2p (a ring of "
                  "collective permutes overlapped with the attention, Megatron's default) or a2a "
                  "(DeepSpeed-Ulysses all-to-alls)")
      ->check(CLI::IsMember({"all-gather", "p2p", "a2a"}))
      ->capture_default_str();
  llm->add_option("--micro-batch", a->job.micro_batch, "Sequences per microbatch per replica")
      ->capture_default_str();
  llm->add_option("--micro-batches", a->job.micro_batches, "Microbatches per step")->capture_default_str();
  llm->add_option("--seq", a->job.seq, "Sequence length")->capture_default_str();
  llm->add_option(
         "--schedule", a->schedule,
         "Pipeline schedule: 1f1b, gpipe or zb-h1 (1F1B with the backward split into input and weight "
         "gradients, zero-bubble ZB-H1)")
      ->check(CLI::IsMember({"1f1b", "gpipe", "zb-h1"}))
      ->capture_default_str();
  llm->add_option("--virtual-stages", a->job.virtual_stages,
                  "Interleaved 1F1B: model chunks per pipeline stage (Megatron's virtual pipeline stages)")
      ->capture_default_str();
  llm->add_option("--first-stage-layers", a->job.first_stage_layers,
                  "Layers on the first pipeline stage (Megatron's --decoder-first-pipeline-num-layers; 0: an "
                  "even share)")
      ->capture_default_str();
  llm->add_option(
         "--last-stage-layers", a->job.last_stage_layers,
         "Layers on the last pipeline stage (Megatron's --decoder-last-pipeline-num-layers; 0: an even "
         "share)")
      ->capture_default_str();
  llm->add_option("--recompute", a->recompute, "Activation recomputation: none or full")
      ->check(CLI::IsMember({"none", "full"}))
      ->capture_default_str();
  llm->add_option("--attention", a->attention,
                  "Attention: flash (one fused kernel each way) or naive (scores materialised)")
      ->check(CLI::IsMember({"flash", "naive"}))
      ->capture_default_str();
  llm->add_option("--grad-dtype", a->grad_dtype, "Gradient accumulation and all-reduce type: f32 or bf16")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  llm->add_option("--hardware", a->scenario.hardware, "Hardware preset named in the scenario")
      ->capture_default_str();
  llm->add_option("--devices-per-node", a->scenario.devices_per_node, "Devices per node in the scenario")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  llm->add_option("--out", a->out, "Output directory")->required();
  llm->add_flag("--distributed-optimizer", a->zero,
                "ZeRO-1: shard the optimizer state over the data-parallel replicas (reduce-scatter the "
                "gradients, all-gather the weights)");
  llm->add_flag("--fsdp", a->fsdp,
                "FSDP (ZeRO-3): shard the weights too; gather each layer before use, reduce-scatter its "
                "gradients every microbatch");
  llm->add_flag("--no-sync", a->job.no_sync,
                "FSDP's no_sync: accumulate whole gradients over the microbatches and reduce-scatter "
                "their sum once, at the last");
  llm->add_option(
         "--shard-group", a->job.shard_group,
         "Hybrid sharding (FSDP's HSDP, Megatron's partial distributed optimizer): shard over groups "
         "of this many replicas and all-reduce the gradient shards across the groups (0: over all)")
      ->capture_default_str();
  llm->add_option("--bucket-elements", a->job.bucket_elements,
                  "Gradient elements per data-parallel bucket (0: Megatron's max(40M, 1M x dp))")
      ->capture_default_str();
  llm->add_flag("--sequence-parallel", a->sequence_parallel,
                "Megatron's sequence parallelism: norms, residuals and pipeline transfers hold 1/tp of the "
                "tokens; reduce-scatter and all-gather instead of all-reduce");
  llm->add_flag(
      "--tp-comm-overlap", a->tp_comm_overlap,
      "With --sequence-parallel: overlap the tensor-parallel all-gathers and reduce-scatters with the "
      "GEMMs as Transformer Engine's userbuffers do (ring exchange over collective permutes)");
  llm->add_flag("--fp8", a->fp8,
                "FP8 linear layers (Transformer Engine's delayed scaling: E4M3 forward, E5M2 gradients)");
  llm->add_flag("--json", a->json, "Print what was generated as JSON");
  return [a]() { return generate_llm(*a); };
}

}  // namespace orrery::cli
