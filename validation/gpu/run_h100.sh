#!/bin/bash
# The same measurements on a second kind of GPU (the lent NVIDIA H100): the five training steps
# (with profiler traces and XLA's compiled HLO) and every kernel family, the ResNet convolutions at
# batch 64, 128 and 256. No sharded lowerings (they run on the CPU and do not depend on the GPU).
# The StableHLO exports are kept only as SHA-256 sums: they are the same text JAX writes for any
# CUDA GPU, and data/programs holds them. Packs $OUT/h100.tar.gz. See README.md.
set -u
here=$(cd "$(dirname "$0")" && pwd)
res=/tmp/gpu_h100
rm -rf "$res" && mkdir -p "$res"/{kernels,programs}
export PYTHONUNBUFFERED=1
{
  date -u +%FT%TZ
  nvidia-smi
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,COMPUTE
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,persistence_mode,uuid --format=csv
  python3 -c 'import sys, jax, jaxlib, optax, torch; print("python", sys.version); print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "optax", optax.__version__, "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  python3 -m pip list 2>/dev/null | grep -i -E '^(jax|jaxlib|jax-cuda|optax|flax|torch|numpy|nvidia-cublas|nvidia-cudnn) '
  nproc
} > "$res/environment.txt" 2>&1
timeout "${PROGRAMS_S:-240}" python3 "$here/programs.py" --out "$res/programs" 2>&1 | tee "$res/programs/log.txt"
( cd "$res/programs" && for f in *.stablehlo.mlir.gz; do [ -e "$f" ] && printf '%s  %s\n' "$(gunzip -c "$f" | sha256sum | cut -d' ' -f1)" "${f%.gz}"; done > stablehlo.sha256; rm -f *.stablehlo.mlir.gz )
timeout "${KERNELS_S:-170}" python3 "$here/kernels.py" --out "$res/kernels" --matmul-seconds "${MATMUL_S:-95}" --conv-batches 64,128,256 2>&1 | tee "$res/kernels/log.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$res/environment.txt" 2>&1
tar czf "$OUT/h100.tar.gz" -C /tmp gpu_h100
ls -l "$OUT"
