#!/usr/bin/env bash
# `orrery generate llm` (docs/generate.md): the generated programs hold the work and the
# communication the closed forms say (GEMM FLOPs per device and stage for flash and naive
# attention, all-reduces, sends and recvs, the bytes of the arguments); the scenario runs, the
# same under mpirun -np 1 and 2; the distributed optimizer (ZeRO-1) keeps 1/dp of the optimizer
# state and reduce-scatters and all-gathers instead of all-reducing; FSDP keeps 1/dp of the
# weights too, gathering each unit before each use and reduce-scattering its gradients; context
# parallelism halves each device's tokens and all-gathers keys and values, or passes them round a
# ring of collective permutes, or all-to-alls them to a head split (Ulysses), at the same FLOPs; FP8 linear layers read
# one byte per operand element at the same FLOPs and shorten an 8B job's compute on H100; sequence parallelism turns each
# tensor-parallel all-reduce into a reduce-scatter and an all-gather at the same GEMM FLOPs and
# stashes less; Megatron's uneven pipeline split moves layers between stages; tied embeddings keep
# one table (a copy on the last stage whose gradient is exchanged); written as Chakra traces and run back it takes the same step (kernel times in whole
# microseconds aside); 1F1B stashes fewer activations than GPipe and full
# recomputation fewer still, at a compute cost, and interleaving (virtual stages) idles less and
# stashes more; ZB-H1 runs the same kernels as 1F1B in a shorter step, idling less, stage 0 stashing
# what it does under 1F1B and the later stages more; tensor-parallel communication overlap
# replaces each layer's sequence-parallel gathers and scatters by rings of collective permutes at
# the same GEMM FLOPs and exposes less communication; a mixture-of-experts job routes its tokens to
# experts spread over expert-parallel groups by all-to-all (expert GEMM FLOPs, all-to-alls and
# their bytes, the experts' own reduction groups and ZeRO-1 shards as the closed forms, -np 1 =
# -np 2); generating twice gives the same files; and each bad request ends with a message and
# exit 2. Checks: tests/integration/generate_checks.py.
set -uo pipefail
orrery=$1
mpirun=$2
root=$3
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3

small=(--layers 4 --hidden 256 --heads 8 --kv-heads 2 --ffn 512 --vocab 1000 --seq 128)
gen() {  # gen NAME ARGS...: generates into $work/NAME with --json facts in $work/NAME.json
  local name=$1
  shift
  "$orrery" generate llm "$@" --out "$work/$name" --json > "$work/$name.json" 2> "$work/$name.err" ||
    { fail "generate $name"; cat "$work/$name.err"; }
}
# --bucket-elements 1: every gradient reduced on its own, so the counts below are per tensor.
gen flash "${small[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 4 --bucket-elements 1
gen naive "${small[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 4 --attention naive --bucket-elements 1
gen again "${small[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 4 --bucket-elements 1
gen zero "${small[@]}" --dp 3 --tp 2 --pp 2 --micro-batches 4 --distributed-optimizer --bucket-elements 1
gen fsdp "${small[@]}" --dp 3 --tp 2 --pp 2 --micro-batches 4 --fsdp
gen nosync "${small[@]}" --dp 3 --tp 2 --pp 2 --micro-batches 4 --fsdp --no-sync
gen cp "${small[@]}" --dp 2 --cp 2 --tp 2 --pp 2 --micro-batches 4 --bucket-elements 1
# Tied embeddings: on one stage (against the untied job) and over two (against flash).
gen pp1 "${small[@]}" --dp 2 --tp 2 --micro-batches 4 --bucket-elements 1
gen tied1 "${small[@]}" --dp 2 --tp 2 --micro-batches 4 --bucket-elements 1 --tie-embeddings
gen tied2 "${small[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 4 --bucket-elements 1 --tie-embeddings
# Context parallelism's other forms: the ring (cp 2 and, with tp 1, cp 4) and Ulysses (tp 1: the
# heads split over cp), each against the all-gather form of the same layout.
gen cp_p2p "${small[@]}" --dp 2 --cp 2 --tp 2 --pp 2 --micro-batches 4 --bucket-elements 1 --cp-comm p2p
gen cp4 "${small[@]}" --cp 4 --pp 2 --micro-batches 4 --bucket-elements 1
gen cp4_p2p "${small[@]}" --cp 4 --pp 2 --micro-batches 4 --bucket-elements 1 --cp-comm p2p
gen cp_tp1 "${small[@]}" --dp 2 --cp 2 --pp 2 --micro-batches 4 --bucket-elements 1
gen cp_a2a "${small[@]}" --dp 2 --cp 2 --pp 2 --micro-batches 4 --bucket-elements 1 --cp-comm a2a
gen fp8 "${small[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 4 --bucket-elements 1 --fp8
gen seqpar "${small[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 4 --sequence-parallel --bucket-elements 1
gen buckets "${small[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 4 --bucket-elements 300000
gen onebucket "${small[@]}" --dp 2 --tp 2 --pp 2 --micro-batches 4
gen zerobuckets "${small[@]}" --dp 3 --tp 2 --pp 2 --micro-batches 4 --distributed-optimizer --bucket-elements 300000
# Hybrid sharding: dp 4 in shard groups of 2.
gen hsdpzero "${small[@]}" --dp 4 --tp 2 --pp 2 --micro-batches 4 --distributed-optimizer --shard-group 2 \
  --bucket-elements 1
