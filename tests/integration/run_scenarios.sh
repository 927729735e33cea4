#!/usr/bin/env bash
# orrery run and sweep end to end: the default scenario's summary has the documented fields, is
# identical for mpirun -np 1 and -np 2 (wall times aside), a sweep writes the same CSV for any
# process count, and bad input (unwritable output paths included) fails clearly.
set -uo pipefail
orrery=$1
mpirun=$2
root=$3
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scenario=$root/configs/scenarios/default.yaml

# Same scenario, short: fewer chunks keep the test quick.
"$orrery" --log-level warn run "$scenario" --summary-json "$work/one.json" > "$work/one.txt" || { echo "FAIL default run"; cat "$work/one.txt"; exit 1; }
timeout 300 "$mpirun" -np 2 "$orrery" --log-level warn run "$scenario" --summary-json "$work/two.json" > "$work/two.txt" || { echo "FAIL -np 2 run"; exit 1; }
/usr/bin/python3 - "$work/one.json" "$work/two.json" <<'PY' || failures=$((failures + 1))
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:3])
for key in ["step_time_s", "ranks", "compute_s", "comm_s", "exposed_comm_s", "idle_s", "events", "wall_s"]:
    assert key in one, f"summary lacks {key}"
assert one["ranks"] == 4 and one["step_time_s"] > 0 and one["compute_s"] > 0, one
assert one["spmd_partitioned"] == [], one["spmd_partitioned"]
assert one["compute_s"] <= one["step_time_s"] * 1.000001
assert two["processes"] == 2 and one["processes"] == 1
# One object per process: their events and LPs add up to the run's, and each has its times.
assert [p["process"] for p in two["engine_processes"]] == [0, 1], two["engine_processes"]
assert sum(p["events"] for p in two["engine_processes"]) == two["events"]
assert sum(p["remote_sent"] for p in two["engine_processes"]) == sum(p["remote_received"] for p in two["engine_processes"])
assert all(p["wall_s"] >= p["event_s"] >= 0 and p["sync_s"] >= 0 and p["lps"] > 0 for p in two["engine_processes"])
assert len(one["engine_processes"]) == 1 and one["engine_processes"][0]["events"] == one["events"]
for key in ("wall_s", "simulate_wall_s", "engine_processes", "processes", "partition", "windows", "windows_per_simulated_s", "events"):
    one.pop(key); two.pop(key)
assert one == two, "summary differs between -np 1 and -np 2"
print("ok   default scenario: same summary for -np 1 and -np 2, step", one["step_time_s"])
PY
grep -q "step time" "$work/one.txt" || { echo "FAIL text summary"; failures=$((failures + 1)); }
grep -Eq "^engine: .*; at most [1-9][0-9]* events pending on a process$" "$work/one.txt" ||
  { echo "FAIL text summary: no peak pending-event count on the engine line"; failures=$((failures + 1)); }
grep -Eq "^engine load: events per process [0-9]+ min, [0-9]+ mean, [0-9]+ max \([0-9.]+ x the mean\); busiest process [01]: " "$work/two.txt" ||
  { echo "FAIL text summary: no engine load line on two processes"; failures=$((failures + 1)); }
! grep -q "^engine load:" "$work/one.txt" || { echo "FAIL text summary: engine load line on one process"; failures=$((failures + 1)); }

# The job script for workstations and interactive allocations gives the same summary.
ORRERY=$orrery timeout 300 "$root/jobs/run-mpirun.sh" 2 "$scenario" --summary-json "$work/job.json" > /dev/null 2>&1 ||
  { echo "FAIL jobs/run-mpirun.sh"; failures=$((failures + 1)); }
/usr/bin/python3 - "$work/one.json" "$work/job.json" <<'PY' || failures=$((failures + 1))
import json, sys
one, job = (json.load(open(p)) for p in sys.argv[1:3])
assert job["processes"] == 2, job["processes"]
for key in ("wall_s", "simulate_wall_s", "engine_processes", "processes", "partition", "windows", "windows_per_simulated_s", "events"):
    one.pop(key); job.pop(key)
