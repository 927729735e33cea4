"""How XLA's GPU backend splits reductions into kernels (its TreeReductionRewriter), compiled on the
lent GPU: single reductions (sums and maxima over rows, columns, whole tensors and batched rows, on
both sides of XLA's race-free bounds) each jitted alone. Nothing is timed: the compiled module says
how many kernels XLA launches and what the first kernel writes (its partial results).

For each case this writes a row of --out/reductions.csv:
  case, shape, dtype, axes, op    the reduction: jnp.sum or jnp.max of an array of that shape and
                                  type over those axes
  kernels                         the kernels of the compiled module's entry computation
  first_stage                     the result shape of the first reduction kernel (the partial
                                  results when XLA split the reduction; the result when it did not)
  bytes_read, bytes_written       what those kernels read and write (validation/gpu/hlo_kernels.py)
and --out/NAME.stablehlo.mlir.gz (the case as JAX exports it, for Orrery) and NAME.hlo.txt.gz
(XLA's compiled module). A case that fails is logged and skipped.
"""
import argparse
import csv
import gzip
import os
import re
import sys
import traceback

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlo_kernels  # noqa: E402

# (case, shape, dtype, axes, op)
CASES = [
    ("column_bn_56", (128, 56, 56, 64), "float32", (0, 1, 2), "sum"),
    ("column_bn_7", (128, 7, 7, 2048), "float32", (0, 1, 2), "sum"),
    ("column_4096", (4096, 64), "float32", (0,), "sum"),
    ("column_4097", (4097, 64), "float32", (0,), "sum"),
    ("column_10000", (10000, 128), "float32", (0,), "sum"),
    ("column_kept_major", (4, 10000, 32), "float32", (1,), "sum"),
    ("column_tokens", (8192, 512), "float32", (0,), "sum"),
    ("row_16384", (64, 16384), "float32", (1,), "sum"),
    ("row_16385", (64, 16385), "float32", (1,), "sum"),
    ("row_vocab", (8, 1024, 32000), "float32", (2,), "sum"),
    ("row_vocab_max", (8, 1024, 32000), "float32", (2,), "max"),
    ("row_vocab_llama3", (4096, 128256), "float32", (1,), "sum"),
    ("row_odd", (3, 100003), "float32", (1,), "sum"),
    ("row_batched_8", (8, 64, 1024), "float32", (0, 2), "sum"),
    ("row_batched_16", (16, 64, 1024), "float32", (0, 2), "sum"),
    ("full_1m", (1 << 20,), "float32", (0,), "sum"),
    ("full_2d", (1024, 1024), "float32", (0, 1), "sum"),
    ("full_small", (16384,), "float32", (0,), "sum"),
]


def reduce_fn(op, axes):
    if op == "sum":
        return lambda x: jnp.sum(x, axis=axes)
    return lambda x: jnp.max(x, axis=axes)


def first_stage(hlo):
    """The result shape of the entry computation's first kernel that calls a reduction."""
    computations = {}
    for m in re.finditer(r"^%(\S+) \([^\n]*\{\n(.*?)\n\}", hlo, re.S | re.M):
        computations[m.group(1)] = m.group(2)
    entry = hlo[hlo.index("ENTRY "):]
    for line in entry.splitlines():
        m = re.match(r"\s+(?:ROOT )?%\S+ = (.*?) fusion\(.*calls=%([^,\s]+)", line)
        if m and " reduce(" in computations.get(m.group(2), ""):
            return re.sub(r"\{[^}]*\}", "", m.group(1))
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for case, shape, dtype, axes, op in CASES:
        try:
            x = jax.ShapeDtypeStruct(shape, jnp.dtype(dtype))
            lowered = jax.jit(reduce_fn(op, axes)).lower(x)
            with gzip.open(os.path.join(args.out, case + ".stablehlo.mlir.gz"), "wt") as f:
                f.write(lowered.as_text())
            hlo = lowered.compile().as_text()
            with gzip.open(os.path.join(args.out, case + ".hlo.txt.gz"), "wt") as f:
                f.write(hlo)
            kernels = hlo_kernels.entry_kernels(hlo) or []
            row = {"case": case, "shape": "x".join(map(str, shape)), "dtype": dtype,
                   "axes": " ".join(map(str, axes)), "op": op, "kernels": len(kernels),
                   "first_stage": first_stage(hlo), "bytes_read": sum(k[2] for k in kernels),
                   "bytes_written": sum(k[3] for k in kernels)}
            rows.append(row)
            print(row, flush=True)
        except Exception:  # noqa: BLE001 - log and go on
            print(f"{case}: failed", flush=True)
            traceback.print_exc()
    with open(os.path.join(args.out, "reductions.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["case"])
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
