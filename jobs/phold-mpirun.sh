#!/usr/bin/env bash
# PHOLD on N processes (default: all cores). Usage: jobs/phold-mpirun.sh [N] [phold options]
# Options given here override the defaults below (the last of a repeated option wins).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-$(nproc)}
shift || true
exec "$root/scripts/mpirun.sh" -np "$n" "$root/build/release/orrery" phold \
  --lps 16384 --start-events 16 --remote 0.1 --lookahead 0.5 --end 100 --json "$@"