gen hsdp "${small[@]}" --dp 4 --tp 2 --pp 2 --micro-batches 4 --fsdp --shard-group 2 --bucket-elements 1
# Mixture of experts: 8 experts, 2 per token, over expert-parallel groups of 2 replicas.
moe=("${small[@]}" --experts 8 --top-k 2 --dp 4 --ep 2 --pp 2 --micro-batches 4 --bucket-elements 1)
gen moe "${moe[@]}" --tp 2 --sequence-parallel
gen moezero "${moe[@]}" --distributed-optimizer
gen moecap "${moe[@]}" --tp 2 --sequence-parallel --capacity-factor 1.5
gen moeshared "${moe[@]}" --tp 2 --sequence-parallel --shared-ffn 256
# DeepSeekMoE's dense first layer: layer 0 a dense MLP of width 384, on the first stage.
gen moedense "${moe[@]}" --tp 2 --sequence-parallel --dense-layers 1 --dense-ffn 384
# Three dense layers (one on stage 1) under 1F1B and under ZB-H1, whose split backward the dense
# layers on stage 1 take (stage 0 runs its weight passes at once).
gen moedense3 "${moe[@]}" --tp 2 --sequence-parallel --dense-layers 3 --dense-ffn 384
gen moedense3_zb "${moe[@]}" --tp 2 --sequence-parallel --dense-layers 3 --dense-ffn 384 --schedule zb-h1
# Multi-head latent attention (DeepSeek-V2/V3): keys and values from a latent of 64, rotary keys of
# 16, values of 24 per head; with a query latent of 96 under sequence parallelism, and without one
# under plain tensor parallelism and ZB-H1.
mla=(--layers 4 --hidden 256 --heads 8 --kv-heads 8 --ffn 512 --vocab 1000 --seq 128 --kv-lora-rank 64
     --rope-head-dim 16 --v-head-dim 24 --dp 2 --tp 2 --pp 2 --micro-batches 4 --bucket-elements 1)
gen mla "${mla[@]}" --sequence-parallel --q-lora-rank 96
gen mla_nosp "${mla[@]}" --schedule zb-h1
gen mla_fp8 "${mla[@]}" --sequence-parallel --q-lora-rank 96 --fp8
for s in 0 1; do
  cmp -s "$work/flash/stage_$s.mlir" "$work/again/stage_$s.mlir" || fail "generating twice gives the same stage $s"
