"""XLA's own fused kernels, timed alone: the memory-bound patterns of the training steps in
models.py (batch-norm statistics, application and backward pass, ReLU and residual adds of
ResNet at batch 128; RMSNorm, SiLU gating, causal softmax forward and backward of the Llama
steps; an AdamW update), each jitted by itself at the shapes those programs use, so that XLA
generates the same kind of kernel it runs inside a step.

For each case this writes a row of --out/fusions.csv:
  pattern, shape, kernels     the case, and how many kernels XLA's compiled module launches
  bytes_read, bytes_written   what those kernels read and write, from the compiled HLO (each
                              kernel of the entry computation reads its operands once and writes
                              its results)
  reduces, transcendental     whether a kernel reduces; whether one evaluates exp/log/rsqrt/tanh
  time_us                     the median over 3 loops of the mean time of N back-to-back calls
                              (asynchronous dispatch keeps the GPU busy while a call takes longer
                              than its dispatch; N is chosen so that a loop takes about 50 ms)
  iters, method
  kernel_us, launches         from a jax.profiler trace of 20 more calls: the GPU's busy time per
                              call (the sum of its kernels' durations, without host gaps) and the
                              kernels it ran per call
and --out/NAME.stablehlo.mlir.gz (the case as JAX exports it, for Orrery) and NAME.hlo.txt.gz
(XLA's compiled module). A case that fails is logged and skipped.
"""
import argparse
import csv
import glob
import gzip
import os
import statistics
import sys
import tempfile
import time
import traceback

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlo_kernels  # noqa: E402
import trace_summary  # noqa: E402

def kernel_bytes(hlo):
    """(kernels, bytes read, bytes written) of the compiled module's entry computation."""
    kernels = hlo_kernels.entry_kernels(hlo) or []
    return len(kernels), sum(k[2] for k in kernels), sum(k[3] for k in kernels)


def bn_stats(x):
    f = x.astype(jnp.float32)
    return jnp.sum(f, axis=(0, 1, 2)), jnp.sum(f * f, axis=(0, 1, 2))


