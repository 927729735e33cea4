#!/bin/bash
# A second, independent run on a fresh machine (same kind): the five training steps again (no
# exports kept: they are deterministic and identical), for run-to-run spread; and the ResNet
# convolutions at batch 64 and 256 (the batch of the ../shared/data ResNet exports), so that a table
# brackets other batches. Packs $OUT/repeat.tar.gz.
set -u
here=$(cd "$(dirname "$0")" && pwd)
res=/tmp/gpu_repeat
rm -rf "$res" && mkdir -p "$res"/{programs,kernels}
export PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,power.limit,persistence_mode,serial,uuid --format=csv; } > "$res/environment.txt" 2>&1
timeout "${PROGRAMS_S:-200}" python3 "$here/programs.py" --out "$res/programs" --no-trace 2>&1 | tee "$res/programs/log.txt"
timeout "${KERNELS_S:-120}" python3 "$here/kernels.py" --out "$res/kernels" --conv-batches 64,256 conv 2>&1 | tee "$res/kernels/log.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$res/environment.txt" 2>&1
find "$res" -name "*.gz" -delete   # the exports: identical to the first run's
tar czf "$OUT/repeat.tar.gz" -C /tmp gpu_repeat
ls -l "$OUT"
