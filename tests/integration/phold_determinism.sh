#!/usr/bin/env bash
# The same PHOLD model gives the identical event history (hash and event count) run sequentially
# and under mpirun -np 1, 2 and 4, with block and round-robin partitions (DESIGN.md invariant 2).
set -euo pipefail
orrery=$1
mpirun=$2
args=(phold --lps 512 --start-events 8 --remote 0.3 --lookahead 0.2 --end 40 --json)

summary() {  # prints "events hash processes"
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["events"], d["history_hash"], d["processes"])'
}

reference=$("$orrery" "${args[@]}" | summary)
read -r events hash processes <<<"$reference"
echo "sequential: $events events, hash $hash"
[[ "$events" -gt 10000 ]] || { echo "too few events: $events"; exit 1; }

for np in 1 2 4; do
  for partition in block round-robin; do
    got=$(timeout 120 "$mpirun" -np "$np" "$orrery" "${args[@]}" --partition "$partition" | summary)
    read -r e h p <<<"$got"
    echo "np=$np $partition: $e events, hash $h, $p processes"
    [[ "$p" == "$np" ]] || { echo "expected $np processes, got $p"; exit 1; }
    [[ "$e" == "$events" && "$h" == "$hash" ]] || { echo "history differs from the sequential run"; exit 1; }
  done
done

# A different seed must change the history (the hash is not a constant).
other=$("$orrery" "${args[@]}" --seed 2 | summary)
[[ "$(cut -d' ' -f2 <<<"$other")" != "$hash" ]] || { echo "seed does not change the history"; exit 1; }
echo OK
