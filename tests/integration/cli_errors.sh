#!/usr/bin/env bash
# Bad input to the CLI ends with a clear message and a non-zero exit, also under mpirun — never a
# hang or a crash.
set -uo pipefail
orrery=$1
mpirun=$2
source "$(dirname "$0")/expect.sh"

expect version 0 "" -- "$orrery" --version
expect help 0 "Subcommands:" -- "$orrery" --help
expect no_subcommand 2 "A subcommand is required" -- "$orrery"
expect unknown_option 2 "--bogus" -- "$orrery" phold --bogus
expect bad_option_value 2 "--lps" -- "$orrery" phold --lps abc
expect option_twice 2 "--model" -- "$orrery" traffic --model flow --model analytical
expect phold_last_option_wins 0 '"end": 2.0' -- "$orrery" phold --lps 64 --end 1 --end 2 --json
expect run_without_scenario 2 "scenario" -- "$orrery" run
expect zero_lookahead 2 "phold: --lookahead must be positive (got 0)" -- "$orrery" phold --lookahead 0
expect mean_below_lookahead 2 "--mean must be finite and greater than --lookahead" -- "$orrery" phold --mean 0.05
expect bad_partition 2 "unknown partitioner 'metis'" -- "$orrery" phold --partition metis --end 1
expect bad_log_level 2 "unknown log level 'loud'" -- "$orrery" --log-level loud phold --end 1
expect mpi_zero_lookahead 2 "--lookahead must be positive" -- "$mpirun" -np 2 "$orrery" phold --lookahead 0

expect packet_model 1 "packet model is not implemented yet" -- "$orrery" traffic --topology switch --model packet
expect bad_pattern 2 "--pattern: unknown pattern 'tornado' (known: uniform_random, shift" -- "$orrery" traffic --pattern tornado
expect bad_topology_key 2 "network.topology.radix: unknown key 'radix'" -- "$orrery" traffic --topology '{kind: fat_tree, radix: 8}'
expect bad_routing 2 "network.routing: 'valiant' is not available for the fat_tree topology" -- "$orrery" traffic --topology fat_tree --routing valiant
expect bad_load 2 "--load must be positive" -- "$orrery" traffic --load -1
expect long_duration 2 "--duration-us must be at most 1e13" -- "$orrery" traffic --load 0.5 --duration-us 1e30
placeholder="$(dirname "$0")/../../../shared/data/configs/astra-sim/inputs/network/dgx_v100_8gpu.yml"
if [[ -f "$placeholder" ]]; then
  expect astra_placeholder 2 "bandwidth[0]: expected a finite number, got 'tbd'" -- "$orrery" traffic --network-configuration "$placeholder"
fi
expect mpi_packet_model 1 "packet model is not implemented yet" -- "$mpirun" -np 2 "$orrery" traffic --topology switch --model packet

# --version is git describe: a tag or a hash, never empty.
version=$("$orrery" --version)
[[ -n "$version" ]] || { echo "FAIL empty --version"; failures=$((failures + 1)); }

[[ $failures -eq 0 ]] && echo OK
exit $failures
