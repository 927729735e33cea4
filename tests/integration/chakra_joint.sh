#!/usr/bin/env bash
# Chakra jobs whose ranks run different graphs (docs/chakra.md, "Ranks that share a graph"): a
# collective over ranks of several graphs is one collective, matched in group order, and ranks that
# share a graph but send to ranks of different graphs (a pipeline shift) or to a graph of another
# size (two ranks to one) are split apart. The same work written as one graph and as two, or as
# shared graphs and as a graph per rank, gives the same summary; a two-stage pipeline with a norm reduced
# over both stages runs, the same under mpirun -np 1 and 2 (analytical and flow models); every
# mismatch (sizes, counts, a rank missing) ends with the ranks and nodes named, and a crossed order
# ends as a deadlock naming the blocked ranks, never a hang. Jobs: tests/integration/chakra_jobs.py.
set -uo pipefail
orrery=$1
mpirun=$2
root=$3
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3

for job in shared joint size_mismatch count_mismatch missing crossed pipeline shift shift_distinct fan_in \
           fan_in_distinct; do
  "$python" "$root/tests/integration/chakra_jobs.py" "$root" "$job" "$work/$job" || fail "writing job $job"
done
echo "hardware: A100_40GB" > "$work/scenario.yaml"

run() {  # run JOB OUT [np] [extra --set args...]
  local job=$1 out=$2 np=${3:-1}
  shift 3
  local args=(--log-level warn run "$work/scenario.yaml" --set "workload.chakra.prefix=$work/$job" "$@"
              --summary-json "$work/$out.json")
  [[ -f $work/$job.comm_groups.json ]] && args+=(--set "workload.chakra.comm_groups=$work/$job.comm_groups.json")
  if [[ $np == 1 ]]; then
    "$orrery" "${args[@]}" > "$work/$out.txt" 2>&1
  else
    timeout 300 "$mpirun" -np "$np" "$orrery" "${args[@]}" > "$work/$out.txt" 2>&1
  fi || { fail "$job ($out)"; head -5 "$work/$out.txt"; }
}

for model in analytical flow; do
  run shared "shared_$model" 1 --set "network.model=$model"
  run joint "joint_$model" 1 --set "network.model=$model"
  run joint "joint_${model}_np2" 2 --set "network.model=$model"
  run pipeline "pipeline_$model" 1 --set "network.model=$model"
  run pipeline "pipeline_${model}_np2" 2 --set "network.model=$model"
  for job in shift fan_in; do
    run "$job" "${job}_$model" 1 --set "network.model=$model"
    run "${job}_distinct" "${job}_distinct_$model" 1 --set "network.model=$model"
  done
  run shift "shift_${model}_np2" 2 --set "network.model=$model"
done
grep -q "durations differ" "$work/shift_analytical.txt" &&
  fail "split ranks take their own durations (ranks 1 and 2 of the shift differ)"
grep -q "all_reduce of 4.0 B over 4 ranks" "$work/pipeline_analytical.txt" ||
  fail "the pipeline's norm is one all-reduce over both stages' ranks"

"$python" - "$work" <<'PY' || fail "joint collectives: summaries"
import json, sys
w = sys.argv[1]
load = lambda name: json.load(open(f"{w}/{name}.json"))
keys = ("step_time_s", "compute_s", "comm_s", "exposed_comm_s", "idle_s", "ranks")
for model in ("analytical", "flow"):
    shared, joint = load(f"shared_{model}"), load(f"joint_{model}")
    # Rank 1's 25 us as two kernels instead of one: the same step, to the picosecond.
    for k in keys:
        assert shared[k] == joint[k], (model, k, shared[k], joint[k])
    assert joint["ranks"] == 2 and joint["comm_s"] > 0
    for job in ("shift", "fan_in"):  # shared graphs split apart = a graph per rank from the start
        split, apart = load(f"{job}_{model}"), load(f"{job}_distinct_{model}")
        for k in keys:
            assert split[k] == apart[k], (job, model, k, split[k], apart[k])
    for job in ("joint", "pipeline", "shift"):
        one, two = load(f"{job}_{model}"), load(f"{job}_{model}_np2")
        for k in keys:
            assert one[k] == two[k], (job, model, k, one[k], two[k])
    p = load(f"pipeline_{model}")
    # The critical path holds stage 0's forward (100 us), stage 1's forward and backward
    # (150 + 250 us), stage 0's backward (200 us) and two 4 MiB transfers.
    assert p["ranks"] == 4 and p["step_time_s"] > 700e-6, p["step_time_s"]
    print(f"ok   {model}: one graph = two graphs ({joint['step_time_s'] * 1e6:.3f} us); pipeline "
          f"{p['step_time_s'] * 1e6:.3f} us; split graphs = a graph per rank (shift, fan-in); -np 1 = -np 2")
PY

expect "joint collective of different sizes" 1 \
  "collective 1 over ranks 0-1 differs: $work/size_mismatch.0.et:1:1 n0 (all_reduce of 1048576 bytes) on rank 0, $work/size_mismatch.1.et:2:1 n1 (all_reduce of 2097152 bytes) on rank 1" -- \
  "$orrery" run "$work/scenario.yaml" --set "workload.chakra.prefix=$work/size_mismatch"
expect "joint collectives of different counts" 1 \
  "collectives over ranks 0-1: 2 on rank 0 but 1 on rank 1; collective 2 on the group, $work/count_mismatch.0.et:2:1 n1" -- \
  "$orrery" run "$work/scenario.yaml" --set "workload.chakra.prefix=$work/count_mismatch"
expect "a rank of the group runs none" 1 "but none on rank 2 ($work/missing.2.et)" -- \
  "$orrery" run "$work/scenario.yaml" --set "workload.chakra.prefix=$work/missing" \
  --set "workload.chakra.comm_groups=$work/missing.comm_groups.json"
expect "crossed order: a deadlock, not a hang" 1 \
  "deadlock: no events are left but 3 of 3 ranks have not finished; the first blocked rank: rank 0" -- \
  "$orrery" run "$work/scenario.yaml" --set "workload.chakra.prefix=$work/crossed" \
  --set "workload.chakra.comm_groups=$work/crossed.comm_groups.json"
expect "crossed order under mpirun -np 2" 1 "deadlock: no events are left but 3 of 3 ranks have not finished" -- \
  "$mpirun" -np 2 "$orrery" run "$work/scenario.yaml" --set "workload.chakra.prefix=$work/crossed" \
  --set "workload.chakra.comm_groups=$work/crossed.comm_groups.json"

exit $((failures > 0))
