#!/usr/bin/env bash
# The GPU ground truth of validation/gpu (issue 7): Orrery reads every StableHLO export there (the
# single-device training steps as one-partition programs, the sharded lowerings as pre-partitioning
# modules with their partition counts), costs the ResNet-50 export's convolutions from the H200
# table's measured rows, checks that the H100 run's exports are the same text, costs XLA's fused
# kernels alone (gpu_fusions_check.py), checks its tree reductions against XLA's compiled reductions
# (gpu_reductions_check.py), and
# tools/validate_gpu.py (`make validate`'s gpu step) writes its page.
set -uo pipefail
orrery=$1
source_dir=$2
source "$(dirname "$0")/expect.sh"
data=$source_dir/validation/gpu/data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for export in "$data"/programs/*.stablehlo.mlir.xz; do
  name=$(basename "$export" .stablehlo.mlir.xz)
  xz -dc "$export" > "$work/$name.mlir"
  expect "reads_$name" 0 "1 partition(s), 1 replica(s)" -- "$orrery" inspect --strict "$work/$name.mlir"
done
# The H100 run kept only the SHA-256 sums of its exports: they must be the H200 run's text.
if (cd "$work" && sed "s/\.stablehlo\.mlir$/.mlir/" "$data/h100/programs/stablehlo.sha256" | sha256sum --quiet -c -); then
  echo "ok   h100_exports_are_the_h200_exports"
else
  fail "h100_exports_are_the_h200_exports: validation/gpu/data/h100/programs/stablehlo.sha256 does not match"
fi
/usr/bin/python3 "$(dirname "$0")/gpu_fusions_check.py" "$orrery" "$data/fusions" "$work" ||
  fail "fusions (gpu_fusions_check.py, above)"
/usr/bin/python3 "$(dirname "$0")/gpu_reductions_check.py" "$orrery" "$data/reductions" "$work" ||
  fail "reductions (gpu_reductions_check.py, above)"
count=0
for export in "$data"/sharded/*.pre.mlir.xz; do
  name=$(basename "$export" .pre.mlir.xz)
  mesh=${name#*.}
  devices=$(echo "$mesh" | grep -o '[0-9]*' | awk '{p = (NR == 1 ? $1 : p * $1)} END {print p}')
  [[ $mesh == dp2tp4 ]] && devices=8
  xz -dc "$export" > "$work/sharded.mlir"
  expect "reads_$name" 0 "$devices partition(s), 1 replica(s), form pre-partitioning" \
    -- "$orrery" inspect "$work/sharded.mlir"
  count=$((count + 1))
done
[[ $count -eq 21 ]] && echo "ok   sharded_exports_21" || fail "sharded_exports: $count of 21"

# Orrery's SPMD partitioner on every sharded export (tools/validate_spmd.py, `make validate`'s spmd
# step): every op has a rule (none runs on whole operands), on the data-parallel meshes the
# gradient reductions are XLA's to within 1%, and on the Llama FSDP meshes the gathered and reduced
# bytes are XLA's to within 2%.
shared=${ORRERY_SHARED_DATA:-$source_dir/../shared/data}
if /usr/bin/python3 "$source_dir/tools/validate_spmd.py" --orrery "$orrery" --data "$shared" --root "$source_dir" \
    > "$work/spmd.md"; then
  /usr/bin/python3 - "$work/spmd.md" <<'PY' && echo "ok   spmd_partitioner_vs_xla" || fail "spmd_partitioner_vs_xla"
import sys
rows = [l.split("|")[1:-1] for l in open(sys.argv[1]) if l.startswith("| llama") or l.startswith("| resnet")]
assert len(rows) == 21, len(rows)
for r in rows:
    cells = [c.strip() for c in r]
    assert cells[10] == "none", cells
    if cells[1].startswith("dp") and not cells[1].startswith("dp2"):
        assert abs(float(cells[7]) - 1.0) <= 0.01, cells
    if cells[1].startswith("fsdp") and cells[0].startswith("llama"):
        assert abs(float(cells[4]) - 1.0) <= 0.02 and abs(float(cells[7]) - 1.0) <= 0.02, cells
PY
else
  fail "spmd_partitioner_vs_xla: tools/validate_spmd.py failed"
fi

# Every convolution of the ResNet-50 export finds its own measured row: with a table of the
# convolution rows alone, each of the 158 convolution kernels costs exactly one shape's measured
# time (an interpolated or scaled estimate would not).
grep -E '^(hardware|H200,convolution)' "$source_dir/configs/tables/H200_kernels.csv" > "$work/conv_table.csv"
"$orrery" --log-level error inspect "$work/resnet50.mlir" --cost --hardware H200 --estimator table \
  --table "$work/conv_table.csv" --top 5000 > "$work/resnet50.txt" || fail "resnet50_table_cost: inspect failed"
if python3 - "$work/resnet50.txt" "$work/conv_table.csv" <<'PY'
import sys
by_shape = {}  # rows of one shape (a 1x1 layer's forward and another's backward-data) are averaged
for line in open(sys.argv[2]).read().splitlines()[1:]:
    f = line.split(",")
    by_shape.setdefault(f[4], []).append(float(f[5]) * 1e-6)
times = [sum(v) / len(v) for v in by_shape.values()]
kernels = [line.split() for line in open(sys.argv[1]) if "stablehlo.convolution," in line]
assert len(kernels) == 158, len(kernels)
for k in kernels:
    each = float(k[0]) / int(k[1])
    assert any(abs(each - t) <= 1e-4 * t for t in times), ("no measured row gives", k)  # 6 digits printed
print("ok   resnet50_convolutions_from_the_table (158 kernels, each a measured row)")
PY
then :; else fail "resnet50_convolutions_from_the_table"; fi

# Each traced step's span on the GPU (trace_summary.py: the kernels split at the two longest idle gaps)
# holds the step's kernels nearly back to back and is shorter than the host-clock step.
if /usr/bin/python3 - "$data" "$source_dir/validation/gpu" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[2])
import trace_summary
for folder in ("programs", "h100/programs"):
    for name in ("llama-60m", "llama-250m", "llama-900m", "resnet18", "resnet50"):
        base = os.path.join(sys.argv[1], folder, name)
        s = trace_summary.summarise(base + ".trace.json.xz")
        host = json.load(open(base + ".json"))["median_s"]
        assert 0.97 * s["busy_s_per_step"] <= s["gpu_step_s"] <= 1.1 * s["busy_s_per_step"], (base, s["gpu_step_s"])
        assert s["gpu_step_s"] < host, (base, s["gpu_step_s"], host)
        # The asynchronous loop's time per step (async_steps.py, a later run) is the GPU's: the traced
        # span within 5%, and below the same run's synchronous steps.
        timed = json.load(open(os.path.join(sys.argv[1], "async", "h100" if "h100" in folder else "h200",
                                            name + ".async.json")))
        assert abs(timed["async_per_step_s"] / s["gpu_step_s"] - 1) <= 0.05, (base, timed["async_per_step_s"])
        assert timed["async_per_step_s"] < timed["sync_median_s"], base
print("ok   traced_steps_on_the_gpu (10 traces: each step's kernels back to back, within the host-clock step, "
      "and the asynchronous steps' time)")
PY
then :; else fail "traced_steps_on_the_gpu"; fi

# The page: its step tables, and a small-kernel row per GPU and program (10) with a launch overhead.
page=$(timeout 120 python3 "$source_dir/tools/validate_gpu.py" --orrery "$orrery" --root "$source_dir" 2>&1)
if [[ $? -eq 0 && $page == *"## Step times"* ]] &&
  [[ $(grep -Ec "^\| H[12]00 \| (llama|resnet)[^|]* \| [0-9]+ \| [0-9.]+ \| [0-9]+% \| [0-9.]+ \| [0-9]+ \| [0-9]+ \| [0-9.]+ \|$" <<< "$page") -eq 10 ]]; then
  echo "ok   validate_gpu_page"
else
  fail "validate_gpu_page"
  echo "$page" | tail -20
fi
exit $((failures > 0))