done
cmp -s "$work/flash/scenario.yaml" "$work/again/scenario.yaml" || fail "generating twice gives the same scenario"
# Activations outweigh the parameters here, so the stash sets the peak.
pipe=(--layers 8 --hidden 128 --heads 2 --ffn 256 --vocab 256 --seq 1024 --micro-batch 4 --pp 4)
gen onef "${pipe[@]}" --micro-batches 8
gen onef16 "${pipe[@]}" --micro-batches 16
gen interleaved "${pipe[@]}" --micro-batches 8 --virtual-stages 2
gen gpipe "${pipe[@]}" --micro-batches 8 --schedule gpipe
gen zb "${pipe[@]}" --micro-batches 8 --schedule zb-h1
gen zb_tied "${pipe[@]}" --micro-batches 8 --schedule zb-h1 --tie-embeddings --dp 2 --distributed-optimizer
gen interleaved_tied "${pipe[@]}" --micro-batches 8 --virtual-stages 2 --tie-embeddings
# ZB-H1 with tensor-parallel collectives in the weight passes (sequence parallelism's gathers)
# and a data-parallel reduction that waits for the last weight pass, against 1F1B.
gen onef_spzero "${pipe[@]}" --micro-batches 8 --tp 2 --sequence-parallel --dp 2 --distributed-optimizer
gen zb_spzero "${pipe[@]}" --micro-batches 8 --tp 2 --sequence-parallel --dp 2 --distributed-optimizer \
  --schedule zb-h1
gen recompute "${pipe[@]}" --micro-batches 8 --recompute full
# Megatron's uneven split: one layer on the first and last stages, three on each middle one.
gen uneven "${pipe[@]}" --micro-batches 8 --first-stage-layers 1 --last-stage-layers 1
gen pipe_tp "${pipe[@]}" --micro-batches 8 --tp 2
gen pipe_sp "${pipe[@]}" --micro-batches 8 --tp 2 --sequence-parallel
# Tensor-parallel communication overlap: tp 4 with sequence parallelism, with and without.
gen tp4_sp --model llama3-8b --layers 4 --tp 4 --sequence-parallel --pp 2 --micro-batches 4 --seq 2048
gen tp4_overlap --model llama3-8b --layers 4 --tp 4 --sequence-parallel --pp 2 --micro-batches 4 --seq 2048 \
  --tp-comm-overlap
gen preset --model llama3-8b --tp 8 --pp 2 --dp 2 --micro-batches 4 --seq 1024
gen preset_fp8 --model llama3-8b --tp 8 --pp 2 --dp 2 --micro-batches 4 --seq 1024 --fp8

for name in flash naive zero fsdp nosync cp fp8 seqpar buckets onebucket zerobuckets moe moezero moecap moeshared moedense moedense3 moedense3_zb hsdpzero \
  hsdp cp_p2p cp4 cp4_p2p cp_tp1 cp_a2a tied2 mla mla_nosp mla_fp8; do
  for s in 0 1; do
    "$orrery" inspect "$work/$name/stage_$s.mlir" --cost --hardware H100 --json > "$work/$name.inspect$s.json" ||
      fail "inspect $name stage $s"
  done
done
for name in hsdpzero hsdp; do  # the collectives' counts and group sizes
  for s in 0 1; do
    "$orrery" inspect "$work/$name/stage_$s.mlir" --json > "$work/$name.collectives$s.json" ||
      fail "inspect $name stage $s"
  done
done
run() {  # run NAME OUT [np]
  local name=$1 out=$2 np=${3:-1}
  local args=(--log-level warn run "$work/$name/scenario.yaml" --summary-json "$work/$out.summary.json")
  if [[ $np == 1 ]]; then
    "$orrery" "${args[@]}" > "$work/$out.txt" 2>&1
  else
    timeout 300 "$mpirun" -np "$np" "$orrery" "${args[@]}" > "$work/$out.txt" 2>&1
  fi || { fail "run $name ($out)"; head -5 "$work/$out.txt"; }
}
run flash flash
run flash flash_np2 2
run naive naive
run zero zero
run zero zero_np2 2
run fsdp fsdp
run fsdp fsdp_np2 2
run nosync nosync
run nosync nosync_np2 2
run cp cp
run cp cp_np2 2
for name in cp_p2p cp4 cp4_p2p cp_tp1 cp_a2a pp1 tied1 tied2; do run "$name" "$name"; done
run tied2 tied2_np2 2
run cp_p2p cp_p2p_np2 2
run cp_a2a cp_a2a_np2 2
run seqpar seqpar
run seqpar seqpar_np2 2
run zerobuckets zerobuckets
run zerobuckets zerobuckets_np2 2
run hsdpzero hsdpzero
run hsdp hsdp
run hsdp hsdp_np2 2
for name in onef onef16 gpipe recompute pipe_tp pipe_sp interleaved zb onef_spzero zb_spzero; do run "$name" "$name"; done
run zb zb_np2 2
run uneven uneven
run uneven uneven_np2 2
for name in zb_tied interleaved_tied; do run "$name" "$name"; run "$name" "${name}_np2" 2; done
for name in tp4_sp tp4_overlap; do run "$name" "$name"; done
run tp4_overlap tp4_overlap_np2 2
for name in tp4_sp tp4_overlap; do
  for s in 0 1; do
    "$orrery" inspect "$work/$name/stage_$s.mlir" --cost --hardware H100 --json > "$work/$name.inspect$s.json" ||
      fail "inspect $name stage $s"
    "$orrery" inspect "$work/$name/stage_$s.mlir" --json > "$work/$name.collectives$s.json" ||
      fail "inspect $name stage $s"
  done
