#!/bin/bash
# XLA's fused kernels timed alone (fusions.py) on the lent GPU, packed into $OUT/fusions.tar.gz;
# the stage stops at FUSIONS_S seconds and packs what it has. See README.md.
set -u
here=$(cd "$(dirname "$0")" && pwd)
res=/tmp/gpu_fusions
rm -rf "$res" && mkdir -p "$res"
export PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,power.limit,uuid --format=csv; } > "$res/environment.txt" 2>&1
timeout "${FUSIONS_S:-250}" python3 "$here/fusions.py" --out "$res" --loop-seconds "${LOOP_S:-0.03}" 2>&1 | grep -v "cuda_timer" | tee "$res/log.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$res/environment.txt" 2>&1
tar czf "$OUT/fusions.tar.gz" -C /tmp gpu_fusions
ls -l "$OUT"