def bn_apply_relu(x, mean, var, gamma, beta):
    y = (x.astype(jnp.float32) - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta
    return jnp.maximum(y, 0.0).astype(jnp.bfloat16)


def bn_backward(x, dy, mean, rstd, gamma):
    n = x.shape[0] * x.shape[1] * x.shape[2]
    xhat = (x.astype(jnp.float32) - mean) * rstd
    g = dy.astype(jnp.float32)
    dbeta = jnp.sum(g, axis=(0, 1, 2))
    dgamma = jnp.sum(g * xhat, axis=(0, 1, 2))
    dx = gamma * rstd / n * (n * g - dbeta - xhat * dgamma)
    return dx.astype(jnp.bfloat16), dgamma, dbeta


def relu_grad(dy, y):
    return jnp.where(y > 0, dy, jnp.zeros_like(dy))


def add_relu(a, b):
    return jnp.maximum(a + b, jnp.zeros_like(a))


def rms_norm(x, w):
    f = x.astype(jnp.float32)
    y = f * jax.lax.rsqrt(jnp.mean(f * f, axis=-1, keepdims=True) + 1e-6) * w
    return y.astype(jnp.bfloat16)


def silu_mul(g, u):
    return (jax.nn.silu(g.astype(jnp.float32)) * u.astype(jnp.float32)).astype(jnp.bfloat16)


def softmax_causal(s):
    t = s.shape[-1]
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    f = jnp.where(mask, s.astype(jnp.float32) / 8.0, -3.4e38)
    return jax.nn.softmax(f, axis=-1).astype(jnp.bfloat16)


def softmax_backward(p, dp):
    pf, g = p.astype(jnp.float32), dp.astype(jnp.float32)
    return (pf * (g - jnp.sum(pf * g, axis=-1, keepdims=True))).astype(jnp.bfloat16)


def adamw(p, m, v, g):
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.999 * v + 0.001 * g * g
    p2 = p - 1e-3 * (m2 / (jnp.sqrt(v2) + 1e-8) + 0.1 * p)
    return p2, m2, v2


def cases():
    bf, f32 = jnp.bfloat16, jnp.float32
    out = []
    for shape in ((128, 112, 112, 64), (128, 56, 56, 64), (128, 56, 56, 256), (128, 28, 28, 128),
                  (128, 28, 28, 512), (128, 14, 14, 256), (128, 14, 14, 1024), (128, 7, 7, 512),
                  (128, 7, 7, 2048)):
        c = shape[-1]
        vec = [((c,), f32)]
        out.append(("bn_stats", bn_stats, [(shape, bf)]))
        out.append(("bn_apply_relu", bn_apply_relu, [(shape, bf)] + vec * 4))
        out.append(("bn_backward", bn_backward, [(shape, bf), (shape, bf)] + vec * 3))
        out.append(("relu_grad", relu_grad, [(shape, bf), (shape, bf)]))
        out.append(("add_relu", add_relu, [(shape, bf), (shape, bf)]))
    for hidden, ffn in ((512, 1408), (1024, 2816), (2048, 5632)):
        x = (8, 1024, hidden)
        out.append(("rms_norm", rms_norm, [(x, bf), ((hidden,), f32)]))
        out.append(("silu_mul", silu_mul, [((8, 1024, ffn), bf), ((8, 1024, ffn), bf)]))
    for heads in (8, 16, 32):
        s = (8, heads, 1024, 1024)
        out.append(("softmax_causal", softmax_causal, [(s, bf)]))
        out.append(("softmax_backward", softmax_backward, [(s, bf), (s, bf)]))
    for n in (2 ** 20, 2 ** 23, 2 ** 26):
        out.append(("adamw", adamw, [((n,), f32)] * 4))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--loop-seconds", type=float, default=0.05)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print("jax", jax.__version__, "devices", jax.devices(), flush=True)
    key = jax.random.PRNGKey(0)
    rows = []
    fields = ["pattern", "shape", "kernels", "bytes_read", "bytes_written", "reduces", "transcendental",
              "time_us", "iters", "method", "kernel_us", "launches"]
    for index, (pattern, fn, specs) in enumerate(cases()):
        name = f"{pattern}.{'x'.join(map(str, specs[0][0]))}"
        try:
            args = []
            for i, (shape, dtype) in enumerate(specs):
                k = jax.random.fold_in(key, 100 * index + i)
                x = jax.random.normal(k, shape, dtype=jnp.float32)
                if pattern == "bn_backward" and i == 3:
                    x = jnp.abs(x) + 0.5
                if pattern == "adamw" and i == 2:
                    x = jnp.abs(x)
                args.append(x.astype(dtype))
            jitted = jax.jit(fn)
            lowered = jitted.lower(*args)
            with gzip.open(os.path.join(a.out, name + ".stablehlo.mlir.gz"), "wt", compresslevel=9) as f:
                f.write(lowered.as_text())
            compiled = lowered.compile()
            hlo = compiled.as_text()
            with gzip.open(os.path.join(a.out, name + ".hlo.txt.gz"), "wt", compresslevel=9) as f:
                f.write(hlo)
            kernels, read, written = kernel_bytes(hlo)
            reduces = " reduce(" in hlo
            transcendental = any(f" {op}(" in hlo for op in ("exponential", "log", "rsqrt", "sqrt", "tanh",
                                                            "logistic"))
            jax.block_until_ready(compiled(*args))
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            once = max(time.perf_counter() - t0, 1e-6)
            iters = max(5, min(2000, int(a.loop_seconds / once)))
            loops = []
            for _ in range(3):
                t0 = time.perf_counter()
                res = None
                for _ in range(iters):
                    res = compiled(*args)
                jax.block_until_ready(res)
                loops.append((time.perf_counter() - t0) / iters)
            t = statistics.median(loops)
            kernel_us, launches = "", ""
            try:
                tmp = tempfile.mkdtemp(prefix="fusion_")
                with jax.profiler.trace(tmp, create_perfetto_trace=True):
                    for _ in range(20):
                        res = compiled(*args)
                    jax.block_until_ready(res)
                found = glob.glob(os.path.join(tmp, "**", "perfetto_trace.json.gz"), recursive=True)
                events = trace_summary.gpu_events(trace_summary.load(found[0]))
                kernel_us = f"{sum(e['dur'] for e in events) / 20:.3f}"
                launches = f"{len(events) / 20:g}"
            except Exception as e:
                print(f"{name}: no trace ({e!r})", flush=True)
            row = dict(pattern=pattern, shape="x".join(map(str, specs[0][0])), kernels=kernels, bytes_read=read,
                       bytes_written=written, reduces=int(reduces), transcendental=int(transcendental),
                       time_us=f"{t * 1e6:.3f}", iters=iters, method="async_loop", kernel_us=kernel_us,
                       launches=launches)
            rows.append(row)
            print(f"{name}: {kernels} kernel(s), {(read + written) / 1e6:.1f} MB, {t * 1e6:.1f} us = "
                  f"{(read + written) / t / 1e9:.0f} GB/s; traced {kernel_us} us in {launches} launches",
                  flush=True)
        except Exception as e:
            print(f"{name}: FAILED {e!r}", flush=True)
            traceback.print_exc()
        with open(os.path.join(a.out, "fusions.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
    print(f"fusions: {len(rows)} rows", flush=True)


if __name__ == "__main__":
    sys.exit(main())
