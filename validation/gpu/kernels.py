"""Kernel timings for the table estimator, measured with PyTorch (cuBLAS / cuDNN / its own kernels).

Writes raw CSVs under --out (tools/gpu_table.py converts them into Orrery's table format):
  matmul.csv       dtype,m,n,k,time_us,iters,method  — bf16, f32 (TF32 off) and tf32, M, N, K each
                   over 64, 128, ..., 16384
  elementwise.csv  op,dtype,elements,time_us,iters,method — add (two inputs), mul by a scalar,
                   exp, gelu (tanh), silu, copy (device to device), convert f32<->bf16
  reduction.csv    op,dtype,rows,cols,time_us,iters,method — sum over the last dimension (f32
                   accumulation), softmax, layer_norm, rms_norm over rows of cols
  conv.csv         pass,dtype,n,c,h,w,k,r,s,stride,pad,time_us,iters,method — the convolutions of
                   ResNet-18/50 at batch 128 (fwd, dgrad = input gradient, wgrad = weight gradient),
                   channels-last, cuDNN benchmark mode
Timing: CUDA events around a loop of back-to-back calls on fixed buffers, after a warm-up; calls
under 200 us are captured in a CUDA graph and its replays timed (no host launch gaps). The median
of 3 such loops is reported, per call. Inputs are random normal (never zeros).
"""
import argparse
import csv
import math
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

DEV = "cuda"


def timed(fn, target_ms=3.0, repeats=3):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    one = max(s.elapsed_time(e), 1e-4)  # ms
    iters = int(max(2, min(1000, target_ms / one)))
    method = "eager"
    body = fn
    if one < 0.2:
        try:
            g = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(g):
                for _ in range(iters):
                    fn()
            g.replay()
            torch.cuda.synchronize()
            body, method = g.replay, "graph"
        except Exception:
            body, method = fn, "eager"
    samples = []
    for _ in range(repeats):
        s.record()
        if method == "graph":
            body()
        else:
            for _ in range(iters):
                body()
        e.record()
        e.synchronize()
        samples.append(s.elapsed_time(e) * 1e3 / iters)
    return statistics.median(samples), iters, method


SIZES = [64 * 2 ** i for i in range(9)]  # 64 .. 16384


