#!/usr/bin/env bash
# `orrery traffic` gives identical results (every field but the run statistics and partition)
# sequentially and under mpirun -np 1, 2 and 4, for the flow and analytical models in both modes.
set -euo pipefail
orrery=$1
mpirun=$2

results() {  # the JSON without the per-run statistics, one line
  python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("run"); d.pop("partition"); print(json.dumps(d, sort_keys=True))'
}

check() {
  local name=$1
  shift
  local reference
  reference=$("$orrery" traffic "$@" --json | results)
  echo "$name sequential: $reference" | cut -c1-200
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["messages_delivered"] > 0, d' "$reference"
  for np in 1 2 4; do
    local got
    got=$(timeout 120 "$mpirun" -np "$np" "$orrery" traffic "$@" --json | results)
    if [[ "$got" != "$reference" ]]; then
      echo "$name: np=$np differs from the sequential run:"
      echo "$got"
      exit 1
    fi
    echo "$name np=$np: identical"
  done
}

dragonfly='{kind: dragonfly, p: 2, a: 4, h: 2, g: 9}'
check flow_permutation --topology "$dragonfly" --set system.devices_per_node=2 --model flow \
  --pattern random_permutation --bytes 100000
check flow_load --topology "$dragonfly" --set system.devices_per_node=1 --model flow --routing valiant \
  --pattern uniform_random --load 0.5 --bytes 16384 --duration-us 10
check analytical_all_to_all --topology '{kind: fat_tree, k: 4, levels: 2}' --set system.devices_per_node=2 \
  --model analytical --pattern all_to_all --bytes 65536
check flow_ring_block --topology '{kind: torus, dims: [4, 4]}' --set system.devices_per_node=1 --model flow \
  --pattern ring --bytes 1000000 --partition block
echo OK
