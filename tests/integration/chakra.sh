#!/usr/bin/env bash
# Chakra execution traces (docs/chakra.md): ASTRA-sim's own invocation on its own files, checked
# against the times ASTRA-sim's analytical backend reports for them (../shared/reference/
# validation.md: 1 MiB ring all-reduce, Ring_4chunks.json, on Ring_{4,8,16}npus.yml: 43,000,
# 64,440 and 99,640 ns; "within a few percent" — here 5%); the same summary for mpirun -np 1 and 2;
# a scenario's workload.chakra with --set; the real PyTorch trace (read in place when
# ../shared/data is there); and each bad input ending with a message and a non-zero exit.
set -uo pipefail
orrery=$1
mpirun=$2
root=$3
shared=$4
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=$root/tests/data/chakra/astra-sim
python=/usr/bin/python3

astra() {  # astra NPUS KIND [extra args...]: ASTRA-sim's invocation on a microbenchmark
  local npus=$1 kind=$2
  shift 2
  "$orrery" --log-level warn run --workload-configuration "$data/microbenchmarks/$kind/${npus}npus_1MB/$kind" \
    --system-configuration "$data/configs/Ring_4chunks.json" --network-configuration "$data/configs/Ring_${npus}npus.yml" \
    --remote-memory-configuration "$data/configs/no_memory_expansion.json" "$@"
}

