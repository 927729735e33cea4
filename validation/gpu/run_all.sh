#!/bin/bash
# Runs every GPU measurement of validation/gpu in one call on the lent GPU machine and packs the
# results into $OUT/gpu.tar.gz. Stages have their own time limits so that one that overruns still
# leaves the others' results. See README.md for how it was run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
res=/tmp/gpu_results
rm -rf "$res" && mkdir -p "$res"/{kernels,programs,sharded}
export PYTHONUNBUFFERED=1
pin() {  # pin() CORES CMD...: taskset where it exists
  local cores=$1; shift
  if taskset -c "$cores" true 2> /dev/null; then taskset -c "$cores" "$@"; else "$@"; fi
}
{
  date -u +%FT%TZ
  nvidia-smi
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,COMPUTE
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,persistence_mode --format=csv
  python3 -c 'import sys, jax, jaxlib, optax, torch; print("python", sys.version); print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "optax", optax.__version__, "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  python3 -m pip list 2>/dev/null | grep -i -E '^(jax|jaxlib|jax-cuda|optax|flax|torch|numpy|nvidia-cublas|nvidia-cudnn) '
} > "$res/environment.txt" 2>&1
# Sharded lowerings use the CPU only: run them beside the GPU work, on cores the GPU work does not use.
(JAX_PLATFORMS=cpu XLA_FLAGS=--xla_force_host_platform_device_count=8 \
  timeout "${SHARDED_S:-400}" bash -c "$(declare -f pin); pin 8-15 python3 $here/sharded.py --out $res/sharded" \
  > "$res/sharded/log.txt" 2>&1; echo "exit $?" >> "$res/sharded/log.txt") &
sharded=$!
timeout "${PROGRAMS_S:-270}" bash -c "$(declare -f pin); pin 0-7 python3 $here/programs.py --out $res/programs" 2>&1 | tee "$res/programs/log.txt"
timeout "${KERNELS_S:-150}" bash -c "$(declare -f pin); pin 0-7 python3 $here/kernels.py --out $res/kernels --matmul-seconds ${MATMUL_S:-95}" 2>&1 | tee "$res/kernels/log.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$res/environment.txt" 2>&1
wait "$sharded"
tail -n 30 "$res/sharded/log.txt"
tar czf "$OUT/gpu.tar.gz" -C /tmp gpu_results
ls -l "$OUT"
