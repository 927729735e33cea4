// The `workload` section: programs and which ranks run each.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "config/schema.h"

namespace orrery::config {

struct ProgramConfig {
  FilePath file;
  std::uint32_t module = 0;
  std::string ranks = "all";
  std::uint32_t replicas = 0;
  std::map<std::string, std::uint64_t> loop_trip_counts;
  std::string missing_hint;

  template <class V>
  void fields(V& v) {
    v("file", file, "StableHLO text (.mlir).");
    v("module", module, "Which module of a multi-module file (`// -----` separated), from 0.");
    v("ranks", ranks,
      "Global ranks that run this program, one per device id of the program in order: 'all' (the "
      "program's devices, when it is the only program), or ids and ranges like '0-3,8-11'.");
    v("replicas", replicas,
      "Run a data-parallel program on this many replicas instead of its own mhlo.num_replicas (weak "
      "scaling: the per-device batch stays); every collective must span all replicas and keeps its "
      "model-sized buffer (an all-reduce's input, a reduce-scatter's input, an all-gather's output: gradients and "
      "parameters do not grow with replicas), so each device's shard of it shrinks. 0: as written. At most "
      "2^26, the most endpoints a topology has.",
      between(0, 1 << 26));
    v("loop_trip_counts", loop_trip_counts,
      "Trip counts for while loops whose count cannot be derived, by loop name as `inspect` prints it.");
    v("missing_hint", missing_hint, "Explanation printed when the file cannot be read (e.g. where to get it).");
  }
  void validate(Problems& problems) const {
    if (file.empty()) {
      problems.add("file", "a program needs a file");
    }
  }
};

enum class BranchRuleConfig { kLargest, kFirst, kLast };
inline std::span<const EnumName<BranchRuleConfig>> enum_names(BranchRuleConfig) {
  static constexpr EnumName<BranchRuleConfig> kNames[] = {{BranchRuleConfig::kLargest, "largest"},
                                                          {BranchRuleConfig::kFirst, "first"},
                                                          {BranchRuleConfig::kLast, "last"}};
  return kNames;
}

// MLCommons Chakra execution traces instead of programs (docs/chakra.md).
struct ChakraConfig {
  FilePath prefix;
  std::uint32_t ranks = 0;
  FilePath comm_groups;
  double roofline_peak_tflops = 0.0;
  double roofline_memory_gbps = 0.0;

