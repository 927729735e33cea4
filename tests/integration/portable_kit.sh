#!/usr/bin/env bash
# bench/portable_kit.sh packs the built orrery with its Open MPI runtime; bench/parallel_scaling.sh
# runs a scenario from the kit on 1 and 2 processes, checks that the step times agree and that each
# line reports the busiest process's load.
set -uo pipefail
source_dir=$1
orrery=$2
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! ORRERY_BIN=$orrery "$source_dir/bench/portable_kit.sh" "$work/kit" > "$work/kit.log" 2>&1; then
  cat "$work/kit.log"
  fail "portable_kit: bench/portable_kit.sh failed"
  exit 1
fi
[[ -x $work/kit/bin/orrery && -x $work/kit/usr/bin/orted && -e $work/kit/lib/libmpi.so.40 ]] &&
  echo "ok   portable_kit_contents" || fail "portable_kit_contents"
# One line per run, with the load of the busiest process (on the flow model the two processes
# exchange events; the analytical model keeps the one NVLink domain on one process).
output=$(timeout 60 "$source_dir/bench/parallel_scaling.sh" "$work/kit" "1 2" \
  "$source_dir/configs/scenarios/default.yaml:flow" 2>&1)
status=$?
if [[ $status -eq 0 ]] &&
  grep -Eq "^default flow np=2 wall=.* events_max=[1-9][0-9]* remote_sent_max=[1-9][0-9]* remote_received_max=[1-9][0-9]* event_s_max=[0-9.]+ sync_s_max=[0-9.]+$" <<< "$output"; then
  echo "ok   parallel_scaling_1_2"
else
  fail "parallel_scaling_1_2: exit $status, output:"
  echo "$output" | head -20
fi
exit $((failures > 0))
