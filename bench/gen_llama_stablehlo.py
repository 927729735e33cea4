#!/usr/bin/python3
"""Builds a large StableHLO file from the real Llama3-100M module, for the frontend benchmark.

The body of @main (every layer of the training step: ~6200 ops, 372 collectives) is repeated
until the file reaches --mb megabytes. Copy k renames its SSA values so that every name is
defined once: %N becomes %(N + k * stride) and %name becomes %name_rK; function arguments
(%argN) are shared by all copies, as the weights of replicated layers would be. The helper
functions and the module header are kept once, and main's return (which names copy 0's values)
closes the function. The result is a valid module of the same op mix as the original.

Usage: bench/gen_llama_stablehlo.py [--mb 200] [--source PATH] [--out build/bench/llama3-100m-big.mlir]
The output is a generated benchmark input: write it under build/ or /tmp, never commit it.
"""
import argparse
import os
import re
import sys

DEFAULT_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "stablehlo",
                              "hespas_workloads", "llama3-100m.post-spmd-4dev.mlir")

NUMBER = re.compile(r"%([0-9]+)")
NAMED = re.compile(r"%([A-Za-z_][A-Za-z0-9_$.\-]*)")
ARGUMENT = re.compile(r"arg[0-9]+$")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200.0, help="minimum output size in MB (10^6 bytes)")
    parser.add_argument("--source", default=DEFAULT_SOURCE)
    parser.add_argument("--out", default="build/bench/llama3-100m-big.mlir")
    args = parser.parse_args()

    with open(args.source) as f:
        lines = f.readlines()
    main_line = next(i for i, line in enumerate(lines) if line.lstrip().startswith("func.func @main("))
    return_line = max(i for i, line in enumerate(lines) if line.startswith("    return "))
    head = lines[:main_line + 1]
    body = lines[main_line + 1:return_line]
    tail = lines[return_line:]
    body_text = "".join(body)
    stride = max(int(n) for n in NUMBER.findall(body_text)) + 1

    def renamed(k):
        if k == 0:
            return body_text
        text = NUMBER.sub(lambda m: "%" + str(int(m.group(1)) + k * stride), body_text)
        return NAMED.sub(lambda m: m.group(0) if ARGUMENT.match(m.group(1)) else m.group(0) + "_r" + str(k), text)

    target = args.mb * 1e6
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    written = 0
    copies = 0
    with open(args.out, "w") as out:
        for line in head:
            out.write(line)
            written += len(line)
        tail_bytes = sum(len(line) for line in tail)
        while copies == 0 or written + tail_bytes < target:
            chunk = renamed(copies)
            out.write(chunk)
            written += len(chunk)
            copies += 1
        for line in tail:
            out.write(line)
            written += len(line)
    print(f"{args.out}: {written / 1e6:.1f} MB, {copies} copies of @main's body "
          f"({len(body)} lines each, SSA stride {stride})", file=sys.stderr)


if __name__ == "__main__":
    main()
