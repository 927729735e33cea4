#!/usr/bin/env bash
# The HDF5 run trace (docs/trace.md): identical datasets for mpirun -np 1, 2 and 4; tables that
# agree with the run's summary; each detail level writing what it says; a send/recv program; a run
# that fails leaving its trace marked incomplete; bad trace paths and sweeps refused; and
# tools/trace_report.py reading it all (text, plots, Perfetto JSON) and refusing what it cannot read.
set -uo pipefail
orrery=$1
mpirun=$2
root=$3
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scenario=$root/configs/scenarios/default.yaml
python=/usr/bin/python3
report=$root/tools/trace_report.py

# --- the default scenario at every detail, on 1, 2 and 4 processes -------------------------------
"$orrery" --log-level warn run "$scenario" --trace "$work/one.h5" --detail transfers --summary-json "$work/one.json" \
  > /dev/null || { echo "FAIL run with --trace"; exit 1; }
for n in 2 4; do
  timeout 300 "$mpirun" -np $n "$orrery" --log-level warn run "$scenario" --trace "$work/np$n.h5" --detail transfers \
    > /dev/null || { echo "FAIL -np $n run with --trace"; exit 1; }
done
for detail in summary collectives ops; do
  "$orrery" --log-level warn run "$scenario" --set output.trace="$work/$detail.h5" --set output.detail=$detail \
    > /dev/null || fail "run with output.detail=$detail"
done
"$python" - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
import h5py, numpy as np
work = sys.argv[1]
one = h5py.File(f"{work}/one.h5", "r")
for n in (2, 4):
    other = h5py.File(f"{work}/np{n}.h5", "r")
    assert set(one) == set(other), (set(one), set(other))
    for name in one:
        assert one[name].dtype == other[name].dtype, name
        assert np.array_equal(one[name][:], other[name][:]), f"dataset {name} differs between -np 1 and -np {n}"
    for key in one.attrs:
        if key == "scenario":  # the same but for the trace's own path
            strip = lambda text: [line for line in text.decode().splitlines() if not line.strip().startswith("trace:")]
            assert strip(one.attrs[key]) == strip(other.attrs[key]), "the scenario attribute differs"
        elif key not in ("processes", "wall_s"):
            assert one.attrs[key] == other.attrs[key], f"attribute {key} differs between -np 1 and -np {n}"
    assert int(other.attrs["processes"]) == n and int(other.attrs["complete"]) == 1
print("ok   trace datasets identical for -np 1, 2 and 4")

# The tables agree with the summary of the same run.
summary = json.load(open(f"{work}/one.json"))
assert one.attrs["schema"] == b"orrery-trace" and int(one.attrs["schema_version"]) == 1
assert int(one.attrs["complete"]) == 1 and one.attrs["detail"] == b"transfers"
assert float(one.attrs["step_time_s"]) == summary["step_time_s"]
assert int(one.attrs["ranks"]) == summary["ranks"] == len(one["ranks"])
assert b"hardware: A100_40GB" in one.attrs["scenario"]
steps = one["steps"][:]
ops = one["ops"][:]
strings = one["strings"][:]
for rank in range(summary["ranks"]):
    mine = ops[ops["rank"] == rank]
    assert len(mine) > 0
    # Kernels run one at a time, in order, and their times add up to the step's compute time.
    assert np.all(mine["end_ps"] >= mine["start_ps"]) and np.all(mine["start_ps"][1:] >= mine["end_ps"][:-1])
    row = steps[steps["rank"] == rank][0]
    assert int((mine["end_ps"] - mine["start_ps"]).sum()) == int(row["compute_ps"]), rank
    assert abs(row["compute_ps"] * 1e-12 - summary["compute_s"]) <= 1e-9 * summary["compute_s"]
    assert abs(row["exposed_comm_ps"] * 1e-12 - summary["exposed_comm_s"]) <= 1e-9 * summary["exposed_comm_s"]
    assert abs(row["comm_ps"] * 1e-12 - summary["comm_s"]) <= 1e-9 * summary["comm_s"]
