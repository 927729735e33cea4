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

[[ $failures -eq 0 ]] && echo OK
exit $failures
