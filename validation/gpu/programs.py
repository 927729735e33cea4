"""Single-device programs on the GPU: StableHLO export, XLA-optimised HLO, measured step time.

For each program of models.PROGRAMS this writes, under --out:
  NAME.stablehlo.mlir.gz   jax.jit(step).lower(...).as_text()  (before XLA optimises it)
  NAME.hlo.txt.gz          lowered.compile().as_text()          (XLA's optimised HLO for this GPU)
  NAME.json                step times (warm-up, then each of --steps steps timed on the host
                           clock with block_until_ready), compile time, XLA's cost and memory
                           analysis, parameter count, loss before and after
  NAME.trace.json.gz       a Perfetto trace of three steps from jax.profiler (kernel names and times)
Each program is independent: an error in one is recorded in its JSON and the next one runs.
"""
import argparse
import glob
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def write_gz(path, text):
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
        f.write(text)


def _plain(x):
    try:
        return float(x)
    except Exception:
        return str(x)


def synchronous_steps(compiled, state, batch, steps):
    """Runs `steps` steps, each timed on the host clock to its block_until_ready; returns the times,
    the last state and the last results (the state is the results but the loss)."""
    times = []
    res = None
    for _ in range(steps):
        t0 = time.perf_counter()
        res = compiled(*state, *batch)
        jax.block_until_ready(res)
        times.append(time.perf_counter() - t0)
        state = res[:len(state)]
    return times, state, res


def run(name, out, steps, warmup, trace):
    rec = {"program": name, "ok": False}
    try:
        step, args = models.program(name)
        rec["parameters"] = models.param_count(args[0])
        n_state = len(args) - 2  # the last two arguments are the batch
        jitted = jax.jit(step, donate_argnums=tuple(range(n_state)))
        t0 = time.perf_counter()
        lowered = jitted.lower(*args)
        rec["lower_s"] = time.perf_counter() - t0
        write_gz(os.path.join(out, name + ".stablehlo.mlir.gz"), lowered.as_text())
        t0 = time.perf_counter()
        compiled = lowered.compile()
        rec["compile_s"] = time.perf_counter() - t0
        write_gz(os.path.join(out, name + ".hlo.txt.gz"), compiled.as_text())
        try:
            ca = compiled.cost_analysis()
            if isinstance(ca, (list, tuple)):
                ca = ca[0] if ca else {}
            rec["xla_cost_analysis"] = {k: _plain(v) for k, v in dict(ca).items()
                                        if k in ("flops", "bytes accessed", "transcendentals",
                                                 "optimal_seconds", "utilization")}
        except Exception as e:  # informative only
            rec["xla_cost_analysis_error"] = repr(e)
        try:
            ma = compiled.memory_analysis()
            rec["xla_memory_analysis"] = {k: int(getattr(ma, k)) for k in dir(ma)
                                          if k.endswith("_in_bytes") and not k.startswith("_")}
        except Exception as e:
            rec["xla_memory_analysis_error"] = repr(e)

        batch = args[n_state:]
        state = args[:n_state]
        losses = []
        for _ in range(warmup):
            res = compiled(*state, *batch)
            jax.block_until_ready(res)
            state, loss = res[:n_state], res[-1]
            losses.append(float(loss))
        times, state, res = synchronous_steps(compiled, state, batch, steps)
        losses.append(float(res[-1]))
        rec["loss_first"], rec["loss_last"] = losses[0], losses[-1]
        rec["finite"] = bool(np.isfinite(losses).all())
        rec["step_times_s"] = times
        rec["median_s"] = statistics.median(times)
        rec["min_s"], rec["max_s"] = min(times), max(times)
        q = np.percentile(times, [10, 90])
        rec["p10_s"], rec["p90_s"] = float(q[0]), float(q[1])
        rec["warmup_steps"], rec["timed_steps"] = warmup, steps
        rec["ok"] = True
        print(f"{name}: {rec['parameters'] / 1e6:.1f} M parameters, compile {rec['compile_s']:.1f} s, "
              f"median {rec['median_s'] * 1e3:.3f} ms (min {rec['min_s'] * 1e3:.3f}, "
              f"max {rec['max_s'] * 1e3:.3f}), loss {losses[0]:.3f} -> {losses[-1]:.3f}", flush=True)
        if trace:
            try:
                tmp = tempfile.mkdtemp(prefix="trace_" + name)
                with jax.profiler.trace(tmp, create_perfetto_trace=True):
                    for _ in range(3):
                        res = compiled(*state, *batch)
                        jax.block_until_ready(res)
                        state = res[:n_state]
                found = glob.glob(os.path.join(tmp, "**", "perfetto_trace.json.gz"), recursive=True)
                if found and os.path.getsize(found[0]) < 12 * 2 ** 20:
                    shutil.copy(found[0], os.path.join(out, name + ".trace.json.gz"))
                    rec["trace"] = name + ".trace.json.gz"
                else:
                    rec["trace_error"] = "no perfetto trace or over 12 MiB: " + repr(
                        [(f, os.path.getsize(f)) for f in found])
            except Exception as e:
                rec["trace_error"] = repr(e)
    except Exception as e:
        rec["error"] = repr(e)
        rec["traceback"] = traceback.format_exc()
        print(f"{name}: FAILED {e!r}", flush=True)
        traceback.print_exc()
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(rec, f, indent=1)
    jax.clear_caches()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-trace", action="store_true")
    ap.add_argument("programs", nargs="*", default=models.PROGRAMS)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print("jax", jax.__version__, "devices", jax.devices(), flush=True)
    for name in a.programs:
        run(name, a.out, a.steps, a.warmup, not a.no_trace)


if __name__ == "__main__":
    main()