def matmul(out, deadline):
    rows = []
    for dtype_name in ("bf16", "tf32", "f32"):
        dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
        torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
        for m in SIZES:
            for n in SIZES:
                for k in SIZES:
                    if time.time() > deadline:
                        print("matmul: deadline reached", flush=True)
                        return rows
                    a = torch.randn(m, k, device=DEV, dtype=dtype)
                    b = torch.randn(k, n, device=DEV, dtype=dtype)
                    c = torch.empty(m, n, device=DEV, dtype=dtype)
                    t, it, meth = timed(lambda: torch.matmul(a, b, out=c))
                    rows.append((dtype_name, m, n, k, f"{t:.3f}", it, meth))
                    del a, b, c
        big = [r for r in rows if r[0] == dtype_name and r[1] == r[2] == r[3] == 8192]
        if big:
            us = float(big[0][4])
            print(f"matmul {dtype_name} 8192^3: {us:.1f} us = {2 * 8192 ** 3 / us / 1e6:.0f} TFLOP/s", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def elementwise(out):
    rows = []
    for dtype_name, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        for p in range(10, 31, 2):
            n = 2 ** p
            a = torch.randn(n, device=DEV, dtype=dtype)
            b = torch.randn(n, device=DEV, dtype=dtype)
            c = torch.empty(n, device=DEV, dtype=dtype)
            other = torch.empty(n, device=DEV, dtype=torch.float32 if dtype_name == "bf16" else torch.bfloat16)
            ops = {
                "add": lambda: torch.add(a, b, out=c),
                "mul_scalar": lambda: torch.mul(a, 0.5, out=c),
                "exp": lambda: torch.exp(a, out=c),
                "gelu_tanh": lambda: torch.ops.aten.gelu.out(a, approximate="tanh", out=c),
                "silu": lambda: torch.ops.aten.silu.out(a, out=c),
                "copy": lambda: c.copy_(a),
                "convert": lambda: other.copy_(a),
            }
            for op, fn in ops.items():
                t, it, meth = timed(fn)
                rows.append((op, dtype_name, n, f"{t:.3f}", it, meth))
            del a, b, c, other
        r = [x for x in rows if x[0] == "copy" and x[1] == dtype_name and x[2] == 2 ** 30]
        if r:
            us = float(r[0][3])
            width = 2 if dtype_name == "bf16" else 4
            print(f"copy {dtype_name} 2^30 elements: {us:.1f} us = {2 * width * 2 ** 30 / us / 1e3:.0f} GB/s "
                  "(read + write)", flush=True)
    return rows


def reduction(out):
    rows = []
    shapes = [(r, c) for r in (1, 64, 1024, 8192, 65536) for c in (64, 256, 1024, 4096, 16384, 65536)
              if r * c <= 2 ** 30]
    for dtype_name, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        for r, c in shapes:
            x = torch.randn(r, c, device=DEV, dtype=dtype)
            g = torch.randn(c, device=DEV, dtype=dtype)
            bias = torch.randn(c, device=DEV, dtype=dtype)
            s = torch.empty(r, device=DEV, dtype=torch.float32)
            y = torch.empty(r, c, device=DEV, dtype=dtype)
            ops = {
                "sum": lambda: torch.sum(x, dim=-1, dtype=torch.float32, out=s),
                "softmax": lambda: torch.ops.aten._softmax.out(x, -1, False, out=y),
                "layer_norm": lambda: F.layer_norm(x, (c,), g, bias),
                "rms_norm": lambda: F.rms_norm(x, (c,), g),
            }
            for op, fn in ops.items():
                try:
                    t, it, meth = timed(fn)
                    rows.append((op, dtype_name, r, c, f"{t:.3f}", it, meth))
                except Exception as e:
                    print(f"reduction {op} {dtype_name} {r}x{c}: {e!r}", flush=True)
            del x, g, bias, s, y
    return rows


def resnet_convs(batch=128):
    """(n, c, h, w, k, r, s, stride, pad) of ResNet-18 and ResNet-50 v1.5 at 224x224."""
    convs = {(batch, 3, 224, 224, 64, 7, 7, 2, 3)}
    for block, stages in (("basic", (2, 2, 2, 2)), ("bottleneck", (3, 4, 6, 3))):
        cin, hw = 64, 56
        exp = 4 if block == "bottleneck" else 1
        for si, nb in enumerate(stages):
            width = 64 * 2 ** si
            for bi in range(nb):
                stride = 2 if (bi == 0 and si > 0) else 1
                out_hw = hw // stride
                cout = width * exp
                if block == "bottleneck":
                    convs.add((batch, cin, hw, hw, width, 1, 1, 1, 0))
                    convs.add((batch, width, hw, hw, width, 3, 3, stride, 1))
                    convs.add((batch, width, out_hw, out_hw, cout, 1, 1, 1, 0))
                else:
                    convs.add((batch, cin, hw, hw, width, 3, 3, stride, 1))
                    convs.add((batch, width, out_hw, out_hw, width, 3, 3, 1, 1))
                if stride != 1 or cin != cout:
                    convs.add((batch, cin, hw, hw, cout, 1, 1, stride, 0))
                cin, hw = cout, out_hw
    return sorted(convs)


CONV_BATCHES = [128]


def conv(out):
    torch.backends.cudnn.benchmark = True
    rows = []
    layers = sorted({layer for b in CONV_BATCHES for layer in resnet_convs(b)})
    for (n, c, h, w, k, r, s, stride, pad) in layers:
        x = torch.randn(n, c, h, w, device=DEV, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
        wt = torch.randn(k, c, r, s, device=DEV, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
        y = F.conv2d(x, wt, stride=stride, padding=pad)
        gy = torch.randn_like(y)
        passes = {
            "fwd": lambda: F.conv2d(x, wt, stride=stride, padding=pad),
            "dgrad": lambda: torch.ops.aten.convolution_backward(gy, x, wt, None, [stride, stride], [pad, pad],
                                                                 [1, 1], False, [0, 0], 1, [True, False, False]),
            "wgrad": lambda: torch.ops.aten.convolution_backward(gy, x, wt, None, [stride, stride], [pad, pad],
                                                                 [1, 1], False, [0, 0], 1, [False, True, False]),
        }
        for name, fn in passes.items():
            try:
                t, it, meth = timed(fn)
                rows.append((name, "bf16", n, c, h, w, k, r, s, stride, pad, f"{t:.3f}", it, meth))
            except Exception as e:
                print(f"conv {name} {(n, c, h, w, k, r, s, stride, pad)}: {e!r}", flush=True)
        del x, wt, y, gy
    return rows


HEADERS = {
    "matmul": "dtype,m,n,k,time_us,iters,method",
    "elementwise": "op,dtype,elements,time_us,iters,method",
    "reduction": "op,dtype,rows,cols,time_us,iters,method",
    "conv": "pass,dtype,n,c,h,w,k,r,s,stride,pad,time_us,iters,method",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--matmul-seconds", type=float, default=150)
    ap.add_argument("--conv-batches", default="128", help="batch sizes of the ResNet convolutions (comma-separated)")
    ap.add_argument("families", nargs="*", default=["elementwise", "reduction", "conv", "matmul"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    CONV_BATCHES[:] = [int(b) for b in a.conv_batches.split(",")]
    torch.manual_seed(0)
    print("torch", torch.__version__, torch.cuda.get_device_name(0), "cuBLAS/cuDNN",
          torch.backends.cudnn.version(), flush=True)
    for fam in a.families:
        t0 = time.time()
        try:
            if fam == "matmul":
                rows = matmul(a.out, time.time() + a.matmul_seconds)
            else:
                rows = globals()[fam](a.out)
        except Exception:
            traceback.print_exc()
            rows = []
        with open(os.path.join(a.out, fam + ".csv"), "w", newline="") as f:
            f.write(HEADERS[fam] + "\n")
            csv.writer(f).writerows(rows)
        print(f"{fam}: {len(rows)} rows in {time.time() - t0:.1f} s", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