  template <class V>
  void fields(V& v) {
    v("prefix", prefix,
      "Path prefix of the per-rank traces <prefix>.<rank>.et (ASTRA-sim's --workload-configuration); empty: "
      "use `programs`.");
    v("ranks", ranks, "Ranks (trace files) of the job; 0: every <prefix>.N.et from N = 0 up to the first missing one.");
    v("comm_groups", comm_groups,
      "Communicator-group JSON ({\"id\": [ranks]}) naming the ranks of each pg_name (ASTRA-sim's "
      "--comm-group-configuration); empty: none.");
    v("roofline_peak_TFLOPS", roofline_peak_tflops,
      "Peak rate for COMP nodes costed from num_ops and tensor_size (no duration); 0: the hardware preset's bf16 "
      "matrix peak.",
      nonnegative());
    v("roofline_memory_GBps", roofline_memory_gbps,
      "Memory bandwidth for such nodes and for MEM_LOAD/STORE nodes (GB/s, 1e9 B/s); 0: the preset's.", nonnegative());
  }
};

enum class LlmScheduleConfig { kOneFOneB, kGPipe, kZeroBubbleH1 };
inline std::span<const EnumName<LlmScheduleConfig>> enum_names(LlmScheduleConfig) {
  static constexpr EnumName<LlmScheduleConfig> kNames[] = {{LlmScheduleConfig::kOneFOneB, "1f1b"},
                                                           {LlmScheduleConfig::kGPipe, "gpipe"},
                                                           {LlmScheduleConfig::kZeroBubbleH1, "zb-h1"}};
  return kNames;
}
enum class LlmRecomputeConfig { kNone, kFull };
inline std::span<const EnumName<LlmRecomputeConfig>> enum_names(LlmRecomputeConfig) {
  static constexpr EnumName<LlmRecomputeConfig> kNames[] = {{LlmRecomputeConfig::kNone, "none"},
                                                            {LlmRecomputeConfig::kFull, "full"}};
  return kNames;
}
enum class LlmAttentionConfig { kFlash, kNaive };
inline std::span<const EnumName<LlmAttentionConfig>> enum_names(LlmAttentionConfig) {
  static constexpr EnumName<LlmAttentionConfig> kNames[] = {{LlmAttentionConfig::kFlash, "flash"},
                                                            {LlmAttentionConfig::kNaive, "naive"}};
  return kNames;
}
enum class LlmCpCommConfig { kAllGather, kP2p, kA2a };
inline std::span<const EnumName<LlmCpCommConfig>> enum_names(LlmCpCommConfig) {
  static constexpr EnumName<LlmCpCommConfig> kNames[] = {{LlmCpCommConfig::kAllGather, "all-gather"},
                                                         {LlmCpCommConfig::kP2p, "p2p"},
                                                         {LlmCpCommConfig::kA2a, "a2a"}};
  return kNames;
}
enum class LlmGradTypeConfig { kF32, kBf16 };
inline std::span<const EnumName<LlmGradTypeConfig>> enum_names(LlmGradTypeConfig) {
  static constexpr EnumName<LlmGradTypeConfig> kNames[] = {{LlmGradTypeConfig::kF32, "f32"},
                                                           {LlmGradTypeConfig::kBf16, "bf16"}};
  return kNames;
}

// A Llama-style training job generated when the scenario is loaded, instead of `programs`: the
// same synthesis as `orrery generate llm` (docs/generate.md), so a sweep can vary the model and
// its parallel layout (`--vary workload.llm.tp=2,4,8`).
struct LlmWorkloadConfig {
  std::string model;
  std::uint32_t layers = 0;
  std::uint32_t hidden = 0;
  std::uint32_t heads = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t kv_heads = 0;
  std::uint32_t ffn = 0;
  std::uint32_t vocab = 0;
  std::uint32_t experts = 0;
  std::uint32_t top_k = 0;
  std::uint32_t shared_ffn = 0;
  std::uint32_t dense_layers = 0;
  std::uint32_t dense_ffn = 0;
  std::uint32_t kv_lora_rank = 0;
  std::uint32_t q_lora_rank = 0;
  std::uint32_t rope_head_dim = 0;
  std::uint32_t v_head_dim = 0;
  bool tie_embeddings = false;
  bool untie_embeddings = false;
  std::uint32_t ep = 1;
  double capacity_factor = 1.0;
  std::uint32_t tp = 1;
  std::uint32_t pp = 1;
  std::uint32_t cp = 1;
  LlmCpCommConfig cp_comm = LlmCpCommConfig::kAllGather;
  std::uint32_t dp = 1;
  std::uint32_t micro_batch = 1;
  std::uint32_t micro_batches = 1;
  std::uint32_t seq = 2048;
  LlmScheduleConfig schedule = LlmScheduleConfig::kOneFOneB;
  std::uint32_t virtual_stages = 1;
  std::uint32_t first_stage_layers = 0;
  std::uint32_t last_stage_layers = 0;
  LlmRecomputeConfig recompute = LlmRecomputeConfig::kNone;
  LlmAttentionConfig attention = LlmAttentionConfig::kFlash;
  bool sequence_parallel = false;
  bool tp_comm_overlap = false;
  bool distributed_optimizer = false;
  bool fsdp = false;
  std::uint32_t shard_group = 0;
  bool no_sync = false;
  bool fp8 = false;
  LlmGradTypeConfig grad_dtype = LlmGradTypeConfig::kF32;
  std::uint64_t bucket_elements = 0;

  [[nodiscard]] bool enabled() const { return !model.empty() || layers > 0; }

