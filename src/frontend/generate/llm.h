// Synthesis of LLM training programs (`orrery generate llm`, docs/generate.md): a Llama-style
// decoder (RMSNorm, RoPE, grouped-query attention, SwiGLU) trained with AdamW under Megatron-style
// tensor, pipeline and data parallelism, written as one StableHLO module per pipeline stage —
// what each device of the stage runs in one training step, with its collectives and its
// point-to-point transfers — and a scenario that runs them. The programs are ordinary StableHLO
// text: Orrery reads, costs, fuses and simulates them exactly as it does a JAX export, and
// `orrery inspect` shows them.
//
// Per stage, every device holds its tensor-parallel shard (column-parallel QKV and gate/up
// projections, row-parallel output and down projections, a vocabulary-parallel embedding and
// LM head, each followed by the all-reduce Megatron places there), runs its microbatches in the
// pipeline schedule's order (1F1B, GPipe, interleaved 1F1B or ZB-H1; the order is held by optimization
// barriers), sends activations forward and gradients back on one channel per microbatch and
// direction, accumulates gradients, reduces them over its data-parallel group in buckets and
// applies AdamW (f32 master weights and moments). Options add sequence parallelism, context
// parallelism, the distributed optimizer (ZeRO-1), FSDP (ZeRO-3), full recomputation, naive
// (unfused) attention, FP8 linear layers, and mixture-of-experts MLPs (a router, top-k, experts
// spread over expert-parallel groups and reached by all-to-all, shared experts).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::frontend::generate {

struct LlmModel {
  std::string name = "custom";
  std::uint32_t layers = 0;
  std::uint32_t hidden = 0;    // model width H
  std::uint32_t heads = 0;     // attention heads A
  std::uint32_t head_dim = 0;  // D; 0: H / A
  std::uint32_t kv_heads = 0;  // key/value heads K (grouped-query attention; K = A: multi-head)
  std::uint32_t ffn = 0;       // SwiGLU inner width F
  std::uint32_t vocab = 0;     // vocabulary V
  // Mixture of experts (Mixtral-style): 0 for a dense model; else every layer's MLP is E SwiGLU
  // experts of width `ffn` with a router choosing `top_k` of them per token.
  std::uint32_t experts = 0;
  std::uint32_t top_k = 0;
  // Shared experts (DeepSeekMoE, Qwen-MoE, Llama 4): a dense SwiGLU MLP of this inner width that
  // every token takes beside its routed experts; 0: none.
  std::uint32_t shared_ffn = 0;
  // Tied embeddings (Llama 3.2 1B and 3B, Gemma): the LM head is the embedding table's transpose,
  // one parameter (with pipeline stages, the last stage holds a copy whose gradient is summed with
  // the first stage's, as Megatron's embedding group does).
  bool tied_embeddings = false;
  // Dense first layers of a mixture-of-experts model (DeepSeekMoE's first_k_dense_replace): the
  // first `dense_layers` layers have a dense SwiGLU MLP of width `dense_ffn` (0: `ffn`) in place of
  // the experts, the router and the shared experts.
  std::uint32_t dense_layers = 0;
  std::uint32_t dense_ffn = 0;
  // Multi-head latent attention (DeepSeek-V2 and V3) when kv_lora_rank > 0: keys and values are
  // projected up per head from a compressed latent of this width (normalised), beside a rotary key
  // of `rope_head_dim` shared by every head; queries come from the hidden state, or with
  // q_lora_rank > 0 from a compressed latent of that width. Each head's query and key have
  // head_dim (no rotary embedding) + rope_head_dim elements, its value v_head_dim (0: head_dim).
  std::uint32_t kv_lora_rank = 0;
  std::uint32_t q_lora_rank = 0;
  std::uint32_t rope_head_dim = 0;
  std::uint32_t v_head_dim = 0;
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
  [[nodiscard]] bool moe() const { return experts > 0; }
  // Whether layer `layer` (0-based, of the whole model) has a dense MLP.
  [[nodiscard]] bool dense_layer(std::uint32_t layer) const { return !moe() || layer < dense_layers; }
  [[nodiscard]] std::uint32_t dense_width() const { return dense_ffn != 0 ? dense_ffn : ffn; }
  [[nodiscard]] std::uint32_t head_dimension() const { return head_dim != 0 ? head_dim : hidden / heads; }
};

// The presets `--model` names (published configurations), in a fixed order.
const std::vector<LlmModel>& llm_presets();
// Throws OrreryError (kConfig) naming the presets for an unknown name.
LlmModel llm_preset(std::string_view name);