assert one == job, "jobs/run-mpirun.sh summary differs from the -np 1 run"
print("ok   jobs/run-mpirun.sh 2: same summary")
PY
expect job_usage 2 "usage: jobs/run-mpirun.sh [N] SCENARIO.yaml" -- "$root/jobs/run-mpirun.sh" 2
for script in "$root"/jobs/*.sbatch "$root"/jobs/*.sh; do
  bash -n "$script" || { echo "FAIL syntax of $script"; failures=$((failures + 1)); }
done

# sweep: 2 x 2 points, CSV identical for 1 and 2 processes (wall_s aside).
"$orrery" --log-level warn sweep "$scenario" --vary hardware=A100_40GB,H100 --vary network.model=analytical,flow \
  --out "$work/sweep1.csv" > /dev/null || { echo "FAIL sweep"; exit 1; }
timeout 300 "$mpirun" -np 2 "$orrery" --log-level warn sweep "$scenario" --vary hardware=A100_40GB,H100 \
  --vary network.model=analytical,flow --out "$work/sweep2.csv" > /dev/null || { echo "FAIL sweep -np 2"; exit 1; }
/usr/bin/python3 - "$work/sweep1.csv" "$work/sweep2.csv" <<'PY' || failures=$((failures + 1))
import csv, sys
a, b = ([dict(r) for r in csv.DictReader(open(p))] for p in sys.argv[1:3])
assert len(a) == 4, a
for row in a + b:
    row.pop("wall_s")
assert a == b, "sweep CSV differs between 1 and 2 processes"
assert all(r["error"] == "" for r in a), a
h100 = [float(r["step_time_s"]) for r in a if r["hardware"] == "H100"]
a100 = [float(r["step_time_s"]) for r in a if r["hardware"] == "A100_40GB"]
assert max(h100) < min(a100), "H100 should be faster than A100"
print("ok   sweep: 4 points, same CSV for 1 and 2 processes")
PY

expect bad_key 2 "system.scale_up.bandwith_GBps: unknown key" -- "$orrery" run "$scenario" --set system.scale_up.bandwith_GBps=1
expect missing_scenario 2 "cannot read '/nonexistent.yaml'" -- "$orrery" run /nonexistent.yaml
expect missing_program 2 "workload.programs[0].file" -- "$orrery" run "$scenario" --set workload.programs.0.file=/nonexistent.mlir
expect missing_hint 2 "carries no licence" -- "$orrery" run "$root/configs/scenarios/llama3-100m-4gpu.yaml" --set workload.programs.0.file=/nonexistent.mlir
# A pre-partitioning export (shardings, no collectives) is partitioned before the run: 8 ranks with
# the collectives its shardings need, the same summary for -np 1 and -np 2.
pre_spmd=$root/configs/scenarios/llama3-100m-8gpu-pre-spmd.yaml
expect missing_hint_pre_spmd 2 "carries no licence" -- "$orrery" run "$pre_spmd" --set workload.programs.0.file=/nonexistent.mlir
if [[ -f "$root/../shared/data/stablehlo/hespas_workloads/llama3-100m.pre-spmd-8dev.mlir" ]]; then
  "$orrery" --log-level warn run "$pre_spmd" --summary-json "$work/pre1.json" > /dev/null &&
    timeout 300 "$mpirun" -np 2 "$orrery" --log-level warn run "$pre_spmd" --summary-json "$work/pre2.json" > /dev/null ||
    { echo "FAIL pre-SPMD scenario run"; failures=$((failures + 1)); }
  /usr/bin/python3 - "$work/pre1.json" "$work/pre2.json" <<'PY' || failures=$((failures + 1))
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:3])
assert one["ranks"] == 8 and one["comm_s"] > 0, one
spmd = one["spmd_partitioned"]
assert len(spmd) == 1 and spmd[0]["devices"] == 8 and spmd[0]["replicated_ops"] == {}, spmd
assert spmd[0]["inserted_collectives"]["all_gather"]["count"] == 100, spmd
for key in ("wall_s", "simulate_wall_s", "engine_processes", "processes", "partition", "windows", "windows_per_simulated_s", "events"):
    one.pop(key); two.pop(key)
assert one == two, "pre-SPMD summary differs between -np 1 and -np 2"
print("ok   pre-SPMD scenario: partitioned, communicates, same summary for -np 1 and -np 2, step", one["step_time_s"])
PY
else
  echo "skip pre-SPMD scenario: ../shared/data/stablehlo/hespas_workloads absent"
fi
cat > "$work/permuted.mlir" <<'MLIR'
module @m attributes {mhlo.num_partitions = 4 : i32} {
  func.func @main(%x: tensor<8xf32> {mhlo.sharding = "{devices=[4]0,2,1,3}"}) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}
MLIR
expect unsupported_sharding 1 "permuted.mlir:2:" -- "$orrery" inspect "$work/permuted.mlir" --partition
expect unsupported_sharding_run 1 "the explicit device order" -- "$orrery" run "$scenario" --set workload.programs.0.file="$work/permuted.mlir" --set workload.programs.0.ranks=all
cat > "$work/whole.mlir" <<'MLIR'
module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["b"=4]>
  func.func @main(%x: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {}]>}) -> tensor<8x6xf32> {
    %c = stablehlo.custom_call @my_kernel(%x) : (tensor<8x6xf32>) -> tensor<8x6xf32>
    return %c : tensor<8x6xf32>
  }
}
MLIR
expect partition_fallback_warning 0 "no SPMD partitioning rule run on whole operands on every device (their operands gathered; docs/stablehlo.md, \"SPMD partitioning\"): stablehlo.custom_call x1" -- "$orrery" run "$scenario" --set workload.programs.0.file="$work/whole.mlir"
expect wrong_ranks 2 "runs on 4 devices" -- "$orrery" run "$scenario" --set workload.programs.0.ranks=0-1
expect no_hardware 2 "unknown hardware preset" -- "$orrery" run "$scenario" --set hardware=Z100
expect forced_algorithm 2 "system.collectives.all_reduce = in_switch cannot serve a group of 4 members: system.scale_up.in_switch_reduction is false" -- "$orrery" run "$scenario" --set system.collectives.all_reduce=in_switch
expect rescaled 0 "x 6 ranks" -- "$orrery" run "$scenario" --set workload.programs.0.replicas=6 --set network.topology='{kind: none}' --set system.devices_per_node=6
expect rescaled_wrong_ranks 2 "is rescaled to 6 replicas but is given 4 ranks" -- "$orrery" run "$scenario" --set workload.programs.0.replicas=6 --set workload.programs.0.ranks=0-3 --set network.topology='{kind: none}' --set system.devices_per_node=6
expect mpi_bad_key 2 "unknown key" -- "$mpirun" -np 2 "$orrery" run "$scenario" --set system.bogus=1
expect time_overflow 1 "simulated time overflow" -- "$orrery" run "$scenario" --set system.collective_launch_ns=1e30
expect time_overflow_np2 1 "simulated time overflow" -- "$mpirun" -np 2 "$orrery" run "$scenario" --set system.jitter_cv=1e300
# A flow-model transfer whose finish lies past the engine's range is the overflow, not a deadlock.
expect flow_time_overflow_np2 1 "simulated time overflow: no events are left but 16 transfers are still in the network" -- "$mpirun" -np 2 "$orrery" run "$scenario" --set 'network.topology.spec.bandwidth=[1e-11]'
expect scale_up_ignored 0 "system.scale_up.bandwidth_GBps and latency_ns do not apply" -- "$orrery" run "$scenario" --set system.scale_up.bandwidth_GBps=1
expect replicas_range 2 "replicas: 4000000000 is out of range (must be 0 to 67108864)" -- "$orrery" run "$scenario" --set workload.programs.0.replicas=4000000000
expect system_too_small 2 "the system has 4 devices (1 nodes x 4 devices) but the workload needs 1000000 ranks" -- "$orrery" run "$scenario" --set workload.programs.0.replicas=1000000
expect straggler_twice 2 "system.stragglers: rank 1 is listed twice" -- "$orrery" run "$scenario" --set "system.stragglers=[{rank: 1}, {rank: 1, slowdown_percent: 20}]"
expect sweep_unknown_preset 2 "sweep point 1 (hardware=Z100): hardware: unknown hardware preset 'Z100'" -- "$orrery" sweep "$scenario" --vary hardware=A100_40GB,Z100 --out "$work/x.csv"
expect end_before_a_step 0 "step time    none: no step completed" -- "$orrery" run "$scenario" --set simulation.end_time_s=0.001
"$orrery" --log-level error run "$scenario" --set simulation.end_time_s=0.001 --summary-json "$work/short.json" > /dev/null
/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["step_time_s"] is None and s["step_end_s"] == [] and any("before 4 ranks finished" in w for w in s["warnings"]), s' "$work/short.json" &&
  echo "ok   end_before_a_step_json" || fail "end_before_a_step_json: step_time_s should be null"
expect stopped_inside_a_step 0 "top compute ops (per rank per completed step, with the work of the unfinished step 2)" -- "$orrery" run "$scenario" --set workload.steps=3 --set simulation.end_time_s=0.15
"$orrery" --log-level error sweep "$scenario" --vary simulation.end_time_s=0.001,1 --out "$work/short.csv" > /dev/null
/usr/bin/python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert r[0]["step_time_s"] == "" and "no step completed" in r[0]["error"] and float(r[1]["step_time_s"]) > 0 and r[1]["steps"] == "1", r' "$work/short.csv" &&
  echo "ok   end_before_a_step_sweep" || fail "end_before_a_step_sweep: the point should carry an error"
expect print_scenario 0 "hardware: A100_40GB" -- "$orrery" run "$scenario" --print-scenario
expect bad_vary 2 "--vary hardware: expected key=value1,value2" -- "$orrery" sweep "$scenario" --vary hardware --out "$work/x.csv"
expect vary_twice 2 "--vary hardware: the key is given to two --vary options" -- "$orrery" sweep "$scenario" --vary hardware=H100 --vary hardware=B200 --out "$work/x.csv"
expect vary_twice_spelled_apart 2 "--vary workload.programs.0.replicas: the key is given to two --vary options (as workload.programs.00.replicas and workload.programs.0.replicas)" -- "$orrery" sweep "$scenario" --vary workload.programs.00.replicas=4 --vary workload.programs.0.replicas=8 --out "$work/x.csv"
expect vary_nested 2 "--vary network.topology and --vary network.topology.nodes: one key is inside the other" -- "$orrery" sweep "$scenario" --vary 'network.topology={kind: switch}' --vary network.topology.nodes=1,2 --out "$work/x.csv"
expect vary_replaces_set 2 "--set system.chunks=2 and --vary system: the --vary values replace what --set gives" -- "$orrery" sweep "$scenario" --set system.chunks=2 --vary 'system={chunks: 4}' --out "$work/x.csv"
expect vary_inside_set 0 "sweep: 2 points written" -- "$orrery" sweep "$scenario" --set 'network.topology={kind: switch, nodes: 4}' --vary network.topology.nodes=1,4 --out "$work/x.csv"
# An apostrophe inside a value is not a quote; a quoted scalar keeps its commas.
"$orrery" --log-level error sweep "$scenario" --vary "output.summary_json=don't.json,'a,b.json'" --out "$work/quotes.csv" > /dev/null
/usr/bin/python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert [x["output.summary_json"] for x in r] == ["don'"'"'t.json", "'"'"'a,b.json'"'"'"], r' "$work/quotes.csv" &&
  echo "ok   vary_quotes" || fail "vary_quotes: an apostrophe or a quoted comma was misread"
expect vary_value_named_as_vary 2 "--vary system.chunks=999: error: sweep point 1 (system.chunks=999): system.chunks: 999 is out of range" -- "$orrery" sweep "$scenario" --vary system.chunks=2,999 --out "$work/x.csv"
expect vary_unbalanced 2 "--vary hardware={H100: unbalanced brackets" -- "$orrery" sweep "$scenario" --vary 'hardware={H100' --out "$work/x.csv"
# Commas inside a YAML mapping do not split a --vary value.
"$orrery" --log-level error sweep "$scenario" --vary 'network.topology={kind: switch, nodes: 1},{kind: none}' \
  --vary network.model=analytical --out "$work/mappings.csv" > /dev/null
/usr/bin/python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert [x["network.topology"] for x in r] == ["{kind: switch, nodes: 1}", "{kind: none}"] and all(x["error"] == "" for x in r), r' "$work/mappings.csv" &&
  echo "ok   vary_mapping_values" || fail "vary_mapping_values: a mapping value was split at its commas"
expect directory_scenario 2 "cannot read '$work': it is a directory" -- "$orrery" run "$work"
expect all_to_all_forced 2 "system.collectives.all_to_all: an all-to-all is decomposed only as direct sends" -- "$orrery" run "$scenario" --set system.collectives.all_to_all=ring
printf 'system:\n  collectives: {all_to_all: tree}\n' > "$work/a2a.yaml"
expect all_to_all_forced_at_its_line 2 "$work/a2a.yaml:2:29: error: system.collectives.all_to_all" -- "$orrery" run "$work/a2a.yaml"
expect chunks_bound 2 "system.chunks: 300 is out of range (must be 1 to 256)" -- "$orrery" run "$scenario" --set system.chunks=300

# A file named in a scenario that cannot be read is reported at the line that names it, with how a
# relative path was resolved; a hardware path is resolved like every other path.
printf 'hardware: A100_40GB\nworkload:\n  programs:\n    - file: models/missing.mlir\n' > "$work/located.yaml"
expect program_at_its_line 2 "$work/located.yaml:4:13: error: workload.programs[0].file: cannot open '$work/models/missing.mlir'" -- "$orrery" run "$work/located.yaml"
expect program_relative_note 2 "note: 'models/missing.mlir' is relative, so it was resolved to '$work/models/missing.mlir' (against the directory of the scenario file)" -- "$orrery" run "$work/located.yaml"
expect program_at_its_line_np2 2 "$work/located.yaml:4:13: error: workload.programs[0].file" -- "$mpirun" -np 2 "$orrery" run "$work/located.yaml"
printf 'hardware: presets/mine.yaml\nworkload:\n  programs:\n    - file: %s\n' "$root/configs/workloads/resnet50_train_step_4dev_b1024.mlir" > "$work/located_hw.yaml"
expect hardware_at_its_line 2 "$work/located_hw.yaml:1:11: error: hardware: cannot read '$work/presets/mine.yaml'" -- "$orrery" run "$work/located_hw.yaml"
mkdir -p "$work/presets" && cp "$root/configs/hardware/A100_40GB.yaml" "$work/presets/mine.yaml"
expect hardware_beside_the_scenario 0 "hardware   A100_40GB x 4 ranks" -- "$orrery" run "$work/located_hw.yaml" --set network.topology='{kind: none}'
expect table_at_its_line 2 "--set compute.table=/nonexistent.csv: error: compute.table: cannot read '/nonexistent.csv'" -- "$orrery" run "$scenario" --set compute.default=table --set compute.table=/nonexistent.csv

# Output paths are checked before anything is simulated: the error comes without a summary.
unwritable() {
  local name=$1
  shift
  expect "$name" 2 "cannot write" -- "$@"
  if timeout 60 "$@" 2>&1 | grep -q "step time\|sweep:"; then
    fail "$name: simulated before reporting the unwritable path"
  fi
}
unwritable json_no_directory "$orrery" run "$scenario" --summary-json /nonexistent/s.json
unwritable json_is_directory "$orrery" run "$scenario" --summary-json "$work"
unwritable json_from_scenario "$orrery" run "$scenario" --set output.summary_json=/nonexistent/s.json
unwritable csv_no_directory "$orrery" sweep "$scenario" --vary hardware=A100_40GB --out /nonexistent/x.csv
unwritable json_no_directory_np2 "$mpirun" -np 2 "$orrery" run "$scenario" --summary-json /nonexistent/s.json

[[ ${failures:-0} -eq 0 ]] && echo OK
exit "${failures:-0}"
