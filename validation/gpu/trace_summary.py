"""Per-kernel summary of a program's profiler trace (validation/gpu/data/programs/NAME.trace.json.xz).

The trace holds three training steps recorded by jax.profiler (Perfetto JSON). This groups the GPU
kernels by name and by a class read off the name, per step:
  gemm         cuBLAS / cuBLASLt / CUTLASS matrix products (nvjet_*, *gemm* other than convolutions,
               XLA's Triton gemm_fusion_*)
  convolution  cuDNN convolutions (*fprop*, *dgrad*, *wgrad*, cudnn kernels)
  fusion       XLA's own kernels (loop_*, input_*, fusion_*, ...): elementwise, reduction, transpose
  copy         memcpy / memset
Usage: trace_summary.py TRACE [--csv OUT]   (prints the classes; --csv writes one row per kernel name)
"""
import argparse
import collections
import csv
import gzip
import json
import lzma
import re
import sys

STEPS = 3


def load(path):
    opener = lzma.open if path.endswith(".xz") else gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def gpu_events(trace):
    names = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e.get("pid")] = e.get("args", {}).get("name", "")
    gpu = {pid for pid, n in names.items() if "/device:GPU" in n}
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid") in gpu]


def kernel_class(name):
    n = name.lower()
    if re.search(r"fprop|dgrad|wgrad|cudnn|conv", n) and "convert" not in n:
        return "convolution"
    if n.startswith("nvjet") or "gemm" in n or "cublas" in n or "cutlass" in n or n.startswith("sm90_xmma"):
        return "gemm"
    if "memcpy" in n or "memset" in n:
        return "copy"
    return "fusion"


def summarise(path):
    events = gpu_events(load(path))
    if not events:
        raise SystemExit(f"{path}: no GPU kernel events")
    start = min(e["ts"] for e in events)
    end = max(e["ts"] + e["dur"] for e in events)
    per_name = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        per_name[e["name"]][0] += 1
        per_name[e["name"]][1] += e["dur"]
    classes = collections.defaultdict(lambda: [0, 0.0])
    for name, (count, dur) in per_name.items():
        c = classes[kernel_class(name)]
        c[0] += count
        c[1] += dur
    # The steps' kernels, split at the STEPS - 1 longest idle gaps (the host's work between steps):
    # each step's span from its first kernel's start to its last kernel's end.
    ordered = sorted(events, key=lambda e: e["ts"])
    ends = []
    last = ordered[0]["ts"]
    for e in ordered:
        ends.append(last)
        last = max(last, e["ts"] + e["dur"])
    gaps = sorted(range(1, len(ordered)), key=lambda i: ordered[i]["ts"] - ends[i], reverse=True)[:STEPS - 1]
    bounds = [0] + sorted(gaps) + [len(ordered)]
    spans = sorted(ends[b] - ordered[a]["ts"] if b < len(ordered) else last - ordered[a]["ts"]
                   for a, b in zip(bounds, bounds[1:]))
    return {
        "kernels_per_step": len(events) / STEPS,
        "gpu_step_s": spans[len(spans) // 2] * 1e-6,  # the median step's span on the GPU
        "busy_s_per_step": sum(e["dur"] for e in events) / STEPS * 1e-6,
        "span_s_per_step": (end - start) / STEPS * 1e-6,
        "classes": {k: {"kernels": v[0] / STEPS, "seconds": v[1] / STEPS * 1e-6} for k, v in classes.items()},
        "per_name": per_name,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--csv")
    a = ap.parse_args()
    s = summarise(a.trace)
    print(f"{a.trace}: {s['kernels_per_step']:.0f} kernels per step, busy {s['busy_s_per_step'] * 1e3:.3f} ms, "
          f"span {s['span_s_per_step'] * 1e3:.3f} ms per step")
    for k, v in sorted(s["classes"].items(), key=lambda kv: -kv[1]["seconds"]):
        print(f"  {k:12s} {v['kernels']:7.0f} kernels {v['seconds'] * 1e3:9.3f} ms")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["kernel", "class", "calls_per_step", "seconds_per_step"])
            for name, (count, dur) in sorted(s["per_name"].items(), key=lambda kv: -kv[1][1]):
                w.writerow([name, kernel_class(name), count / STEPS, f"{dur / STEPS * 1e-6:.9f}"])


if __name__ == "__main__":
    sys.exit(main())