// kZeroBubbleH1: Qi et al.'s ZB-H1 ("Zero Bubble Pipeline Parallelism", ICLR 2024): 1F1B with each
// backward pass split into B (the input gradients, which the stage below waits for) and W (the
// weight gradients), stage s running microbatch j's W after microbatch j + s's B, so that every
// stage holds pp microbatches at most, as 1F1B's first stage does, and the W passes fill the
// bubble at the pipeline's end.
enum class PipelineSchedule : std::uint8_t { kOneFOneB, kGPipe, kZeroBubbleH1 };
enum class Recompute : std::uint8_t { kNone, kFull };
// kFlash: one fused kernel per attention forward and backward (custom calls orrery.attention and
// orrery.attention_backward, costed as their GEMMs with the causal half skipped, docs/compute.md);
// kNaive: the scores and probabilities materialised, as XLA runs attention without a fused kernel.
enum class Attention : std::uint8_t { kFlash, kNaive };
// How context parallelism moves keys and values (Transformer Engine's cp_comm_type):
// kAllGather: Llama 3's form, every layer all-gathers the keys and values of the whole sequence
// before attending (and reduce-scatters their gradients); kP2p: the ring (Megatron's default), the
// keys and values go round the context-parallel group by collective permutes, each block's
// attention overlapping the next block's transfer, the partial outputs merged by their
// log-sum-exp; kA2a: DeepSpeed-Ulysses, an all-to-all trades the sequence split for a head split
// before the attention (each device attends over the whole sequence for heads / cp heads) and a
// second one trades it back.
enum class CpComm : std::uint8_t { kAllGather, kP2p, kA2a };

struct LlmJob {
  LlmModel model;
  std::uint32_t dp = 1;             // data-parallel replicas
  std::uint32_t tp = 1;             // tensor-parallel degree (within a stage)
  std::uint32_t pp = 1;             // pipeline stages
  // Context parallelism: each sequence's tokens split over cp devices (2 cp chunks, two per
  // device), which exchange keys and values in every layer's attention as cp_comm says.
  std::uint32_t cp = 1;
  CpComm cp_comm = CpComm::kAllGather;
  std::uint32_t micro_batch = 1;    // sequences per microbatch per data-parallel replica
  std::uint32_t micro_batches = 1;  // microbatches per step (gradient accumulation)
  std::uint32_t seq = 2048;         // sequence length
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  // Interleaved 1F1B (Megatron's virtual pipeline stages): each stage holds this many model
  // chunks, chunk c being virtual stage c x pp + stage of pp x virtual_stages.
  std::uint32_t virtual_stages = 1;
  // Megatron's uneven pipeline split (--decoder-first-pipeline-num-layers and
  // --decoder-last-pipeline-num-layers): the first and the last stage hold this many layers (0: an
  // even share), the other stages split the rest evenly; with virtual stages, each stage's layers
  // are split evenly over its chunks.
  std::uint32_t first_stage_layers = 0;
  std::uint32_t last_stage_layers = 0;
  Recompute recompute = Recompute::kNone;
  Attention attention = Attention::kFlash;
  bool grads_in_bf16 = false;  // accumulate and all-reduce gradients in bf16 (default f32)
  // FP8 linear layers (Transformer Engine's delayed scaling, E4M3 forward, E5M2 gradients): the
  // GEMMs of the attention and MLP projections and of the experts take FP8 operands.
  bool fp8 = false;
  // ZeRO-1 (Megatron's distributed optimizer): each data-parallel replica keeps and updates 1/dp of
  // the optimizer state; gradients are reduce-scattered and the updated weights all-gathered.
  bool zero = false;
  // FSDP (ZeRO-3): the bf16 weights are sharded too; each layer (and the embedding and the head)
  // is all-gathered before each use, one layer ahead, and its gradients reduce-scattered as soon as
  // they are computed, every microbatch.
  bool fsdp = false;
  // Hybrid sharding (FSDP's HSDP; with ZeRO-1, Megatron's partial distributed optimizer): the
  // state ZeRO-1 or FSDP shards is sharded over groups of this many of the devices that hold the
  // same parameters, consecutive in device order, and replicated across the groups; gradients are
  // reduce-scattered within a group and their shards all-reduced across the groups. 0: shard over
  // all of them.
  std::uint32_t shard_group = 0;
  // FSDP's no_sync: every microbatch but the last accumulates whole (unsharded) gradients on the
  // device; the last reduce-scatters their sum, so each unit's gradients move once per step, at
  // the memory of a whole gradient per parameter.
  bool no_sync = false;
  // Megatron's sequence parallelism (with tp > 1): outside the tensor-parallel regions (norms,
  // residuals, the pipeline's transfers) each device holds 1/tp of the tokens; each all-reduce
  // becomes a reduce-scatter out of a region and an all-gather into the next.
  bool sequence_parallel = false;
  // Transformer Engine's tensor-parallel communication overlap (Megatron's --tp-comm-overlap;
  // with sequence parallelism): each all-gather into a layer's GEMM runs as a ring of tp - 1
  // collective permutes, each chunk's GEMM overlapping the next chunk's transfer, and each GEMM
  // into a reduce-scatter runs in tp row chunks whose partial sums move on while the next chunk's
  // GEMM runs.
  bool tp_comm_overlap = false;
  // Gradient elements per data-parallel bucket (Megatron's --ddp-bucket-size); 0: Megatron's
  // default, max(40M, 1M x dp).
  std::uint64_t bucket_elements = 0;
  // Expert parallelism (mixture-of-experts models): the experts are spread over groups of `ep`
  // consecutive data-parallel replicas, each holding experts / ep of them, and tokens travel to
  // their experts and back by all-to-all within the group.
  std::uint32_t ep = 1;
  // Slots per expert and device, as a multiple of the balanced share: ceil(capacity_factor x
  // tokens x top_k / experts) (GShard/Switch's expert capacity).
  double capacity_factor = 1.0;
};

