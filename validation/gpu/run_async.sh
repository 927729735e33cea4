#!/bin/bash
# The training steps timed synchronously and asynchronously (async_steps.py) on the lent GPU, packed
# into $OUT/async.tar.gz. See README.md.
set -u
here=$(cd "$(dirname "$0")" && pwd)
res=/tmp/gpu_async
rm -rf "$res" && mkdir -p "$res"
export PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,uuid --format=csv;
  python3 -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__)"; } > "$res/environment.txt" 2>&1
timeout "${ASYNC_S:-270}" python3 "$here/async_steps.py" --out "$res" 2>&1 | tee "$res/log.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$res/environment.txt" 2>&1
tar czf "$OUT/async.tar.gz" -C /tmp gpu_async
ls -l "$OUT"
