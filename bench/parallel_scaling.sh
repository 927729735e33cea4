#!/usr/bin/env bash
# Wall time of scenarios under mpirun -np 1, 2, 4, ... on a machine with many cores, from the kit
# bench/portable_kit.sh packs (the machine needs no Open MPI of its own). Prints one line per run:
# scenario, network model, processes, the run's wall seconds (mpirun's, start-up included), the
# summary's wall_s and simulate_wall_s (process 0), windows, the step time, and the load per process
# (the largest events, remote events sent and received, and seconds executing events and
# synchronising of any process, from the summary's engine_processes); the summaries' step times
# must agree across process counts (a mismatch is reported and fails).
# Usage: bench/parallel_scaling.sh KIT "1 2 4 8 16" SCENARIO:MODEL...
set -uo pipefail
kit=$(cd "$1" && pwd)
counts=$2
shift 2
export OPAL_PREFIX=$kit/usr PMIX_INSTALL_PREFIX=$kit/pmix PMIX_MCA_mca_base_component_path=$kit/pmix/lib/pmix
export LD_LIBRARY_PATH=$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_show_load_errors=0 PMIX_MCA_pcompress_base_silence_warning=1
orrery=$kit/bin/orrery
if ! "$orrery" --version > /dev/null 2>&1; then
  # An older C library: run the kit's own loader and C library.
  mkdir -p "$kit/wrap"
  printf '#!/bin/sh\nexec %s/glibc/ld-linux-x86-64.so.2 --library-path %s/glibc:%s/lib %s/bin/orrery "$@"\n' \
    "$kit" "$kit" "$kit" "$kit" > "$kit/wrap/orrery"
  chmod +x "$kit/wrap/orrery"
  orrery=$kit/wrap/orrery
fi
"$orrery" --version || { echo "orrery does not run here"; exit 1; }
status=0
for item in "$@"; do
  scenario=${item%%:*}
  model=${item##*:}
  reference=""
  for np in $counts; do
    json=$(mktemp)
    start=$EPOCHREALTIME
    "$kit/usr/bin/mpirun" --oversubscribe -np "$np" "$orrery" --log-level warn run "$scenario" \
      --set network.model="$model" --summary-json "$json" > /dev/null || { echo "$scenario $model np=$np failed"; status=1; continue; }
    end=$EPOCHREALTIME
    read -r step line <<< "$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
p = d.get('engine_processes') or [{}]
load = ' events_max=%d remote_sent_max=%d remote_received_max=%d event_s_max=%.2f sync_s_max=%.2f' % (
    max(x.get('events', 0) for x in p), max(x.get('remote_sent', 0) for x in p),
    max(x.get('remote_received', 0) for x in p), max(x.get('event_s', 0) for x in p), max(x.get('sync_s', 0) for x in p))
print(d['step_time_s'], 'wall=%.2f summary_wall=%.2f simulate=%.2f windows=%s step=%s' % (
    float(sys.argv[3]) - float(sys.argv[2]), d['wall_s'], d['simulate_wall_s'], d.get('windows', '-'), d['step_time_s']) + load)
" "$json" "$start" "$end")"
    echo "$(basename "$scenario" .yaml) $model np=$np $line"
    [[ -z $reference ]] && reference=$step
    [[ $step == "$reference" ]] || { echo "step time differs from np=1: $step vs $reference"; status=1; }
    rm -f "$json"
  done
done
exit $status