// The model of a preset (or, with an empty name, none) with every nonzero dimension given
// replacing the preset's; without a preset, kv heads default to the heads (multi-head attention)
// and the name is "custom". Throws OrreryError (kConfig) for an unknown preset, or a custom model
// missing one of layers, hidden, heads, ffn and vocab.
struct ModelOverrides {
  std::uint32_t layers = 0, hidden = 0, heads = 0, head_dim = 0, kv_heads = 0, ffn = 0, vocab = 0;
  std::uint32_t experts = 0, top_k = 0, shared_ffn = 0, dense_layers = 0, dense_ffn = 0;
  std::uint32_t kv_lora_rank = 0, q_lora_rank = 0, rope_head_dim = 0, v_head_dim = 0;
  bool tie_embeddings = false;    // tie them
  bool untie_embeddings = false;  // untie a tied preset's
};
LlmModel resolve_model(std::string_view preset, const ModelOverrides& overrides);

// Throws OrreryError (kConfig) naming the offending value when the job cannot be laid out: a
// zero dimension, heads or kv heads or the FFN width not divisible by tp, more stages than
// layers, a head count not divisible by the kv head count, a sequence-parallel microbatch whose
// tokens tp does not divide, more than 2^26 devices, attention scores or logits of a microbatch
// above 2^56 bytes, or too many point-to-point channels; for mixture-of-experts models, a top-k
// outside 1..experts, experts or dp not multiples of ep, a shared width tp does not divide (or
// shared experts on a dense model), ep above 1 on a dense model, tp above 1
// without sequence parallelism, or a capacity factor that is not positive; FSDP together with
// ZeRO-1; no_sync without FSDP; TP communication overlap without sequence parallelism; a shard group without
// ZeRO-1 or FSDP, or one that does not divide the devices holding the same parameters (dp x cp, and for
// experts dp / ep x cp x tp); virtual stages with GPipe or ZB-H1, with one stage, with microbatches that pp
// does not divide or with more model chunks (pp x virtual stages) than layers; a sequence that 2 x cp does
// not divide (the load-balanced split into 2 cp chunks); ring or Ulysses context parallelism with naive
// attention, or Ulysses over a cp that does not divide each tensor-parallel device's heads and kv heads;
// tied embeddings with FSDP; first or last stage layers with one stage, more than the model's layers, or
// leaving layers that the other stages (or a stage's chunks) do not divide evenly.
void validate(const LlmJob& job);

// Layers of each virtual stage (pp x virtual_stages of them): as even as possible, the first
// taking one more when they do not divide; and of each stage (the sum over its chunks). With
// first_stage_layers or last_stage_layers, Megatron's uneven split: those stages hold that many,
// the others an equal share of the rest, and every stage's layers are split evenly over its chunks
// (validate() refuses what does not divide).
std::vector<std::uint32_t> virtual_stage_layers(const LlmJob& job);
std::vector<std::uint32_t> stage_layers(const LlmJob& job);

struct LlmFacts {
  std::uint64_t parameters = 0;       // whole model
  std::uint64_t active_parameters = 0;  // used per token (mixture of experts: top_k of the experts)
  std::uint64_t devices = 0;            // dp * cp * tp * pp
  std::uint64_t tokens_per_step = 0;  // global batch in tokens
  std::uint64_t global_batch = 0;     // sequences per step
  // Model FLOPs of one step (forward and backward, matmuls and attention, counted as 2 per
  // multiply-add; the convention of MFU figures: 6 * active params-in-matmuls * tokens plus
  // attention; recomputation not counted).
  double model_flops = 0;
  std::vector<std::uint64_t> stage_parameters;  // per device of each stage (its tp shard)
};
LlmFacts facts(const LlmJob& job);

// The StableHLO text of stage `stage` (0-based).
std::string stage_program(const LlmJob& job, std::uint32_t stage);

struct ScenarioOptions {
  std::string hardware = "H100";
  std::uint32_t devices_per_node = 8;
  std::string program_prefix = "stage_";  // files <prefix><s>.mlir beside the scenario
};
// The scenario that runs the stages: the hardware preset, DGX-like nodes on an NVSwitch, one
// NIC per GPU on a two-tier fat-tree rail per NIC, the programs with their global ranks
// (tp fastest, then cp, then dp, then pp, as Megatron orders them).
std::string scenario_yaml(const LlmJob& job, const ScenarioOptions& options);

}  // namespace orrery::frontend::generate
