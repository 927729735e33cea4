#!/usr/bin/env bash
# Shipped large scenarios run on one process and on two, with identical summaries (wall times and
# engine statistics aside). Usage: scale_scenarios.sh ORRERY MPIRUN ROOT SCENARIO:MODEL...
# tests/integration/CMakeLists.txt registers two tests with it:
# - scale_scenarios (label "scale", part of `make test`): the 1,024-device fat-tree and dragonfly
#   scenarios on the analytical network, the fat-tree one on the flow model, and the generated
#   Llama 3 70B (fat-tree) and Mixtral 8x22B (dragonfly) jobs on 1,024 GPUs (about 4 min);
# - scale_32k_scenario (label "xl", left out of `make test`'s preset and run by `make test-xl`,
#   which .ci/run calls after `make test`): the 32,768-device fat-tree (about 6 min on 2 cores).
# Both are left out of the sanitizer build.
set -euo pipefail
orrery=$1
mpirun=$2
root=$3
shift 3
if [[ $# -eq 0 ]]; then
  echo "usage: $0 ORRERY MPIRUN ROOT SCENARIO:MODEL..." >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for run in "$@"; do
  name=${run%%:*}
  scenario=$root/configs/scenarios/$name.yaml
  model=network.model=${run##*:}
  "$orrery" --log-level error run "$scenario" --set "$model" --summary-json "$work/one.json" > /dev/null
  "$mpirun" -np 2 "$orrery" --log-level error run "$scenario" --set "$model" --summary-json "$work/two.json" > /dev/null
  /usr/bin/python3 - "$work/one.json" "$work/two.json" "$run" <<'PY'
import json, sys
one, two = (json.load(open(path)) for path in sys.argv[1:3])
assert one["ranks"] == (32768 if "32k" in sys.argv[3] else 1024), one["ranks"]
# The auto rule's choices (docs/collectives.md): on 128 nodes the three ~29 MiB gradient buckets and
# the 11 MiB one go hierarchical, the small batch-norm reductions tree; on 4,096 nodes all tree.
algorithms = one["collective_algorithms"]
if sys.argv[3].startswith("resnet"):
    expected = ["all_reduce: tree (101)"] if "32k" in sys.argv[3] else ["all_reduce: hierarchical (4)", "all_reduce: tree (97)"]
    assert algorithms == expected, algorithms
else:
    # The generated jobs (workload.llm): sequence parallelism and the distributed optimizer gather
    # and scatter, Mixtral's experts are reached by all-to-all; every stage's memory fits the
    # H100's 80 GB.
    kinds = {"all_gather", "all_reduce", "reduce_scatter"} | ({"all_to_all"} if "mixtral" in sys.argv[3] else set())
    assert {a.split(":")[0] for a in algorithms} == kinds, algorithms
    assert len(one["memory"]) == 8 and all(m["fits"] for m in one["memory"]), one["memory"]
assert one["step_time_s"] > one["compute_s"] > 0, one
for key in ("wall_s", "simulate_wall_s", "engine_processes", "processes", "partition", "windows", "windows_per_simulated_s", "events"):
    one.pop(key, None)
    two.pop(key, None)
assert one == two, "summaries differ between -np 1 and -np 2"
print(f"ok   {sys.argv[3]}: step {one['step_time_s']:.6f} s on 1 and 2 processes")
PY
done
