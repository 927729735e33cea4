#!/usr/bin/env bash
# `make bench`: runs every benchmark and prints its table. Figures that go into bench/RESULTS.md are
# copied from this output together with the command that produced them.
set -euo pipefail
build=${1:-build/release}
root=$(cd "$(dirname "$0")/.." && pwd)
echo "== machine"
lscpu | grep -E 'Model name|^CPU\(s\)|L2|L3' || true
echo
echo "== event queue (hold model)"
"$build/bench/queue_bench" --benchmark_min_time=0.3
echo
echo "== PHOLD grid"
/usr/bin/python3 "$root/bench/phold_grid.py" --orrery "$build/orrery" --mpirun "$root/scripts/mpirun.sh"
echo
echo "== network flow model (32K fat-tree, 16K dragonfly; full runs, each stopped after at most 600 s)"
"$build/bench/network_bench" --run-limit-s 600
echo
echo "== network flow model, smaller instances, each run checked against full re-solves"
"$build/bench/network_bench" --quick --verify --run-limit-s 600
echo
echo "== StableHLO frontend (parse + lower, IR heap) on a 200 MB file built from Llama3-100M"
big=$build/bench/llama3-100m-big.mlir
[[ -f "$big" ]] || /usr/bin/python3 "$root/bench/gen_llama_stablehlo.py" --mb 200 --out "$big"
"$build/bench/stablehlo_bench" "$big" --repeat 3
echo
echo "== Compute estimators (cost every op: counting + estimates, with and without the cache)"
shared=${ORRERY_SHARED_DATA:-$root/../shared/data}/stablehlo
programs=()
for f in "$shared/hespas_workloads/llama3-100m.post-spmd-4dev.mlir" "$shared/hespas/resnet50_train_step_4dev_b1024.mlir"; do
  [[ -f "$f" ]] && programs+=("$f")
done
"$build/bench/compute_bench" "${programs[@]}" "$big" --repeat 5
echo
echo "== Chakra frontend (load a job's per-rank traces: read, decode, check, group, build)"
pytorch=${ORRERY_SHARED_DATA:-$root/../shared/data}/chakra/pytorch/chakra.0.et
if [[ -f "$pytorch" ]]; then
  "$build/bench/chakra_bench" "$pytorch" --ranks 1,64,1024 --repeat 3
else
  echo "skip the PyTorch trace: needs $pytorch (../shared/data beside the clone)"
fi
"$build/bench/chakra_bench" "$root/tests/data/chakra/astra-sim/microbenchmarks/all_reduce/16npus_1MB/all_reduce.1.et" \
  --ranks 1024,32768 --repeat 3
