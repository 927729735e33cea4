"""The training steps of models.py timed two ways in one process, on the lent GPU: synchronously, each
step timed on the host clock to its `block_until_ready` (as programs.py times them), and
asynchronously, as a training loop runs them: 30 steps dispatched back to back, each taking the
previous step's state, and one `block_until_ready` at the end (the time per step is the total over
30; repeated 3 times, the median kept). The difference is what the host does per step while the GPU
waits for it (dispatching the executable with its arguments, and seeing the step end); the
asynchronous time is the GPU's own, which is what Orrery predicts.

Writes --out/NAME.async.json per program: sync_median_s, sync_times_s, async_per_step_s (the
median of the 3 loops), async_loops_s. No exports: programs.py writes the same StableHLO.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import programs  # noqa: E402

PROGRAMS = ["llama-60m", "llama-250m", "llama-900m", "resnet18", "resnet50"]


def run(name, out, steps, warmup, loops):
    rec = {"program": name, "ok": False}
    try:
        step, args = models.program(name)
        n_state = len(args) - 2  # the last two arguments are the batch
        compiled = jax.jit(step, donate_argnums=tuple(range(n_state))).lower(*args).compile()
        batch = args[n_state:]
        state = args[:n_state]
        for _ in range(warmup):
            res = compiled(*state, *batch)
            jax.block_until_ready(res)
            state = res[:n_state]
        times, state, _ = programs.synchronous_steps(compiled, state, batch, steps)
        per_step = []
        for _ in range(loops):
            t0 = time.perf_counter()
            for _ in range(steps):
                res = compiled(*state, *batch)
                state = res[:n_state]
            jax.block_until_ready(res)
            per_step.append((time.perf_counter() - t0) / steps)
        rec.update({"sync_times_s": times, "sync_median_s": statistics.median(times), "async_loops_s": per_step,
                    "async_per_step_s": statistics.median(per_step), "steps": steps, "warmup": warmup, "ok": True})
        print(f"{name}: synchronous median {rec['sync_median_s'] * 1e3:.3f} ms, asynchronous "
              f"{rec['async_per_step_s'] * 1e3:.3f} ms per step", flush=True)
    except Exception as e:  # noqa: BLE001 - log and go on
        rec["error"] = repr(e)
        traceback.print_exc()
    with open(os.path.join(out, name + ".async.json"), "w") as f:
        json.dump(rec, f, indent=1)
    jax.clear_caches()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--loops", type=int, default=3)
    ap.add_argument("programs", nargs="*", default=PROGRAMS)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.programs:
        run(name, a.out, a.steps, a.warmup, a.loops)


if __name__ == "__main__":
    main()
