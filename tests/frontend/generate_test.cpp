// `orrery generate llm`'s writer (frontend/generate/llm.h): every combination of its options
// writes stages the StableHLO frontend reads; published parameter counts; the layer split; the
// refusals. What the programs do when simulated is checked end to end by
// tests/integration/generate.sh.
#include <gtest/gtest.h>

#include <string>

#include "frontend/generate/llm.h"
#include "test_support.h"
#include "util/error.h"

namespace orrery::frontend::generate {
namespace {

LlmJob tiny() {
  LlmJob job;
  job.model = LlmModel{"tiny", 5, 64, 4, 0, 2, 96, 50};
  job.seq = 16;
  job.micro_batches = 3;
  return job;
}

// validate() refuses the job with a configuration error whose message holds `message`.
void refused(const LlmJob& job, const std::string& message) {
  try {
    validate(job);
    ADD_FAILURE() << "expected: " << message;
  } catch (const OrreryError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
  }
}

TEST(GenerateLlm, EveryCombinationOfOptionsWritesStagesTheFrontendReads) {
  int programs = 0;
  for (int bits = 0; bits < 256; ++bits) {
    LlmJob job = tiny();
    job.tp = (bits & 1) != 0 ? 2 : 1;
    job.pp = (bits & 2) != 0 ? 3 : 1;
    job.dp = (bits & 4) != 0 ? 3 : 1;  // 3: the optimizer-state shards need padding
    job.attention = (bits & 8) != 0 ? Attention::kNaive : Attention::kFlash;
    // ZB-H1 where bits / 32 is 1, 4 or 7: with and without recomputation, each gradient type,
    // ZeRO-1, FSDP (also no_sync), sequence parallelism and FP8 on 3 stages.
    job.schedule = (bits & 16) != 0       ? PipelineSchedule::kGPipe
                   : (bits / 32) % 3 == 1 ? PipelineSchedule::kZeroBubbleH1
                                          : PipelineSchedule::kOneFOneB;
    job.recompute = (bits & 32) != 0 ? Recompute::kFull : Recompute::kNone;
    job.zero = (bits & 64) != 0;
    job.sequence_parallel = (bits & 128) != 0;
    job.grads_in_bf16 = (bits % 3) == 0;
    job.fsdp = !job.zero && (bits % 5) < 2;  // FSDP in place of ZeRO-1 in some combinations
    job.no_sync = job.fsdp && (bits % 3) == 1;
    job.cp = (bits % 7) < 3 ? 2 : 1;
    // Each context-parallel form (the ring and Ulysses need flash attention; Ulysses whole heads
    // per device: here tp 1).
    if (job.cp > 1 && job.attention == Attention::kFlash) {
      const int form = (bits / 3) % 3;
      job.cp_comm = form == 1 ? CpComm::kP2p : form == 2 && job.tp == 1 ? CpComm::kA2a : CpComm::kAllGather;
    }
    job.fp8 = (bits % 4) == 1 || (bits % 10) == 3;
    job.tp_comm_overlap = job.tp > 1 && job.sequence_parallel && (bits % 6) < 3;
    job.model.tied_embeddings = !job.fsdp && (bits % 9) < 4;  // one stage and three, ZeRO-1, ZB-H1, FP8, ...
    // Hybrid sharding over 3 of the 6 replicas (dp 3 x cp 2) in some of the sharded combinations.
    job.shard_group = (job.zero || job.fsdp) && job.dp * job.cp == 6 && (bits % 11) < 6 ? 3 : 0;
    for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
      const std::string text = stage_program(job, stage);
      const auto modules = stablehlo::testing::parse(text);
      ASSERT_EQ(modules.size(), 1U) << "options " << bits << ", stage " << stage;
      const workload::Program& program = *modules[0].program;
      EXPECT_EQ(program.num_partitions(), static_cast<std::int64_t>(job.tp * job.cp * job.dp)) << bits;
      EXPECT_NE(program.entry_function(), workload::kNoId) << bits;
      ++programs;
    }
    // The same job gives the same text (a deterministic writer).
    EXPECT_EQ(stage_program(job, 0), stage_program(job, 0)) << bits;
  }
  EXPECT_EQ(programs, 128 * 1 + 128 * 3);
}

TEST(GenerateLlm, MixtureOfExpertsOptionsWriteStagesTheFrontendReads) {
  // 8 experts over every expert-parallel degree that divides dp 4, with and without tensor
  // (sequence) parallelism, pipelining, ZeRO-1, recomputation, top-1 and capacity factors that do
  // and do not divide the tokens evenly.
  int programs = 0;
  for (int bits = 0; bits < 96; ++bits) {
    LlmJob job = tiny();
    job.model.experts = 8;
    job.model.top_k = (bits & 1) != 0 ? 1 : 2;
    job.dp = 4;
    job.ep = 1U << ((bits >> 1) % 3);  // 1, 2, 4
    job.tp = (bits & 8) != 0 ? 2 : 1;
    job.sequence_parallel = job.tp > 1;
    job.pp = (bits & 16) != 0 ? 2 : 1;
    job.zero = (bits & 32) != 0 && bits % 3 != 0;
    job.fsdp = (bits & 32) != 0 && bits % 3 == 0;
    job.recompute = (bits & 64) != 0 ? Recompute::kFull : Recompute::kNone;
    job.capacity_factor = (bits % 5 == 0) ? 0.7 : ((bits % 5 == 1) ? 1.3 : 1.0);
    job.attention = (bits % 7 == 0) ? Attention::kNaive : Attention::kFlash;
    job.fp8 = (bits % 3) == 1;
    job.model.shared_ffn = (bits % 4) == 2 ? 64 : 0;
    // Dense first layers (DeepSeekMoE's): one or two of the five, of their own width or --ffn's.
    job.model.dense_layers = (bits % 6) == 4 ? 2 : ((bits % 6) == 5 ? 1 : 0);
    job.model.dense_ffn = (bits % 6) == 4 ? 128 : 0;
    job.schedule = (bits % 5) == 3 ? PipelineSchedule::kZeroBubbleH1 : PipelineSchedule::kOneFOneB;
    job.tp_comm_overlap = job.tp > 1 && (bits % 3) != 1;
    // Hybrid sharding in pairs where 2 divides the devices holding the same experts too.
    job.shard_group = (job.zero || job.fsdp) && (job.dp / job.ep) * job.tp % 2 == 0 && bits % 2 == 0 ? 2 : 0;
    for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
      const auto modules = stablehlo::testing::parse(stage_program(job, stage));
      ASSERT_EQ(modules.size(), 1U) << "options " << bits << ", stage " << stage;
      EXPECT_EQ(modules[0].program->num_partitions(), static_cast<std::int64_t>(job.tp * job.dp)) << bits;
      ++programs;
    }
  }
  EXPECT_EQ(programs, 96 + 48);
}