done
run zb_spzero zb_spzero_np2 2
run interleaved interleaved_np2 2
for s in 0 1 2 3; do
  "$orrery" inspect "$work/interleaved/stage_$s.mlir" --json > "$work/interleaved.inspect$s.json" ||
    fail "inspect interleaved stage $s"
done
run preset preset
run preset preset_np2 2
run preset_fp8 preset_fp8
run fp8 fp8_np2 2
run fp8 fp8
run moe moe
run moe moe_np2 2
run moedense moedense
run moedense moedense_np2 2
run moedense3_zb moedense3_zb
run moedense3_zb moedense3_zb_np2 2
run mla mla
run mla mla_np2 2
run mla_nosp mla_nosp
run mla_nosp mla_nosp_np2 2
run moezero moezero

# The same job generated when the scenario loads (workload.llm) runs exactly as the files do, and
# a sweep over its layout gives the same CSV under -np 1 and -np 2.
llm=(--set 'workload.programs=[]' --set 'workload.llm={layers: 4, hidden: 256, heads: 8, kv_heads: 2, ffn: 512,
     vocab: 1000, seq: 128, dp: 2, tp: 2, pp: 2, micro_batches: 4, bucket_elements: 1}')
"$orrery" --log-level warn run "$work/flash/scenario.yaml" "${llm[@]}" --summary-json "$work/inline.summary.json" \
  > "$work/inline.txt" 2>&1 || { fail "run workload.llm"; head -5 "$work/inline.txt"; }
sweep=(sweep "$work/flash/scenario.yaml" "${llm[@]}" --vary workload.llm.micro_batches=2,4
       --vary workload.llm.sequence_parallel=false,true)
"$orrery" --log-level warn "${sweep[@]}" --out "$work/sweep1.csv" > /dev/null 2>&1 || fail "sweep workload.llm"
timeout 300 "$mpirun" -np 2 "$orrery" --log-level warn "${sweep[@]}" --out "$work/sweep2.csv" > /dev/null 2>&1 ||
  fail "sweep workload.llm -np 2"

"$orrery" --log-level warn run "$work/moe/scenario.yaml" --set 'workload.programs=[]' \
  --set 'workload.llm={layers: 4, hidden: 256, heads: 8, kv_heads: 2, ffn: 512, vocab: 1000, seq: 128, experts: 8,
         top_k: 2, dp: 4, ep: 2, pp: 2, tp: 2, sequence_parallel: true, micro_batches: 4, bucket_elements: 1}' \
  --summary-json "$work/moe_inline.summary.json" > "$work/moe_inline.txt" 2>&1 ||
  { fail "run workload.llm with experts"; head -5 "$work/moe_inline.txt"; }

# Written as Chakra traces (a graph per stage, sends and recvs between them) and run back.
mkdir -p "$work/chakra"
"$orrery" --log-level warn convert "$work/flash/scenario.yaml" --to chakra --out "$work/chakra/r" > "$work/convert.txt" 2>&1 ||
  fail "convert the generated job to Chakra"
"$orrery" --log-level warn run "$work/flash/scenario.yaml" --set 'workload.programs=[]' \
  --set "workload.chakra.prefix=$work/chakra/r" --set "workload.chakra.comm_groups=$work/chakra/r.comm_groups.json" \
  --summary-json "$work/chakra.summary.json" > "$work/chakra.txt" 2>&1 || { fail "run the Chakra traces"; head -5 "$work/chakra.txt"; }
"$orrery" --log-level warn convert "$work/preset/scenario.yaml" --to chakra --out "$work/chakra/p" > /dev/null 2>&1 ||
  fail "convert the Llama 3 8B job to Chakra"
