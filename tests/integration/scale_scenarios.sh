#!/usr/bin/env bash
# The shipped 1,024-device scenarios run as shipped (analytical network), and the fat-tree one with
# the flow model too, and the 32,768-device one, on one process and on two, with identical
# summaries (wall times and engine statistics aside). Label "scale": part of `make test` (ctest
# --preset release, about 4 min on 2 cores), left out of the sanitizer build.
set -euo pipefail
orrery=$1
mpirun=$2
root=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for run in resnet50-1024-fat-tree:analytical resnet50-1024-dragonfly:analytical resnet50-1024-fat-tree:flow \
  resnet50-32k-fat-tree:analytical; do
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
expected = ["all_reduce: tree (102)"] if "32k" in sys.argv[3] else ["all_reduce: hierarchical (4)", "all_reduce: tree (98)"]
assert algorithms == expected, algorithms
assert one["step_time_s"] > one["compute_s"] > 0, one
for key in ("wall_s", "simulate_wall_s", "processes", "partition", "windows", "windows_per_simulated_s", "events"):
    one.pop(key, None)
    two.pop(key, None)
assert one == two, "summaries differ between -np 1 and -np 2"
print(f"ok   {sys.argv[3]}: step {one['step_time_s']:.6f} s on 1 and 2 processes")
PY
done
