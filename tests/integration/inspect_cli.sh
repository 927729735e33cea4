#!/usr/bin/env bash
# `orrery inspect` end to end: text and JSON reports, multi-module files, trip-count overrides,
# --strict, and bad input (one error with file:line:col and a non-zero exit).
set -uo pipefail
orrery=$1
source_dir=$2
shared_data=$3
data=$source_dir/tests/integration/data
errors=$source_dir/tests/frontend/errors
source "$(dirname "$0")/expect.sh"

expect text_report 0 "trip count 4 (derived)" -- "$orrery" inspect "$data/two_modules.mlir"
expect underivable_loop_listed 0 "trip count unknown" -- "$orrery" inspect "$data/two_modules.mlir"
expect strict_rejects_underivable_loop 1 "two_modules.mlir:30:3: error: the trip count of while loop 'open_ended/%r' cannot be derived" \
  -- "$orrery" inspect --strict "$data/two_modules.mlir"
expect override 0 "trip count 9 (override)" \
  -- "$orrery" inspect --trip-count open_ended/%r=9 "$data/two_modules.mlir"
expect override_unknown_loop 2 "trip count given for 'main/%7'" -- "$orrery" inspect --trip-count main/%7=9 "$data/two_modules.mlir"
expect override_malformed 2 "--trip-count expects LOOP=N" -- "$orrery" inspect --trip-count main "$data/two_modules.mlir"
expect undefined_value 2 "undefined_value.mlir:4:26: error: use of undefined value '%y'" -- "$orrery" inspect "$errors/undefined_value.mlir"
expect truncated 2 "truncated.mlir:5:38: error:" -- "$orrery" inspect "$errors/truncated.mlir"
expect missing_file 2 "cannot open" -- "$orrery" inspect /nonexistent.mlir
expect send_counts_its_data 0 "send                        1 ops         262144 bytes" -- \
  "$orrery" inspect "$source_dir/tests/data/stablehlo/send_recv_ring.mlir"
expect dump 0 "stablehlo.all_reduce [all_reduce](%b3.1) -> tensor<1024xbf16>" -- "$orrery" inspect --dump "$data/two_modules.mlir"

# JSON: one object per file; a multi-module file lists its modules.
json=$("$orrery" inspect --json "$data/two_modules.mlir") || fail "json exit"
if /usr/bin/python3 - "$json" <<'PY'; then echo "ok   json"; else fail "json content"; fi
import json, sys
report = json.loads(sys.argv[1])
assert report["module_count"] == 2, report
step = report["modules"][0]
for key in ("ops", "op_histogram", "collectives", "num_partitions", "num_replicas", "form", "loops", "largest_ops"):
    assert key in step, key
assert step["num_partitions"] == 2 and step["num_replicas"] == 1 and step["form"] == "partitioned"
assert step["collectives"] == {"all_reduce": {"count": 1, "bytes": 2048, "group_sizes": {"2": 1}}}, step["collectives"]
assert step["loops"][0]["trip_count"] == 4
assert report["modules"][1]["loops"][0]["trip_count"] is None
PY

# The real Llama3 module, when the shared data is here.
llama=$shared_data/stablehlo/hespas_workloads/llama3-100m.post-spmd-4dev.mlir
if [[ -f "$llama" ]]; then
  "$orrery" inspect --json "$llama" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["num_partitions"] == 4 and r["form"] == "partitioned", r["form"]
assert r["collectives"]["all_reduce"]["count"] == 272 and r["collectives"]["all_gather"]["count"] == 100
' && echo "ok   llama_json" || fail "llama json"
  bytecode=$shared_data/stablehlo/mlirbc/stablehlo_legalize_to_vhlo.1_20_0.mlir.bc
  expect bytecode 1 "MLIR bytecode is not supported; export text" -- "$orrery" inspect "$bytecode"
else
  echo "skip llama_json, bytecode: $shared_data absent"
fi

