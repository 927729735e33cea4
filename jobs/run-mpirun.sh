#!/usr/bin/env bash
# A scenario on N MPI processes (default: all cores) on a workstation or an interactive allocation.
# Usage: jobs/run-mpirun.sh [N] SCENARIO.yaml [orrery run options: --set k=v, --summary-json P, ...]
# The summary is the same for any N (the engine is deterministic); N only changes the wall time.
# ORRERY names another build of the binary (default: build/release/orrery).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=$(nproc)
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
  n=$1
  shift
fi
if [[ $# -lt 1 ]]; then
  echo "usage: jobs/run-mpirun.sh [N] SCENARIO.yaml [orrery run options]" >&2
  exit 2
fi
exec "$root/scripts/mpirun.sh" -np "$n" "${ORRERY:-$root/build/release/orrery}" run "$@"