TEST(GenerateLlm, MultiHeadLatentAttentionOptionsWriteStagesTheFrontendReads) {
  // MLA with and without a query latent, on dense and mixture-of-experts layers (dense first
  // layers among them), with tensor parallelism with and without sequence parallelism, pipelining,
  // ZB-H1, recomputation, ZeRO-1, FSDP, FP8 and tensor-parallel communication overlap. (Parsing
  // checks every call's operand and result types against its callee's.)
  int programs = 0;
  for (int bits = 0; bits < 64; ++bits) {
    LlmJob job = tiny();  // 5 layers, width 64, 4 heads of 16
    job.model.kv_heads = 4;
    job.model.kv_lora_rank = 32;
    job.model.rope_head_dim = 8;
    job.model.v_head_dim = (bits & 1) != 0 ? 12 : 0;
    job.model.q_lora_rank = (bits & 2) != 0 ? 48 : 0;
    const bool moe = (bits & 4) != 0;
    if (moe) {
      job.model.experts = 4;
      job.model.top_k = 2;
      job.model.dense_layers = (bits & 8) != 0 ? 2 : 0;
      job.dp = 2;
      job.ep = 2;
    }
    job.tp = (bits & 16) != 0 ? 2 : 1;
    job.sequence_parallel = job.tp > 1 && (moe || (bits & 8) != 0);
    job.tp_comm_overlap = job.sequence_parallel && (bits % 3) == 0;
    job.pp = (bits & 32) != 0 ? 2 : 1;
    job.schedule = (bits % 5) == 1 ? PipelineSchedule::kZeroBubbleH1 : PipelineSchedule::kOneFOneB;
    job.recompute = (bits % 7) == 2 ? Recompute::kFull : Recompute::kNone;
    job.zero = (bits % 3) == 1 && job.dp > 1;
    job.fsdp = (bits % 3) == 2 && job.dp > 1;
    job.fp8 = (bits % 5) == 2;  // with and without a query latent (bit 1)
    for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
      const auto modules = stablehlo::testing::parse(stage_program(job, stage));
      ASSERT_EQ(modules.size(), 1U) << "options " << bits << ", stage " << stage;
      ++programs;
    }
  }
  EXPECT_EQ(programs, 64 + 32);
}