assert int(steps["end_ps"].max()) == round(summary["step_time_s"] * 1e12)
collectives = one["collectives"][:]
assert len(collectives) > 0
kinds = {strings[k] for k in collectives["kind"]}
assert kinds == {b"all_reduce"}, kinds
assert {strings[a] for a in collectives["algorithm"]} <= {b"ring", b"tree", b"halving_doubling", b"direct",
                                                        b"hierarchical", b"in_switch"}
assert np.all(collectives["end_ps"] >= collectives["issued_ps"]) and np.all(collectives["members"] == 4)
transfers = one["transfers"][:]
assert len(transfers) == summary["network"]["transfers"], (len(transfers), summary["network"]["transfers"])
assert int(transfers["bytes"].sum()) == summary["network"]["bytes"]
assert np.all(transfers["delivered_ps"] > transfers["sent_ps"]) and np.all(transfers["source"] != transfers["destination"])
links = one["links"][:]
# A fully connected 4-device system: every transfer crosses one link.
assert int(links["bytes"].sum()) == summary["network"]["bytes"]
print("ok   trace tables agree with the summary (steps, kernels, collectives, transfers, links)")

expected = {"summary": {"ranks", "steps", "links", "strings"},
            "collectives": {"ranks", "steps", "links", "strings", "collectives"},
            "ops": {"ranks", "steps", "links", "strings", "collectives", "ops"}}
def resolved(f, name):
    # Rows with their string columns read through the file's string table (the tables of two
    # detail levels number the strings differently: a lower one interns fewer).
    table = f[name][:]
    text = f["strings"][:]
    return [tuple(text[row[c]] if c in ("name", "label", "kind", "algorithm") else row[c] for c in table.dtype.names)
            for row in table]
for detail, names in expected.items():
    f = h5py.File(f"{work}/{detail}.h5", "r")
    assert set(f) == names, (detail, set(f))
    assert f.attrs["detail"] == detail.encode() and int(f.attrs["complete"]) == 1
    for name in names - {"strings", "links"}:
        assert resolved(f, name) == resolved(one, name), f"{detail}: {name} differs"
    assert int(f["links"][:]["bytes"].sum()) == 0  # link bytes are counted at detail transfers only
print("ok   each detail level writes its tables, the same rows as the full trace")
PY

# --- send and recv: a ring of four partitions -----------------------------------------------------
cp "$root/tests/data/stablehlo/send_recv_ring.mlir" "$work/ring.mlir"
printf 'hardware: A100_40GB\nworkload:\n  programs:\n    - file: ring.mlir\n  steps: 3\n' > "$work/ring.yaml"
"$orrery" --log-level warn run "$work/ring.yaml" --trace "$work/ring1.h5" --detail transfers > /dev/null ||
  fail "send/recv run with --trace"
timeout 300 "$mpirun" -np 2 "$orrery" --log-level warn run "$work/ring.yaml" --trace "$work/ring2.h5" \
  --detail transfers > /dev/null || fail "send/recv run with --trace, -np 2"
"$python" - "$work" <<'PY' || failures=$((failures + 1))
import sys
import h5py, numpy as np
work = sys.argv[1]
one, two = (h5py.File(f"{work}/ring{n}.h5", "r") for n in (1, 2))
for name in one:
    assert np.array_equal(one[name][:], two[name][:]), name
strings = one["strings"][:]
rows = one["collectives"][:]
assert len(rows) == 4 * 3 * 2, len(rows)  # a send and a recv per rank and step
for rank in range(4):
    mine = rows[rows["rank"] == rank]
    assert sorted(strings[k] for k in mine["kind"]) == [b"recv"] * 3 + [b"send"] * 3
    assert np.all(mine["members"] == 2) and np.all(mine["bytes"] == 65536 * 4)
    assert np.array_equal(np.unique(mine["step"]), [0, 1, 2])
transfers = one["transfers"][:]
assert len(transfers) == 12 and np.all(transfers["source"] == (transfers["destination"] + 3) % 4)
assert {strings[k] for k in transfers["kind"]} == {b"send"}
print("ok   send/recv: one row per send and recv, transfers from the previous rank, -np 1 = -np 2")
PY

