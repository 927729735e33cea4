#!/usr/bin/env bash
# mpirun with the settings Orrery's scripts and tests need on a workstation or in a container:
# oversubscription allowed (more processes than cores), runs as root allowed (containers and CI
# run as root), and shared-memory single-copy disabled (ptrace-restricted containers).
# Usage: scripts/mpirun.sh -np N orrery ...
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
exec mpirun --oversubscribe "$@"