TEST(GenerateLlm, ExpertsShardOverTheExpertParallelGroup) {
  LlmJob job = tiny();  // 5 layers, width 64, 4 heads of 16, 2 kv heads, FFN 96, vocabulary 50
  job.model.experts = 8;
  job.model.top_k = 2;
  job.dp = 4;
  job.ep = 4;
  const std::uint64_t attention = 64 * (4 + 2 * 2) * 16 + 4 * 16 * 64;
  const std::uint64_t expert = 3 * 64 * 96;
  const LlmFacts f = facts(job);
  EXPECT_EQ(f.parameters, 5 * (attention + 8 * expert + 64 * 8 + 2 * 64) + 2 * 50 * 64 + 64);
  EXPECT_EQ(f.active_parameters, 5 * (attention + 2 * expert + 64 * 8 + 2 * 64) + 2 * 50 * 64 + 64);
  // Per device: every attention weight, the router, 8 / 4 experts.
  EXPECT_EQ(f.stage_parameters[0], 5 * (attention + 2 * expert + 64 * 8 + 2 * 64) + 50 * 64 + 64 + 64 * 50);
  // Shared experts: a dense SwiGLU every token takes, counted in both.
  LlmJob shared = job;
  shared.model.shared_ffn = 128;
  EXPECT_EQ(facts(shared).parameters, f.parameters + 5 * 3 * 64 * 128);
  EXPECT_EQ(facts(shared).active_parameters, f.active_parameters + 5 * 3 * 64 * 128);
  // Dense first layers: two layers with a dense MLP of width 160 in place of the router and
  // experts (and the shared experts), on the first of two stages (3 and 2 layers).
  LlmJob dense = shared;
  dense.model.dense_layers = 2;
  dense.model.dense_ffn = 160;
  dense.pp = 2;
  const std::uint64_t moe_mlp = 8 * expert + 64 * 8 + 3 * 64 * 128;
  const std::uint64_t dense_mlp = 3 * 64 * 160;
  EXPECT_EQ(facts(dense).parameters, facts(shared).parameters - 2 * moe_mlp + 2 * dense_mlp);
  const std::uint64_t active_moe = 2 * expert + 64 * 8 + 3 * 64 * 128;
  EXPECT_EQ(facts(dense).active_parameters, facts(shared).active_parameters - 2 * active_moe + 2 * dense_mlp);
  const std::uint64_t moe_layer_device = attention + 2 * expert + 64 * 8 + 3 * 64 * 128 + 2 * 64;
  const std::uint64_t dense_layer_device = attention + dense_mlp + 2 * 64;
  EXPECT_EQ(facts(dense).stage_parameters[0], 2 * dense_layer_device + moe_layer_device + 50 * 64);
  EXPECT_EQ(facts(dense).stage_parameters[1], 2 * moe_layer_device + 64 + 64 * 50);
  // Interleaved (pp 2 x 2 chunks of 5 layers: 2, 1 | 1, 1): stage 0 holds layers 0, 1 and 3.
  dense.virtual_stages = 2;
  dense.micro_batches = 2;
  EXPECT_EQ(facts(dense).stage_parameters[0], 2 * dense_layer_device + moe_layer_device + 50 * 64);
  EXPECT_EQ(facts(dense).stage_parameters[1], 2 * moe_layer_device + 64 + 64 * 50);
  dense.model.dense_layers = 3;  // layer 2 now dense too, on stage 1
  EXPECT_EQ(facts(dense).stage_parameters[1], dense_layer_device + moe_layer_device + 64 + 64 * 50);
  // Model FLOPs count the experts a token uses, not all of them.
  const double tokens = 4.0 * 3 * 16;
  const double matmul = 5.0 * (attention + 2 * expert + 64 * 8) + 50 * 64;
  const double expected = (6 * matmul + 12.0 * 5 * 16 * 4 * 16) * tokens;
  EXPECT_NEAR(f.model_flops, expected, 1e-9 * expected);
}