"$orrery" --log-level warn run "$work/preset/scenario.yaml" --set 'workload.programs=[]' \
  --set "workload.chakra.prefix=$work/chakra/p" --set "workload.chakra.comm_groups=$work/chakra/p.comm_groups.json" \
  --summary-json "$work/chakra_preset.summary.json" > "$work/chakra_preset.txt" 2>&1 ||
  { fail "run the Llama 3 8B job's Chakra traces"; head -5 "$work/chakra_preset.txt"; }

"$python" "$root/tests/integration/generate_checks.py" "$work" || fail "generate: closed forms and runs"

expect "hidden not a multiple of heads" 2 "--hidden 64 is not a multiple of --heads 3: give --head-dim" -- \
  "$orrery" generate llm --layers 2 --hidden 64 --heads 3 --ffn 64 --vocab 10 --out "$work/bad"
expect "kv heads not a multiple of tp" 2 "--kv-heads 8 is not a multiple of --tp 16" -- \
  "$orrery" generate llm --model llama3-8b --tp 16 --out "$work/bad"
expect "more stages than layers" 2 "--pp 64 is more stages than the model's 32 layers" -- \
  "$orrery" generate llm --model llama3-8b --pp 64 --out "$work/bad"
expect "unknown preset" 2 "--model: unknown model 'llama9' (presets: llama3-100m, llama2-7b" -- \
  "$orrery" generate llm --model llama9 --out "$work/bad"
expect "no model" 2 "name a --model preset, or give --layers, --hidden, --heads, --ffn and --vocab" -- \
  "$orrery" generate llm --layers 4 --out "$work/bad"
expect "zero microbatches" 2 "--micro-batches must be at least 1" -- \
  "$orrery" generate llm --model llama3-8b --micro-batches 0 --out "$work/bad"
expect "sequence parallelism over a token count tp does not divide" 2 \
  "--sequence-parallel: the 1025 tokens of a microbatch are not a multiple of --tp 2" -- \
  "$orrery" generate llm --model llama3-8b --seq 1025 --tp 2 --sequence-parallel --out "$work/bad"
expect "odd head dimension" 2 "the head dimension 5 must be even for the rotary embedding" -- \
  "$orrery" generate llm --model llama3-8b --head-dim 5 --out "$work/bad"
expect "experts over an ep that does not divide dp" 2 "--dp 6 is not a multiple of --ep 4" -- \
  "$orrery" generate llm --model mixtral-8x7b --dp 6 --ep 4 --out "$work/bad"
expect "experts with tp but no sequence parallelism" 2 "--experts with --tp 2 needs --sequence-parallel" -- \
  "$orrery" generate llm --model mixtral-8x7b --tp 2 --out "$work/bad"
expect "expert parallelism on a dense model" 2 "--ep 2: expert parallelism needs a mixture-of-experts model" -- \
  "$orrery" generate llm --model llama3-8b --dp 2 --ep 2 --out "$work/bad"
expect "workload.llm capacity factor" 2 "workload.llm.capacity_factor" -- \
  "$orrery" run "$work/flash/scenario.yaml" --set 'workload.programs=[]' --set workload.llm.model=mixtral-8x7b \
  --set workload.llm.capacity_factor=0
expect "context parallelism over a sequence 2 cp does not divide" 2 \
  "--seq 100 is not a multiple of 2 x --cp 4" -- "$orrery" generate llm --model llama3-8b --seq 100 --cp 4 --out "$work/bad"
expect "ring context parallelism with naive attention" 2 "--cp-comm p2p needs --attention flash" -- \
  "$orrery" generate llm --model llama3-8b --cp 2 --cp-comm p2p --attention naive --out "$work/bad"
expect "Ulysses over more devices than kv heads" 2 \
  "--cp-comm a2a splits each tensor-parallel device's heads over --cp 4: its 4 heads and 1 kv heads" -- \
  "$orrery" generate llm --model llama3-8b --tp 8 --cp 4 --cp-comm a2a --out "$work/bad"
expect "workload.llm Ulysses with naive attention" 2 "workload.llm.cp_comm a2a needs workload.llm.attention flash" -- \
  "$orrery" run "$work/flash/scenario.yaml" --set 'workload.programs=[]' --set workload.llm.model=llama3-8b \
  --set workload.llm.cp=2 --set workload.llm.cp_comm=a2a --set workload.llm.attention=naive
