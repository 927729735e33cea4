#!/usr/bin/env bash
# Bad input to the CLI ends with a clear message and a non-zero exit, also under mpirun — never a
# hang or a crash.
set -uo pipefail
orrery=$1
mpirun=$2
source "$(dirname "$0")/expect.sh"

expect version 0 "" -- "$orrery" --version
expect no_subcommand 106 "A subcommand is required" -- "$orrery"
expect unknown_option 109 "--bogus" -- "$orrery" phold --bogus
expect zero_lookahead 2 "phold: --lookahead must be positive (got 0)" -- "$orrery" phold --lookahead 0
expect mean_below_lookahead 2 "--mean must be finite and greater than --lookahead" -- "$orrery" phold --mean 0.05
expect bad_partition 2 "unknown partitioner 'metis'" -- "$orrery" phold --partition metis --end 1
expect bad_log_level 2 "unknown log level 'loud'" -- "$orrery" --log-level loud phold --end 1
expect mpi_zero_lookahead 2 "--lookahead must be positive" -- "$mpirun" -np 2 "$orrery" phold --lookahead 0

# --version is git describe: a tag or a hash, never empty.
version=$("$orrery" --version)
[[ -n "$version" ]] || { echo "FAIL empty --version"; failures=$((failures + 1)); }

[[ $failures -eq 0 ]] && echo OK
exit $failures