  template <class V>
  void fields(V& v) {
    v("model", model,
      "Preset (llama3-100m, llama2-7b, llama3-8b, llama3-70b, llama3-405b, llama3.2-1b, llama3.2-3b, "
      "mixtral-8x7b, mixtral-8x22b, deepseek-moe-16b, deepseek-v2-lite, deepseek-v3); "
      "empty with `layers` 0: no generated job.");
    v("layers", layers, "Decoder layers; 0: the preset's.");
    v("hidden", hidden, "Model width; 0: the preset's.");
    v("heads", heads, "Attention heads; 0: the preset's.");
    v("head_dim", head_dim, "Head dimension; 0: the preset's (or hidden / heads).");
    v("kv_heads", kv_heads, "Key/value heads (grouped-query attention); 0: the preset's (or heads).");
    v("ffn", ffn, "SwiGLU inner width; 0: the preset's.");
    v("vocab", vocab, "Vocabulary size; 0: the preset's.");
    v("experts", experts, "Mixture of experts: SwiGLU experts per layer; 0: the preset's (dense for Llama).");
    v("top_k", top_k, "Experts per token; 0: the preset's (or 2).");
    v("shared_ffn", shared_ffn,
      "Shared experts' inner width (a dense SwiGLU beside the routed experts); 0: none.");
    v("dense_layers", dense_layers,
      "Mixture of experts: the first this many layers have a dense MLP (DeepSeekMoE's "
      "first_k_dense_replace); "
      "0: the preset's.");
    v("dense_ffn", dense_ffn, "The dense first layers' SwiGLU inner width; 0: the preset's (or ffn).");
    v("kv_lora_rank", kv_lora_rank,
      "Multi-head latent attention (DeepSeek-V2/V3): the key/value latent's width; 0: the preset's (none).");
    v("q_lora_rank", q_lora_rank,
      "Multi-head latent attention: the query latent's width; 0: the preset's (queries from the hidden "
      "state).");
    v("rope_head_dim", rope_head_dim,
      "Multi-head latent attention: the rotary part of each query and key head; 0: the preset's.");
    v("v_head_dim", v_head_dim,
      "Multi-head latent attention: the value head dimension; 0: the preset's (or head_dim).");
    v("tie_embeddings", tie_embeddings,
      "Tie the LM head to the embedding table (one parameter; the Llama 3.2 presets are tied already).");
    v("untie_embeddings", untie_embeddings, "Give a tied preset (Llama 3.2) an LM head of its own.");
    v("ep", ep, "Expert-parallel degree (groups of this many data-parallel replicas).", at_least(1));
    v("capacity_factor", capacity_factor, "Expert slots per device as a multiple of the balanced share.",
      positive());
    v("tp", tp, "Tensor-parallel degree.", at_least(1));
    v("pp", pp, "Pipeline stages.", at_least(1));
    v("cp", cp, "Context-parallel degree (each sequence split over this many devices).", at_least(1));
    v("cp_comm", cp_comm,
      "How context parallelism moves keys and values: all-gather (Llama 3's), p2p (the ring of Megatron and "
      "Transformer Engine: collective permutes overlapped with each block's attention) or a2a "
      "(DeepSpeed-Ulysses: all-to-alls between the sequence split and a head split).");
    v("dp", dp, "Data-parallel replicas.", at_least(1));
    v("micro_batch", micro_batch, "Sequences per microbatch per replica.", at_least(1));
    v("micro_batches", micro_batches, "Microbatches per step.", at_least(1));
    v("seq", seq, "Sequence length.", at_least(1));
    v("schedule", schedule,
      "Pipeline schedule: 1f1b, gpipe, or zb-h1 (zero-bubble ZB-H1: 1F1B with each backward split into input "
      "and weight gradients, the weight gradients run later).");
    v("virtual_stages", virtual_stages, "Interleaved 1F1B: model chunks per pipeline stage.", at_least(1));
    v("first_stage_layers", first_stage_layers,
      "Layers on the first pipeline stage (Megatron's uneven split); 0: an even share.");
    v("last_stage_layers", last_stage_layers,
      "Layers on the last pipeline stage (Megatron's uneven split); 0: an even share.");
    v("recompute", recompute, "Activation recomputation.");
    v("attention", attention, "flash: one fused kernel each way; naive: scores materialised.");
    v("sequence_parallel", sequence_parallel, "Megatron's sequence parallelism (with tp > 1).");
    v("tp_comm_overlap", tp_comm_overlap,
      "With sequence_parallel: tensor-parallel all-gathers and reduce-scatters overlapped with the GEMMs "
      "(Transformer Engine's ring exchange over collective permutes).");
    v("distributed_optimizer", distributed_optimizer,
      "ZeRO-1: optimizer state sharded over the data-parallel replicas.");
    v("fsdp", fsdp, "FSDP (ZeRO-3): weights, gradients and optimizer state sharded over the replicas.");
    v("no_sync", no_sync,
      "FSDP's no_sync: whole gradients accumulate over the microbatches and are reduce-scattered once, "
      "at the last (with fsdp).");
    v("shard_group", shard_group,
      "Hybrid sharding (FSDP's HSDP; Megatron's partial distributed optimizer): what distributed_optimizer "
      "or "
      "fsdp shards is sharded over groups of this many replicas and the gradient shards all-reduced across "
      "the groups; 0: over all of them.");
    v("fp8", fp8, "FP8 linear layers (E4M3 forward, E5M2 gradients; Transformer Engine's delayed scaling).");
    v("grad_dtype", grad_dtype, "Gradient accumulation and data-parallel reduction type.");
    v("bucket_elements", bucket_elements,
      "Gradient elements per data-parallel bucket; 0: Megatron's default, max(40M, 1M x dp).");
  }
};

struct WorkloadConfig {
  std::vector<ProgramConfig> programs;
  ChakraConfig chakra;
  LlmWorkloadConfig llm;
  std::uint32_t steps = 1;
  BranchRuleConfig branch = BranchRuleConfig::kLargest;

  template <class V>
  void fields(V& v) {
    v("programs", programs, "Programs (one per pipeline stage or rank group).");
    v("chakra", chakra, "Chakra execution traces to run instead of `programs`.");
    v("llm", llm,
      "A generated Llama-style training job to run instead of `programs` (docs/generate.md); its stages run "
      "on "
      "ranks tp fastest, then dp, then pp.");
    v("steps", steps, "Training steps run back to back.", at_least(1));
    v("branch", branch,
      "Which branch of an if/case runs: the largest (most ops, nested included), the first or the last.");
  }
  void validate(Problems& problems) const {
    if (!programs.empty() && !chakra.prefix.empty()) {
      problems.add("chakra", "give either `programs` or `chakra`, not both");
    }
    if (llm.enabled() && (!programs.empty() || !chakra.prefix.empty())) {
      problems.add("llm", "give one of `programs`, `chakra` and `llm`");
    }
  }
};

}  // namespace orrery::config