for case in 4:43000 8:64440 16:99640; do
  npus=${case%%:*}
  reference=${case##*:}
  astra "$npus" all_reduce --summary-json "$work/ar$npus.json" > /dev/null 2> "$work/ar$npus.err" ||
    { fail "ASTRA-sim invocation, all_reduce on $npus NPUs"; cat "$work/ar$npus.err"; continue; }
  "$python" - "$work/ar$npus.json" "$reference" "$npus" <<'PY' || fail "all_reduce $npus NPUs against ASTRA-sim"
import json, sys
s = json.load(open(sys.argv[1]))
ns, reference, npus = s["step_time_s"] * 1e9, float(sys.argv[2]), int(sys.argv[3])
error = ns / reference - 1
print(f"ok   all_reduce 1 MiB on Ring({npus}): {ns:.0f} ns, ASTRA-sim {reference:.0f} ns ({100 * error:+.1f}%)")
assert s["ranks"] == npus, s["ranks"]
assert abs(error) < 0.05, f"{ns} ns is not within 5% of ASTRA-sim's {reference} ns"
PY
done
grep -q "not modelled: boost-mode, collective-optimization, scheduling-policy" "$work/ar4.err" ||
  fail "the system file's unmodelled keys are named"

# The other microbenchmarks run; an all-gather moves p times its 1 MiB input, a reduce-scatter its input.
for kind in all_gather reduce_scatter all_to_all; do
  astra 8 "$kind" --summary-json "$work/$kind.json" > "$work/$kind.txt" 2> /dev/null || fail "$kind on 8 NPUs"
done
grep -q "all_gather of 8.0 MiB over 8 ranks" "$work/all_gather.txt" || fail "all_gather's size is its gathered output"
grep -q "reduce_scatter of 1.0 MiB over 8 ranks" "$work/reduce_scatter.txt" || fail "reduce_scatter's size is its input"

# Determinism: -np 1 and -np 2 give the same summary (send/recv ring and a 16-rank collective).
ring=(--workload-configuration "$data/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce"
      --system-configuration "$data/configs/Ring_4chunks.json" --network-configuration "$data/configs/Ring_8npus.yml")
"$orrery" --log-level warn run "${ring[@]}" --summary-json "$work/ring1.json" > "$work/ring.txt" 2> /dev/null ||
  fail "MSCCL ring (send/recv) on one process"
timeout 300 "$mpirun" -np 2 "$orrery" --log-level warn run "${ring[@]}" --summary-json "$work/ring2.json" > /dev/null 2>&1 ||
  fail "MSCCL ring (send/recv) on two processes"
timeout 300 "$mpirun" -np 2 "$orrery" --log-level warn run --workload-configuration \
  "$data/microbenchmarks/all_reduce/16npus_1MB/all_reduce" --system-configuration "$data/configs/Ring_4chunks.json" \
  --network-configuration "$data/configs/Ring_16npus.yml" --summary-json "$work/ar16np2.json" > /dev/null 2>&1 ||
  fail "all_reduce 16 NPUs on two processes"
"$python" - "$work" <<'PY' || fail "-np 1 and -np 2 summaries"
import json, sys
w = sys.argv[1]
keys = ("step_time_s", "compute_s", "comm_s", "exposed_comm_s", "events", "ranks")
for a, b in (("ring1", "ring2"), ("ar16", "ar16np2")):
    x, y = json.load(open(f"{w}/{a}.json")), json.load(open(f"{w}/{b}.json"))
    for k in keys:
        assert x[k] == y[k], (a, b, k, x[k], y[k])
ring = json.load(open(f"{w}/ring1.json"))
# 7 compute nodes of 7 us each on every rank, serial with the ring's 14 transfers.
assert abs(ring["compute_s"] - 49e-6) < 1e-12, ring["compute_s"]
assert ring["step_time_s"] > ring["compute_s"]
print("ok   -np 1 = -np 2 (send/recv ring, 16-rank all-reduce); ring compute 49 us")
PY

# A scenario with workload.chakra, and --set on it.
cat > "$work/scenario.yaml" <<YAML
hardware: A100_40GB
system: {endpoint_delay_ns: 10, chunks: 4, chunks_in_flight: 1, collectives: {all_reduce: ring}}
network:
  topology: {kind: astra_sim, file: $data/configs/Ring_4npus.yml}
workload:
  chakra: {prefix: $data/microbenchmarks/all_reduce/4npus_1MB/all_reduce}
YAML
"$orrery" --log-level warn run "$work/scenario.yaml" --summary-json "$work/scenario.json" > /dev/null 2>&1 ||
  fail "scenario with workload.chakra"
"$orrery" --log-level warn run "$work/scenario.yaml" --set system.collectives.all_reduce=direct \
  --summary-json "$work/direct.json" > /dev/null 2>&1 || fail "--set on a Chakra scenario"
"$python" - "$work" <<'PY' || fail "scenario and ASTRA-sim invocation agree"
import json, sys
w = sys.argv[1]
s, a, d = (json.load(open(f"{w}/{n}.json")) for n in ("scenario", "ar4", "direct"))
# The invocation adds ASTRA-sim's local-mem-bw as the reduction rate; the scenario uses the A100's.
assert abs(s["step_time_s"] / a["step_time_s"] - 1) < 0.01, (s["step_time_s"], a["step_time_s"])
assert d["step_time_s"] != s["step_time_s"]
print("ok   workload.chakra scenario; --set changes the algorithm")
PY

# The real PyTorch-converted trace (rank 0 of a data-parallel job, run as one rank).
pytorch=$shared/chakra/pytorch/chakra
if [[ -f $pytorch.0.et ]]; then
  cat > "$work/pytorch.yaml" <<YAML
hardware: A100_40GB
workload:
  chakra: {prefix: $pytorch}
YAML
  "$orrery" --log-level warn run "$work/pytorch.yaml" --summary-json "$work/pytorch.json" > "$work/pytorch.txt" 2>&1 ||
    { fail "PyTorch Chakra trace"; head "$work/pytorch.txt"; }
  grep -q "host (is_cpu_op) nodes take no device time" "$work/pytorch.txt" || fail "host nodes are reported"
  "$python" -c "
import json; s = json.load(open('$work/pytorch.json'))
assert s['ranks'] == 1 and s['compute_s'] > 0.1 and abs(s['step_time_s'] - s['compute_s']) < 1e-9, s
m = s['memory'][0]  # from the device tensors the trace lists
assert 0 < m['arguments_bytes'] < m['peak_bytes'] <= m['capacity_bytes'] and m['fits'], m
print('ok   PyTorch trace: %.1f ms of kernels, %.2f GiB peak memory' % (s['compute_s'] * 1e3, m['peak_bytes'] / 2**30))" ||
    fail "PyTorch trace summary"
else
  echo "skip PyTorch trace: needs $pytorch.0.et (../shared/data beside the clone)"
fi

# Bad input.
cp -r "$data/microbenchmarks/all_reduce/4npus_1MB" "$work/bad"
head -c 40 "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce.2.et" > "$work/bad/all_reduce.2.et"
expect "truncated trace" 2 "all_reduce.2.et: byte 8: node 0 is" -- \
  "$orrery" run --workload-configuration "$work/bad/all_reduce" --system-configuration "$data/configs/Ring_4chunks.json" \
  --network-configuration "$data/configs/Ring_4npus.yml"
# Under mpirun -np 2 rank 2's file is the second process's to read: both processes stop with its error.
expect "truncated trace read by the second of two processes" 2 "all_reduce.2.et: byte 8: node 0 is" -- \
  timeout 300 "$mpirun" -np 2 "$orrery" run --workload-configuration "$work/bad/all_reduce" \
  --system-configuration "$data/configs/Ring_4chunks.json" --network-configuration "$data/configs/Ring_4npus.yml"
expect "missing traces" 2 "error: --workload-configuration: $work/absent: no Chakra trace" -- \
  "$orrery" run --workload-configuration "$work/absent" --system-configuration "$data/configs/Ring_4chunks.json" \
  --network-configuration "$data/configs/Ring_4npus.yml"
expect "more ranks than NPUs" 2 "the workload needs 8 ranks" -- \
  "$orrery" run --workload-configuration "$data/microbenchmarks/all_reduce/8npus_1MB/all_reduce" \
  --system-configuration "$data/configs/Ring_4chunks.json" --network-configuration "$data/configs/Ring_4npus.yml"
expect "incomplete invocation" 2 "needs --workload-configuration, --system-configuration and --network-configuration" -- \
  "$orrery" run --workload-configuration "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce"
echo '{"all-reduce-implementation": ["ring"], "endpoint-delay": 0}' > "$work/zero.json"
expect "zero endpoint delay" 1 "needs a positive endpoint delay" -- \
  "$orrery" run --workload-configuration "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce" \
  --system-configuration "$work/zero.json" --network-configuration "$data/configs/Ring_4npus.yml"
echo '{"all-reduce-implementation": ["swing"]}' > "$work/swing.json"
expect "unknown algorithm" 1 "algorithm 'swing' is not one Orrery runs" -- \
  "$orrery" run --workload-configuration "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce" \
  --system-configuration "$work/swing.json" --network-configuration "$data/configs/Ring_4npus.yml"
# Errors in values taken from ASTRA-sim's files name the file and key (or option), not the
# scenario text built from them.
echo '{"all-reduce-implementation": ["ring"], "preferred-dataset-splits": 0}' > "$work/splits.json"
expect "system value out of range" 2 "$work/splits.json: \"preferred-dataset-splits\": 0 is out of range" -- \
  "$orrery" run --workload-configuration "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce" \
  --system-configuration "$work/splits.json" --network-configuration "$data/configs/Ring_4npus.yml"
printf 'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ -5.0 ]\nlatency: [ 500.0 ]\n' > "$work/net.yml"
expect "bad network file" 2 "the file is named by --network-configuration" -- \
  "$orrery" run --workload-configuration "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce" \
  --system-configuration "$data/configs/Ring_4chunks.json" --network-configuration "$work/net.yml"
mkdir "$work/empty"  # only the word "empty" itself means no file, not a path containing it
echo '{"comm": [9]}' > "$work/empty/groups.json"
expect "communicator groups under a directory named empty" 2 "group 'comm' names 9" -- \
  "$orrery" run --workload-configuration "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce" \
  --system-configuration "$data/configs/Ring_4chunks.json" --network-configuration "$data/configs/Ring_4npus.yml" \
  --comm-group-configuration "$work/empty/groups.json"
echo '{"comm": [9]}' > "$work/groups.json"
expect "bad communicator group" 2 "group 'comm' names 9, which is not a rank" -- \
  "$orrery" run --workload-configuration "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce" \
  --system-configuration "$data/configs/Ring_4chunks.json" --network-configuration "$data/configs/Ring_4npus.yml" \
  --comm-group-configuration "$work/groups.json"
expect "scenario and ASTRA-sim files together" 2 "not both" -- \
  "$orrery" run "$work/scenario.yaml" --workload-configuration "$data/microbenchmarks/all_reduce/4npus_1MB/all_reduce" \
  --system-configuration "$data/configs/Ring_4chunks.json" --network-configuration "$data/configs/Ring_4npus.yml"

exit $((failures > 0))
