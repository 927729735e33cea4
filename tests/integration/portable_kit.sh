#!/usr/bin/env bash
# bench/portable_kit.sh packs the built orrery with its Open MPI runtime; bench/parallel_scaling.sh
# runs a scenario from the kit on 1 and 2 processes and checks that the step times agree.
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
expect parallel_scaling_1_2 0 "default analytical np=2 wall=" -- \
  "$source_dir/bench/parallel_scaling.sh" "$work/kit" "1 2" "$source_dir/configs/scenarios/default.yaml:analytical"
exit $((failures > 0))
