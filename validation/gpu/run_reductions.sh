#!/bin/bash
# How XLA splits reductions into kernels (reductions.py; compiled, not timed) on the lent GPU,
# packed into $OUT/reductions.tar.gz. See README.md.
set -u
here=$(cd "$(dirname "$0")" && pwd)
res=/tmp/gpu_reductions
rm -rf "$res" && mkdir -p "$res"
export PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,uuid --format=csv;
  python3 -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__)"; } > "$res/environment.txt" 2>&1
timeout "${REDUCTIONS_S:-200}" python3 "$here/reductions.py" --out "$res" 2>&1 | tee "$res/log.txt"
tar czf "$OUT/reductions.tar.gz" -C /tmp gpu_reductions
ls -l "$OUT"