TEST(GenerateLlm, PresetsHaveTheirPublishedParameterCounts) {
  LlmJob job;
  job.model = llm_preset("llama3-8b");
  EXPECT_EQ(facts(job).parameters, 8'030'261'248U);
  job.model = llm_preset("llama3-70b");
  EXPECT_EQ(facts(job).parameters, 70'553'706'496U);
  job.model = llm_preset("llama3-405b");
  EXPECT_EQ(facts(job).parameters, 405'853'388'800U);
  job.model = llm_preset("llama2-7b");
  EXPECT_EQ(facts(job).parameters, 6'738'415'616U);
  // Llama 3.2 (tied embeddings: one table): 1.24 B and 3.21 B.
  job.model = llm_preset("llama3.2-1b");
  EXPECT_EQ(facts(job).parameters, 1'235'814'400U);
  job.model = llm_preset("llama3.2-3b");
  EXPECT_EQ(facts(job).parameters, 3'212'749'824U);
  ModelOverrides untie;
  untie.untie_embeddings = true;
  job.model = resolve_model("llama3.2-1b", untie);  // a head of its own: one more table
  EXPECT_EQ(facts(job).parameters, 1'235'814'400U + 128256U * 2048U);
  EXPECT_EQ(job.model.name, "llama3.2-1b (modified)");
  // Mixtral 8x7B: 46.7 B parameters, 12.9 B active (Jiang et al. 2024); 8x22B: 141 B, 39 B.
  job.model = llm_preset("mixtral-8x7b");
  EXPECT_EQ(facts(job).parameters, 46'702'792'704U);
  EXPECT_EQ(facts(job).active_parameters, 12'879'925'248U);
  job.model = llm_preset("mixtral-8x22b");
  EXPECT_NEAR(static_cast<double>(facts(job).parameters), 140.6e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(facts(job).active_parameters), 39.2e9, 0.05e9);
  // DeepSeekMoE 16B: 16.4 B parameters, 2.8 B active (Dai et al. 2024; 16.38 B on the released
  // checkpoint's model card).
  job.model = llm_preset("deepseek-moe-16b");
  EXPECT_EQ(facts(job).parameters, 16'375'728'128U);
  EXPECT_NEAR(static_cast<double>(facts(job).active_parameters), 2.8e9, 0.05e9);
  // With multi-head latent attention: DeepSeek-V2-Lite 15.7 B (2.4 B active, counted there with
  // one vocabulary table: 2.66 B here with both), DeepSeek-V3 671 B (37 B active) without its
  // multi-token prediction module.
  job.model = llm_preset("deepseek-v2-lite");
  EXPECT_NEAR(static_cast<double>(facts(job).parameters), 15.7e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(facts(job).active_parameters) - 102400.0 * 2048, 2.4e9, 0.1e9);
  job.model = llm_preset("deepseek-v3");
  EXPECT_NEAR(static_cast<double>(facts(job).parameters), 671e9, 0.5e9);
  EXPECT_NEAR(static_cast<double>(facts(job).active_parameters), 37e9, 1e9);
}

TEST(GenerateLlm, ModelFlopsFollowTheMfuConvention) {
  // 6 x matmul parameters x tokens plus attention's 12 x layers x seq x heads x head dim per
  // token (forward and backward, the full square); recomputation is not model work.
  LlmJob job;
  job.model = llm_preset("llama3-8b");
  job.seq = 4096;
  job.dp = 2;
  job.micro_batches = 4;
  const double tokens = 2.0 * 4 * 4096;
  const double matmul = 8'030'261'248.0 - 128256.0 * 4096 - 32 * 2 * 4096.0 - 4096;  // no embedding, no norms
  const double expected = (6 * matmul + 12.0 * 32 * 4096 * 32 * 128) * tokens;
  EXPECT_NEAR(facts(job).model_flops, expected, 1e-9 * expected);
  job.recompute = Recompute::kFull;
  EXPECT_NEAR(facts(job).model_flops, expected, 1e-9 * expected);
  // Multi-head latent attention: attention's 2 x (query/key + value head dims) per head instead of
  // 4 x the head dim, and every projection's parameters (here 2 layers, width 256, 8 heads of 32 +
  // 16 rotary, values of 24, latents of 64 and 96).
  LlmJob mla;
  mla.model = resolve_model("", ModelOverrides{2, 256, 8, 32, 8, 512, 1000});
  mla.model.kv_lora_rank = 64;
  mla.model.q_lora_rank = 96;
  mla.model.rope_head_dim = 16;
  mla.model.v_head_dim = 24;
  mla.seq = 128;
  const double projections = 256.0 * 96 + 96 * 8 * 48 + 256.0 * (64 + 16) + 64 * 8 * (32 + 24) + 8 * 24 * 256;
  const double per_token =
      2 * (2 * (projections + 3 * 256.0 * 512) + 1000 * 256) + 2.0 * 2 * 128 * 8 * (48 + 24);
  EXPECT_NEAR(facts(mla).model_flops, 3 * per_token * 128, 1e-9 * 3 * per_token * 128);
}

TEST(GenerateLlm, LayersSplitAsEvenlyAsPossibleFirstStagesTakingTheRest) {
  LlmJob job = tiny();  // 5 layers
  job.pp = 3;
  EXPECT_EQ(stage_layers(job), (std::vector<std::uint32_t>{2, 2, 1}));
  job.pp = 5;
  EXPECT_EQ(stage_layers(job), (std::vector<std::uint32_t>{1, 1, 1, 1, 1}));
  // Per device of each stage: its layers' tp shards, the embedding on the first, the final norm
  // and the LM head on the last (a vocabulary of 50 over tp 2: 25 rows each).
  job.pp = 2;
  job.tp = 2;
  const LlmFacts f = facts(job);
  const std::uint64_t layer = 64 * (2 + 2 * 1) * 16 + 2 * 16 * 64 + 3 * 64 * 48 + 2 * 64;
  EXPECT_EQ(f.stage_parameters, (std::vector<std::uint64_t>{3 * layer + 25 * 64, 2 * layer + 64 + 64 * 25}));
}

TEST(GenerateLlm, MegatronsUnevenSplitGivesTheFirstAndLastStagesTheirOwnCounts) {
  LlmJob job = tiny();
  job.model.layers = 14;
  job.pp = 4;
  job.first_stage_layers = 3;
  job.last_stage_layers = 3;
  EXPECT_NO_THROW(validate(job));
  EXPECT_EQ(stage_layers(job), (std::vector<std::uint32_t>{3, 4, 4, 3}));
  job.last_stage_layers = 0;  // only the first given: the other three share 11 layers: refused
  refused(job,
          "the 11 layers left by --first-stage-layers and --last-stage-layers do not split evenly over the "
          "other 3 stages");
  job.first_stage_layers = 2;
  EXPECT_EQ(stage_layers(job), (std::vector<std::uint32_t>{2, 4, 4, 4}));
  // With 2 chunks per stage each stage's layers split over its chunks: virtual stage v is on stage
  // v mod pp.
  job.virtual_stages = 2;
  job.micro_batches = 4;
  EXPECT_NO_THROW(validate(job));
  EXPECT_EQ(virtual_stage_layers(job), (std::vector<std::uint32_t>{1, 2, 2, 2, 1, 2, 2, 2}));
  job.first_stage_layers = 3;
  job.model.layers = 15;
  refused(job, "--virtual-stages 2: a stage's 3 layers do not split evenly over its chunks");
  job = tiny();  // 5 layers
  job.first_stage_layers = 1;
  refused(job, "--first-stage-layers needs --pp 2 or more");
  job.pp = 2;
  job.last_stage_layers = 3;
  refused(job,
          "--first-stage-layers 1 and --last-stage-layers 3 do not leave the model's 5 layers to the other 0 "
          "stages");
  job.last_stage_layers = 4;
  EXPECT_EQ(stage_layers(job), (std::vector<std::uint32_t>{1, 4}));
  const std::string last = stage_program(job, 1);
  EXPECT_NE(last.find("%layer1_wqkv"), std::string::npos);  // layers 1 to 4 (model-wide numbers)
  EXPECT_NE(last.find("%layer4_wqkv"), std::string::npos);
  EXPECT_EQ(last.find("%layer0_wqkv"), std::string::npos);
}

TEST(GenerateLlm, InterleavedStagesHoldEveryPpthChunk) {
  LlmJob job = tiny();
  job.model.layers = 7;
  job.pp = 3;
  job.virtual_stages = 2;
  job.micro_batches = 6;
  // 7 layers over 6 virtual stages: the first takes two. Stage s holds virtual stages s and s + 3.
  EXPECT_EQ(virtual_stage_layers(job), (std::vector<std::uint32_t>{2, 1, 1, 1, 1, 1}));
  EXPECT_EQ(stage_layers(job), (std::vector<std::uint32_t>{3, 2, 2}));
  const std::string stage0 = stage_program(job, 0);
  for (const char* layer : {"%layer0_wqkv", "%layer1_wqkv", "%layer4_wqkv", "%embedding"}) {
    EXPECT_NE(stage0.find(layer), std::string::npos) << layer;
  }
  EXPECT_EQ(stage0.find("%layer2_wqkv"), std::string::npos);
  EXPECT_EQ(stage0.find("%lm_head"), std::string::npos);
  const std::string stage2 = stage_program(job, 2);
  for (const char* layer : {"%layer3_wqkv", "%layer6_wqkv", "%lm_head"}) {
    EXPECT_NE(stage2.find(layer), std::string::npos) << layer;
  }
  for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
    EXPECT_EQ(stablehlo::testing::parse(stage_program(job, stage)).size(), 1U) << stage;
  }
  EXPECT_EQ(facts(job).stage_parameters.size(), 3U);
}

TEST(GenerateLlm, RefusesJobsItCannotLayOut) {
  LlmJob job = tiny();
  job.tp = 4;  // 2 kv heads
  refused(job, "--kv-heads 2 is not a multiple of --tp 4");
  job = tiny();
  job.model.heads = 3;
  job.model.kv_heads = 3;
  refused(job, "--hidden 64 is not a multiple of --heads 3: give --head-dim");
  job.model.head_dim = 6;
  job.model.ffn = 100;
  job.tp = 3;
  refused(job, "--ffn 100 is not a multiple of --tp 3");  // heads 3 and kv 3 divide
  job = tiny();
  job.pp = 6;
  refused(job, "--pp 6 is more stages than the model's 5 layers");
  job = tiny();
  job.micro_batches = 0;
  refused(job, "--micro-batches must be at least 1");
  job = tiny();
  job.model.heads = 4;
  job.model.kv_heads = 3;
  refused(job, "--heads 4 is not a multiple of --kv-heads 3");
  job = tiny();
  job.tp = 2;
  job.seq = 15;
  job.sequence_parallel = true;
  refused(job, "the 15 tokens of a microbatch are not a multiple of --tp 2");
  job = tiny();
  job.dp = 1U << 24;
  job.tp = 2;
  job.pp = 5;
  refused(job, "devices; at most 2^26");
  EXPECT_THROW((void)llm_preset("gpt-5"), OrreryError);
  job = tiny();
  job.ep = 2;
  refused(job, "--ep 2: expert parallelism needs a mixture-of-experts model (--experts)");
  job = tiny();
  job.model.top_k = 2;
  refused(job, "--top-k 2 needs --experts");
  job = tiny();
  job.model.shared_ffn = 64;
  refused(job, "--shared-ffn 64 needs --experts");
  job.model.experts = 4;
  job.model.top_k = 1;
  job.model.shared_ffn = 63;
  job.tp = 2;
  job.sequence_parallel = true;
  refused(job, "--shared-ffn 63 is not a multiple of --tp 2");
  job = tiny();
  job.model.dense_layers = 1;
  refused(job, "--dense-layers and --dense-ffn need --experts");
  job.model.experts = 4;
  job.model.top_k = 1;
  job.model.dense_layers = 5;
  refused(job, "--dense-layers 5 leaves no mixture-of-experts layer of the 5");
  job.model.dense_layers = 0;
  job.model.dense_ffn = 128;
  refused(job, "--dense-ffn 128 needs --dense-layers");
  job.model.dense_layers = 1;
  job.model.dense_ffn = 127;
  job.tp = 2;
  job.sequence_parallel = true;
  refused(job, "--dense-ffn 127 is not a multiple of --tp 2");
  job = tiny();
  job.model.rope_head_dim = 8;
  refused(job, "--q-lora-rank, --rope-head-dim and --v-head-dim are multi-head latent attention's");
  job.model.kv_lora_rank = 32;
  refused(job, "--kv-heads 2 must equal --heads 4");
  job.model.kv_heads = 4;
  job.model.rope_head_dim = 7;
  refused(job, "needs an even --rope-head-dim (given 7)");
  job.model.rope_head_dim = 8;
  job.attention = Attention::kNaive;
  refused(job, "multi-head latent attention is written for flash attention");
  job.attention = Attention::kFlash;
  job.cp = 2;
  refused(job, "without context parallelism");
  job = tiny();
  job.model.experts = 8;
  job.model.top_k = 9;
  refused(job, "--top-k 9 must be between 1 and --experts 8");
  job.model.top_k = 2;
  job.dp = 6;
  job.ep = 3;
  refused(job, "--experts 8 is not a multiple of --ep 3");
  job.ep = 4;
  refused(job, "--dp 6 is not a multiple of --ep 4");
  job.dp = 4;
  job.tp = 2;
  refused(job, "--experts with --tp 2 needs --sequence-parallel");
  job.sequence_parallel = true;
  job.capacity_factor = 0;
  refused(job, "--capacity-factor 0 must be positive");
  job.capacity_factor = 1;
  EXPECT_NO_THROW(validate(job));
  job.zero = true;
  job.fsdp = true;
  refused(job, "--fsdp shards the optimizer state already: drop --distributed-optimizer");
  job.zero = false;
  job.model.tied_embeddings = true;
  refused(job, "tied embeddings with --fsdp are not modelled");
  job.fsdp = false;
  EXPECT_NO_THROW(validate(job));
  job = tiny();  // sequence 16
  job.cp = 3;
  refused(job, "--seq 16 is not a multiple of 2 x --cp 3");
  job.cp = 2;
  job.cp_comm = CpComm::kP2p;
  job.attention = Attention::kNaive;
  refused(job, "--cp-comm p2p needs --attention flash");
  job.cp_comm = CpComm::kA2a;
  refused(job, "--cp-comm a2a needs --attention flash");
  job.attention = Attention::kFlash;
  EXPECT_NO_THROW(validate(job));  // 4 heads, 2 kv heads over cp 2
  job.tp = 2;
  refused(job,
          "--cp-comm a2a splits each tensor-parallel device's heads over --cp 2: its 2 heads and 1 kv heads");
  job.cp_comm = CpComm::kP2p;
  EXPECT_NO_THROW(validate(job));
  job.cp = 1;  // no context parallelism: the forms are all the same
  job.cp_comm = CpComm::kA2a;
  job.attention = Attention::kNaive;
  EXPECT_NO_THROW(validate(job));
  job = tiny();  // 5 layers, 3 microbatches
  job.virtual_stages = 2;
  refused(job, "--virtual-stages 2 needs --pp 2 or more");
  job.pp = 2;
  refused(job, "--micro-batches 3 is not a multiple of --pp 2");
  job.micro_batches = 4;
  job.virtual_stages = 3;
  refused(job, "--pp 2 x --virtual-stages 3 is more model chunks than the model's 5 layers");
  job.virtual_stages = 2;
  job.schedule = PipelineSchedule::kGPipe;
  refused(job, "interleaving is a 1F1B schedule; drop --schedule gpipe");
  job.schedule = PipelineSchedule::kZeroBubbleH1;
  refused(job, "interleaving is a 1F1B schedule; drop --schedule zb-h1");
  LlmJob overlap = tiny();
  overlap.tp = 2;
  overlap.tp_comm_overlap = true;
  refused(overlap, "--tp-comm-overlap overlaps the sequence-parallel all-gathers and reduce-scatters");
  overlap.sequence_parallel = true;
  overlap.seq = 16;
  EXPECT_NO_THROW(validate(overlap));
  job.schedule = PipelineSchedule::kOneFOneB;
  EXPECT_NO_THROW(validate(job));
}

// The order of a stage's units in its program: F (a layer's forward), B (its backward, or under
// ZB-H1 its input gradients) and W (ZB-H1's weight gradients), one layer per stage.
std::string unit_order(const LlmJob& job, std::uint32_t stage) {
  const std::string text = stage_program(job, stage);
  std::string order;
  for (std::size_t at = text.find("func.call @layer_"); at != std::string::npos;
       at = text.find("func.call @layer_", at + 1)) {
    const std::string_view callee(text.data() + at + 17, 16);
    order += callee.starts_with("forward(")           ? 'F'
             : callee.starts_with("backward(")        ? 'B'
             : callee.starts_with("weight_backward(") ? 'W'
                                                      : '?';
  }
  return order;
}

TEST(GenerateLlm, ZeroBubbleH1RunsEachWeightPassAsManyMicrobatchesLateAsItsStage) {
  LlmJob job = tiny();
  job.model.layers = 3;
  job.pp = 3;
  job.micro_batches = 4;
  // 1F1B: pp - s - 1 forwards, then one forward and one backward, then the remaining backwards.
  EXPECT_EQ(unit_order(job, 0), "FFFBFBBB");
  EXPECT_EQ(unit_order(job, 1), "FFBFBFBB");
  EXPECT_EQ(unit_order(job, 2), "FBFBFBFB");
  // ZB-H1 (Qi et al. 2024): 1F1B's forwards and backwards, stage s running microbatch j's W after
  // microbatch j + s's B and the rest at the end; stage 0's W directly follows its B, so its
  // backward stays whole.
  job.schedule = PipelineSchedule::kZeroBubbleH1;
  EXPECT_EQ(unit_order(job, 0), "FFFBFBBB");
  EXPECT_EQ(unit_order(job, 1), "FFBFBWFBWBWW");
  EXPECT_EQ(unit_order(job, 2), "FBFBFBWFBWWW");
  // With more microbatches than stages the steady state runs F, B, W.
  job.micro_batches = 6;
  EXPECT_EQ(unit_order(job, 2), "FBFBFBWFBWFBWFBWWW");
}

}  // namespace
}  // namespace orrery::frontend::generate