# --- failures ---------------------------------------------------------------------------------------
# A run that fails after the trace was created leaves it marked incomplete.
sed 's/%0 = stablehlo.add %r#0/%r2:2 = "stablehlo.recv"(%r#1) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (!stablehlo.token) -> (tensor<65536xf32>, !stablehlo.token)\n    %0 = stablehlo.add %r2#0/' \
  "$work/ring.mlir" > "$work/stuck.mlir"
printf 'hardware: A100_40GB\nworkload:\n  programs:\n    - file: stuck.mlir\n' > "$work/stuck.yaml"
expect trace_of_a_deadlock 1 "deadlock" -- "$orrery" run "$work/stuck.yaml" --trace "$work/stuck.h5"
"$python" -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r')
assert int(f.attrs['complete']) == 0, 'a failed run left a trace marked complete'
print('ok   a failed run leaves its trace marked incomplete')" "$work/stuck.h5" || failures=$((failures + 1))
expect report_refuses_incomplete 1 "the trace is incomplete" -- "$python" "$report" "$work/stuck.h5"
expect trace_of_a_deadlock_np2 1 "deadlock" -- "$mpirun" -np 2 "$orrery" run "$work/stuck.yaml" --trace "$work/stuck2.h5"
"$python" -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r')
assert int(f.attrs['complete']) == 0 and f.attrs['schema'] == b'orrery-trace'
print('ok   a failed run on two processes leaves its trace marked incomplete')" "$work/stuck2.h5" || failures=$((failures + 1))

expect trace_bad_directory 2 "cannot create the HDF5 trace" -- \
  "$orrery" run "$scenario" --trace "$work/no/such/dir/run.h5"
expect trace_bad_directory_np2 2 "cannot create the HDF5 trace" -- \
  "$mpirun" -np 2 "$orrery" run "$scenario" --trace "$work/no/such/dir/run.h5"
expect trace_bad_detail 2 "output.detail" -- "$orrery" run "$scenario" --trace "$work/x.h5" --detail everything
expect sweep_refuses_trace 1 "orrery sweep writes no traces" -- \
  "$orrery" sweep "$scenario" --vary hardware=A100_40GB,H100 --set output.trace="$work/s.h5" --out "$work/s.csv"

# --- the report tool --------------------------------------------------------------------------------
out=$("$python" "$report" "$work/np2.h5" --plots "$work/plots" --perfetto "$work/run.json" --top 3 2>&1) ||
  fail "trace_report.py: $out"
for fragment in "step time 105.210 ms" "compute_s" "exposed_comm_s" "top kernels" "top collectives" \
  "links: 4 of 12 carried traffic" "written by orrery" "on 2 process(es)"; do
  [[ "$out" == *"$fragment"* ]] || { fail "trace_report.py output lacks '$fragment'"; echo "$out" | head -30; }
done
[[ -s "$work/plots/breakdown.png" && -s "$work/plots/links.png" ]] || fail "trace_report.py --plots"
"$python" - "$work/run.json" "$work/one.h5" <<'PY' || failures=$((failures + 1))
import json, sys
import h5py
events = json.load(open(sys.argv[1]))["traceEvents"]
f = h5py.File(sys.argv[2], "r")
spans = [e for e in events if e["ph"] == "X"]
assert len(spans) == len(f["ops"]) + len(f["collectives"]), (len(spans), len(f["ops"]), len(f["collectives"]))
assert {e["pid"] for e in spans} == {0, 1, 2, 3} and {e["tid"] for e in spans} == {0, 1}
assert all(e["dur"] >= 0 for e in spans)
print("ok   trace_report.py --perfetto: one span per kernel and collective")
PY
expect report_not_a_trace 1 "cannot read it as HDF5" -- "$python" "$report" "$scenario"
"$python" -c "import h5py, sys; h5py.File(sys.argv[1], 'w').attrs['schema'] = 'something-else'" "$work/other.h5"
expect report_other_file 1 "not an Orrery trace" -- "$python" "$report" "$work/other.h5"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