expect "unknown context-parallel form" 2 "--cp-comm" -- \
  "$orrery" generate llm --model llama3-8b --cp 2 --cp-comm ring --out "$work/bad"
expect "an uneven split that leaves layers over" 2 \
  "the 29 layers left by --first-stage-layers and --last-stage-layers do not split evenly over the other 2" -- \
  "$orrery" generate llm --model llama3-8b --pp 4 --first-stage-layers 1 --last-stage-layers 2 --out "$work/bad"
expect "tied embeddings with FSDP" 2 "tied embeddings with --fsdp are not modelled" -- \
  "$orrery" generate llm --model llama3.2-1b --dp 2 --fsdp --out "$work/bad"
expect "tying and untying at once" 2 "--tie-embeddings and --untie-embeddings contradict each other" -- \
  "$orrery" generate llm --model llama3.2-1b --tie-embeddings --untie-embeddings --out "$work/bad"
expect "interleaving with GPipe" 2 "--virtual-stages: interleaving is a 1F1B schedule; drop --schedule gpipe" -- \
  "$orrery" generate llm --model llama3-8b --pp 4 --micro-batches 8 --virtual-stages 2 --schedule gpipe --out "$work/bad"
expect "interleaving with ZB-H1" 2 "--virtual-stages: interleaving is a 1F1B schedule; drop --schedule zb-h1" -- \
  "$orrery" generate llm --model llama3-8b --pp 4 --micro-batches 8 --virtual-stages 2 --schedule zb-h1 --out "$work/bad"
expect "TP overlap without sequence parallelism" 2 "--tp-comm-overlap overlaps the sequence-parallel all-gathers" -- \
  "$orrery" generate llm --model llama3-8b --tp 8 --tp-comm-overlap --out "$work/bad"
expect "unknown schedule name" 2 "zb-h2" -- "$orrery" generate llm --model llama3-8b --schedule zb-h2 --out "$work/bad"
expect "FSDP with ZeRO-1" 2 "--fsdp shards the optimizer state already: drop --distributed-optimizer" -- \
  "$orrery" generate llm --model llama3-8b --dp 2 --fsdp --distributed-optimizer --out "$work/bad"
expect "no_sync without FSDP" 2 "--no-sync is FSDP's gradient accumulation without reduce-scatter: give --fsdp" -- \
  "$orrery" generate llm --model llama3-8b --dp 4 --distributed-optimizer --no-sync --out "$work/bad"
expect "a shard group without sharding" 2 "--shard-group shards what --distributed-optimizer or --fsdp shards" -- \
  "$orrery" generate llm --model llama3-8b --dp 4 --shard-group 2 --out "$work/bad"
expect "a shard group that does not divide dp" 2 \
  "--shard-group 3 does not divide the 4 devices that hold the same weights (dp x cp)" -- \
  "$orrery" generate llm --model llama3-8b --dp 4 --fsdp --shard-group 3 --out "$work/bad"
expect "a shard group of one" 2 "--shard-group 1 shards nothing" -- \
  "$orrery" generate llm --model llama3-8b --dp 4 --distributed-optimizer --shard-group 1 --out "$work/bad"
expect "unknown schedule" 2 "--schedule" -- \
  "$orrery" generate llm --model llama3-8b --schedule interleaved --out "$work/bad"
expect "workload.llm beside programs" 2 "workload.llm: give one of \`programs\`, \`chakra\` and \`llm\`" -- \
  "$orrery" run "$work/flash/scenario.yaml" --set workload.llm.model=llama3-8b
expect "workload.llm that cannot be laid out" 2 "workload.llm.kv_heads 8 is not a multiple of workload.llm.tp 16" -- \
  "$orrery" run "$work/flash/scenario.yaml" --set 'workload.programs=[]' --set workload.llm.model=llama3-8b \
  --set workload.llm.tp=16
touch "$work/file"
expect "output not a directory" 2 "cannot create the directory" -- \
  "$orrery" generate llm --model llama3-8b --out "$work/file/sub"
[[ -e $work/bad ]] && fail "a refused request writes nothing"

exit $((failures > 0))