# --cost: FLOPs, bytes and estimated time of one device's program, counting executions.
cost=$data/cost_loop.mlir
expect cost_text 0 "one device, one run: 30.98 kFLOP" -- "$orrery" inspect --cost --hardware A100_80GB "$cost"
expect cost_systolic 0 "estimator systolic" -- "$orrery" inspect --cost --hardware TPUv4 --estimator systolic "$cost"
expect cost_needs_hardware 2 "--cost needs --hardware" -- "$orrery" inspect --cost "$cost"
expect cost_unknown_preset 2 "did you mean 'A100_80GB'" -- "$orrery" inspect --cost --hardware A100_80 "$cost"
expect cost_unknown_estimator 2 "unknown estimator 'foo'" -- "$orrery" inspect --cost --hardware H100 --estimator foo "$cost"
expect cost_table_needs_file 2 "the table estimator needs a table file (--table)" \
  -- "$orrery" inspect --cost --hardware H100 --estimator table "$cost"
expect cost_hardware_without_cost 2 "--hardware is an option of --cost" -- "$orrery" inspect --hardware H100 "$cost"
expect cost_unknown_trip_count 1 "--trip-count open_ended/%r=N" -- "$orrery" inspect --cost --hardware H100 "$data/two_modules.mlir"
json=$("$orrery" inspect --cost --hardware A100_80GB --fusion none --json "$cost") || fail "cost json exit"
if /usr/bin/python3 - "$json" <<'PY'; then echo "ok   cost_json"; else fail "cost json content"; fi
import json, sys
r = json.loads(sys.argv[1])
# 3 trips x 2 calls of @layer: 6 dots of 2*8*16*16 FLOPs, 6 tanh of 8*128; 3 + 4 scalar ops; 2 adds of 128.
assert r["flops"] == 6 * 4096 + 6 * 1024 + 3 + 4 + 2 * 128, r["flops"]
assert r["kernels"] == 21 and r["estimators"] == {"roofline": 21}, r
assert r["classes"]["gemm"]["kernels"] == 6 and r["classes"]["gemm"]["flops"] == 6 * 4096
assert r["hardware"] == "A100_80GB" and r["estimator"] == "roofline"
assert r["bytes"] == r["bytes_read"] + r["bytes_written"] > 0
assert r["estimated_compute_s"] > 0
assert abs(sum(c["estimated_s"] for c in r["classes"].values()) - r["estimated_compute_s"]) < 1e-12
PY
# The default fusion (regions, as in scenarios): the two final adds become one kernel; the same FLOPs.
json=$("$orrery" inspect --cost --hardware A100_80GB --json "$cost") || fail "cost json exit"
if /usr/bin/python3 - "$json" <<'PY'; then echo "ok   cost_json_regions"; else fail "cost json regions"; fi
import json, sys
r = json.loads(sys.argv[1])
assert r["fusion"] == "regions" and r["kernels"] == 20 and r["executions"]["fused"] == 1, r
assert r["flops"] == 6 * 4096 + 6 * 1024 + 3 + 4 + 2 * 128, r["flops"]
PY
# --top N: the costliest kernels over their executions (with calls kept as calls, --no-inline, the
# loop body's two calls run @layer's one dot 6 times).
json=$("$orrery" inspect --cost --hardware A100_80GB --fusion none --no-inline --top 3 --json "$cost") || fail "cost top exit"
if /usr/bin/python3 - "$json" <<'PY'; then echo "ok   cost_top_json"; else fail "cost top json"; fi
import json, sys
r = json.loads(sys.argv[1])
top = r["top_kernels"]
assert len(top) == 3, top
assert [k["total_s"] for k in top] == sorted((k["total_s"] for k in top), reverse=True), top
dot = top[0]
assert dot["op"] == "stablehlo.dot_general" and dot["executions"] == 6 and dot["flops"] == 4096, dot
assert dot["location"].endswith("cost_loop.mlir:5:3"), dot
assert abs(dot["total_s"] - 6 * dot["estimated_s"]) < 1e-15 and dot["estimator"] == "roofline", dot
PY
expect cost_top_text 0 "6 gemm" -- "$orrery" inspect --cost --hardware A100_80GB --no-inline --top 2 "$cost"
# Inlined (the default, as XLA does): each call site holds its own copy of the dot, 3 runs each,
# still at the callee's line; the totals are the same.
json=$("$orrery" inspect --cost --hardware A100_80GB --fusion none --top 3 --json "$cost") || fail "cost inlined exit"
kept=$("$orrery" inspect --cost --hardware A100_80GB --fusion none --no-inline --json "$cost") || fail "cost kept exit"
if /usr/bin/python3 - "$json" "$kept" <<'PY'; then echo "ok   cost_top_inlined"; else fail "cost top inlined"; fi
import json, sys
r, kept = json.loads(sys.argv[1]), json.loads(sys.argv[2])
top = r["top_kernels"]
dots = [k for k in top if k["op"] == "stablehlo.dot_general"]
assert len(dots) == 2, top
assert all(k["executions"] == 3 and k["location"].endswith("cost_loop.mlir:5:3") for k in dots), top
assert r["flops"] == kept["flops"] == 30983 and r["executions"]["compute"] == kept["executions"]["compute"], (r, kept)
PY
expect cost_top_without_cost 2 "--top is an option of --cost" -- "$orrery" inspect --top 2 "$cost"
expect cost_top_negative 2 "--top: Value -1 not in range" -- "$orrery" inspect --cost --hardware H100 --top -1 "$cost"
expect cost_top_not_a_number 2 "--top: Value x not in range" -- "$orrery" inspect --cost --hardware H100 --top x "$cost"
expect cost_bad_fusion 2 "--fusion: expected none, elementwise or regions, got 'xla'" \
  -- "$orrery" inspect --cost --hardware H100 --fusion xla "$cost"
