#!/usr/bin/env bash
# mpirun with the settings Orrery's scripts and tests need on a workstation or in a container:
# oversubscription allowed (more processes than cores), runs as root allowed (containers and CI
# run as root), shared-memory single-copy disabled (ptrace-restricted containers), and a session
# directory of its own for each run (unless OMPI_MCA_orte_tmpdir_base names one): concurrent runs
# sharing /tmp/ompi.<host>.<uid> race as one removes it while another creates its directory there
# (open-mpi/ompi#8510). The directory is removed when mpirun ends; a signal to this script is
# passed on to mpirun.
# Usage: scripts/mpirun.sh -np N orrery ...
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
if [[ -n ${OMPI_MCA_orte_tmpdir_base:-} ]]; then
  exec mpirun --oversubscribe "$@"
fi
session=$(mktemp -d "${TMPDIR:-/tmp}/orrery-mpirun.XXXXXX") || exec mpirun --oversubscribe "$@"
export OMPI_MCA_orte_tmpdir_base=$session
mpirun --oversubscribe "$@" &
child=$!
trap 'kill -TERM "$child" 2> /dev/null' TERM INT HUP
status=0
while true; do
  wait "$child"
  status=$?
  # A trapped signal ends `wait` early (status above 128) while mpirun is still running.
  kill -0 "$child" 2> /dev/null || break
done
rm -rf "$session"
exit "$status"
