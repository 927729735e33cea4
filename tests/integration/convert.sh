#!/usr/bin/env bash
# `orrery convert ... --to chakra` (docs/chakra.md, "Writing traces"): the traces of a scenario,
# run back through Orrery's Chakra reader on the same system, give the same communication time and
# the same step time up to the rounding of kernel durations to whole microseconds (Chakra's
# duration_micros): the default ResNet-50 scenario, a send/recv ring, a collective_permute
# ring with an all-reduce over two groups, and a pipeline shift (a partial permute, whose end ranks'
# graphs differ) with an all-reduce over all ranks. Conversion is deterministic, and under mpirun -np 2
# (the processes share the ranks' files) writes the same bytes; bad invocations exit with a
# message, also in parallel.
set -uo pipefail
orrery=$1
mpirun=$2
root=$3
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3

# round_trip NAME SCENARIO [--set ...]: converts, runs both, compares the summaries.
round_trip() {
  local name=$1 scenario=$2
  shift 2
  "$orrery" --log-level warn convert "$scenario" --to chakra --out "$work/$name" "$@" > "$work/$name.convert.txt" ||
    { fail "$name: convert"; cat "$work/$name.convert.txt"; return; }
  "$orrery" --log-level warn run "$scenario" "$@" --summary-json "$work/$name.direct.json" > /dev/null ||
    { fail "$name: run"; return; }
  local groups=()
  [[ -f "$work/$name.comm_groups.json" ]] && groups=(--set "workload.chakra.comm_groups=$work/$name.comm_groups.json")
  "$orrery" --log-level warn run "$scenario" "$@" --set 'workload.programs=[]' --set "workload.chakra.prefix=$work/$name" \
    "${groups[@]}" --summary-json "$work/$name.chakra.json" > /dev/null || { fail "$name: run the converted traces"; return; }
  "$python" - "$work/$name.direct.json" "$work/$name.chakra.json" "$name" <<'PY' || fail "$name: round trip"
import json, sys
direct, chakra, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
error = chakra["step_time_s"] / direct["step_time_s"] - 1
print(f"ok   {name}: step {direct['step_time_s'] * 1e3:.4f} ms as StableHLO, {chakra['step_time_s'] * 1e3:.4f} ms "
      f"from its Chakra traces ({100 * error:+.2f}%)")
assert direct["ranks"] == chakra["ranks"]
assert abs(chakra["comm_s"] - direct["comm_s"]) <= 1e-12 + 1e-6 * direct["comm_s"], (direct["comm_s"], chakra["comm_s"])
# Rounding each kernel to whole microseconds moves it by at most 0.5 us.
assert abs(chakra["step_time_s"] - direct["step_time_s"]) <= 0.01 * direct["step_time_s"] + 2e-6, error
PY
}

round_trip resnet50 "$root/configs/scenarios/default.yaml"
grep -q "compute per step, summed over ranks" "$work/resnet50.convert.txt" || fail "convert reports the rounding"
"$python" -c "import json; g = json.load(open('$work/resnet50.comm_groups.json')); assert g == {'1': [0, 1, 2, 3]}, g" ||
  fail "communicator groups of the default scenario"

cp "$root/tests/data/stablehlo/send_recv_ring.mlir" "$work/ring.mlir"
cp "$root/tests/data/stablehlo/permute_grouped_all_reduce.mlir" "$work/permute.mlir"
cp "$root/tests/data/stablehlo/pipeline_shift.mlir" "$work/shift.mlir"
for program in ring permute shift; do
  printf 'hardware: H100\nworkload:\n  programs:\n    - file: %s.mlir\n' "$program" > "$work/$program.yaml"
  round_trip "$program" "$work/$program.yaml"
done
"$python" -c "import json; g = json.load(open('$work/permute.comm_groups.json')); assert g == {'1': [0, 2], '2': [1, 3]}, g" ||
  fail "communicator groups of the two all-reduce groups"

# A StableHLO file converts as a one-program scenario; the same program gives the same bytes.
"$orrery" --log-level warn convert "$work/permute.mlir" --to chakra --out "$work/direct" --set hardware=H100 > /dev/null ||
  fail "convert a StableHLO file"
for r in 0 1 2 3; do
  cmp -s "$work/direct.$r.et" "$work/permute.$r.et" || fail "rank $r: the file and its scenario give different traces"
done
"$orrery" --log-level warn convert "$root/configs/scenarios/default.yaml" --to chakra --out "$work/again" > /dev/null
for r in 0 1 2 3; do
  cmp -s "$work/again.$r.et" "$work/resnet50.$r.et" || fail "rank $r: converting twice gives different traces"
done
timeout 300 "$mpirun" -np 2 "$orrery" --log-level warn convert "$root/configs/scenarios/default.yaml" --to chakra \
  --out "$work/np2" > "$work/np2.txt" || fail "convert under mpirun -np 2"
for r in 0 1 2 3; do
  cmp -s "$work/np2.$r.et" "$work/resnet50.$r.et" || fail "rank $r: -np 2 writes a different trace than -np 1"
done
cmp -s "$work/np2.comm_groups.json" "$work/resnet50.comm_groups.json" || fail "-np 2 writes different groups"
[[ $(grep -c "^wrote 4 rank traces" "$work/np2.txt") == 1 ]] || fail "-np 2 reports once"
cmp -s <(tail -1 "$work/np2.txt") <(tail -1 "$work/resnet50.convert.txt") || fail "-np 2 sums the statistics"
echo "ok   conversion is deterministic and the same under -np 2; a program file converts as its scenario"

# Bad invocations.
expect "unknown format" 2 "--to hlo: the only output format is chakra" -- \
  "$orrery" convert "$work/ring.yaml" --to hlo --out "$work/x"
expect "missing output directory" 2 "directory '$work/absent' does not exist" -- \
  "$orrery" convert "$work/ring.yaml" --to chakra --out "$work/absent/x"
expect "missing input" 2 "error: $work/absent.mlir: workload.programs[0].file: cannot open" -- \
  "$orrery" convert "$work/absent.mlir" --to chakra --out "$work/x"
printf 'workload:\n  chakra: {prefix: %s}\n' "$work/ring" > "$work/chakra.yaml"
expect "input already Chakra" 2 "the workload is already Chakra traces" -- \
  "$orrery" convert "$work/chakra.yaml" --to chakra --out "$work/x"
expect "bad override" 2 "hardware" -- \
  "$orrery" convert "$work/ring.yaml" --to chakra --out "$work/x" --set hardware=NoSuchGPU
expect "missing input under -np 2" 2 "cannot open" -- \
  "$mpirun" -np 2 "$orrery" convert "$work/absent.mlir" --to chakra --out "$work/x"

exit $((failures > 0))