# Overridden trip counts multiply the loop body.
json=$("$orrery" inspect --cost --hardware H100 --json --trip-count open_ended/%r=10 "$data/two_modules.mlir") || fail "cost override exit"
if /usr/bin/python3 - "$json" <<'PY'; then echo "ok   cost_multi_module_override"; else fail "cost multi-module override"; fi
import json, sys
r = json.loads(sys.argv[1])
assert r["module_count"] == 2 and r["hardware"] == "H100"
assert r["modules"][0]["communication_ops"] == {"stablehlo.all_reduce": 4}, r["modules"][0]
assert r["modules"][1]["kernels"] == 10 + 11, r["modules"][1]  # 10 adds, 11 compares
PY

# Real programs, when the shared data is here (read in place).
resnet=$shared_data/stablehlo/hespas/resnet50_train_step_4dev_b1024.mlir
if [[ -f "$resnet" ]]; then
  "$orrery" inspect --cost --hardware A100_40GB --json "$resnet" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
conv = r["classes"]["convolution"]
# 53 convolutions forward, backward-data (not for the first layer) and backward-filter.
assert conv["kernels"] == 158, conv
assert 5.5e12 < conv["flops"] < 6.5e12, conv
assert r["communication_ops"] == {"stablehlo.all_reduce": 375}
' && echo "ok   cost_resnet50" || fail "cost resnet50"
  "$orrery" inspect --cost --hardware H100 --json "$llama" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
# About 6 x parameters x tokens for a 4096-token step of a ~120M-parameter model, per device.
assert 4e12 < r["flops"] < 9e12, r["flops"]
assert r["classes"]["gemm"]["kernels"] == 208
assert r["cache"]["hit_rate"] > 0.9
' && echo "ok   cost_llama" || fail "cost llama"
else
  echo "skip cost_resnet50, cost_llama: $shared_data absent"
fi

[[ $failures -eq 0 ]] && echo OK
exit $failures
