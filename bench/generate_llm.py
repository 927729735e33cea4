#!/usr/bin/env python3
"""Generated LLM training steps at scale (docs/generate.md): `orrery generate llm`, then `orrery run`
on the generated scenario, one or two MPI processes. Prints a markdown table: generation time,
simulation wall time and peak RSS (of the run), events, the predicted step time and the model
FLOP rate per device it implies (model FLOPs of the step / step time / devices).

Usage: bench/generate_llm.py [--orrery build/release/orrery] [--quick] [--only TEXT] [--keep DIR]

--keep DIR keeps each case's `--summary-json` as DIR/<case number>.json (the compute, exposed
communication, idle and memory figures the notes in bench/RESULTS.md quote).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [
    # name, generate arguments, run --set overrides, processes
    ("llama3-8b, tp 8 x dp 128, 1,024 GPUs", ["--model", "llama3-8b", "--tp", "8", "--dp", "128",
                                              "--micro-batches", "4", "--seq", "8192"], [], 1),
    ("llama3-70b, tp 8 x pp 8 x dp 16, 1,024 GPUs", ["--model", "llama3-70b", "--tp", "8", "--pp", "8",
                                                    "--dp", "16", "--micro-batches", "32", "--seq", "4096"], [], 1),
    ("the same, 2 processes", ["--model", "llama3-70b", "--tp", "8", "--pp", "8", "--dp", "16",
                               "--micro-batches", "32", "--seq", "4096"], [], 2),
    ("the same, flow model", ["--model", "llama3-70b", "--tp", "8", "--pp", "8", "--dp", "16",
                              "--micro-batches", "32", "--seq", "4096"], ["network.model=flow"], 1),
    ("llama3-405b, tp 8 x pp 16 x dp 64, 8,192 GPUs", ["--model", "llama3-405b", "--tp", "8", "--pp", "16",
                                                       "--dp", "64", "--micro-batches", "16", "--seq", "8192"],
     [], 1),
    ("llama3-405b as the row above, 2 processes", ["--model", "llama3-405b", "--tp", "8", "--pp", "16",
                                                   "--dp", "64", "--micro-batches", "16", "--seq", "8192"], [], 2),
    ("llama3-70b as the second row, interleaved 1F1B (2 chunks per stage)",
     ["--model", "llama3-70b", "--tp", "8", "--pp", "8", "--dp", "16", "--micro-batches", "32", "--seq", "4096",
      "--virtual-stages", "2"], [], 1),
    ("llama3-70b as the second row, ZB-H1 zero-bubble schedule",
     ["--model", "llama3-70b", "--tp", "8", "--pp", "8", "--dp", "16", "--micro-batches", "32", "--seq", "4096",
      "--schedule", "zb-h1"], [], 1),
    ("llama3-70b as the second row, SP (sequence parallelism)",
     ["--model", "llama3-70b", "--tp", "8", "--pp", "8", "--dp", "16", "--micro-batches", "32", "--seq", "4096",
      "--sequence-parallel"], [], 1),
    ("llama3-70b as the second row, SP (sequence parallelism) with TP communication overlap",
     ["--model", "llama3-70b", "--tp", "8", "--pp", "8", "--dp", "16", "--micro-batches", "32", "--seq", "4096",
      "--sequence-parallel", "--tp-comm-overlap"], [], 1),
    ("llama3-70b as the second row, FP8 linear layers",
     ["--model", "llama3-70b", "--tp", "8", "--pp", "8", "--dp", "16", "--micro-batches", "32", "--seq", "4096",
      "--fp8"], [], 1),
    ("llama3-8b, 32K context, tp 8 x cp 4 x dp 32, 1,024 GPUs",
     ["--model", "llama3-8b", "--tp", "8", "--cp", "4", "--dp", "32", "--micro-batches", "2", "--seq", "32768"],
     [], 1),
    ("llama3-8b, 128K context, tp 8 (SP) x cp 4 x dp 8 (ZeRO-1), full recomputation, 256 GPUs: context parallelism "
     "across nodes, all-gather form",
     ["--model", "llama3-8b", "--tp", "8", "--sequence-parallel", "--cp", "4", "--dp", "8", "--recompute", "full",
      "--distributed-optimizer", "--seq", "131072"], [], 1),
    ("llama3-8b, 128K context, as the row above, ring form (`--cp-comm p2p`)",
     ["--model", "llama3-8b", "--tp", "8", "--sequence-parallel", "--cp", "4", "--dp", "8", "--recompute", "full",
      "--distributed-optimizer", "--seq", "131072", "--cp-comm", "p2p"], [], 1),
    ("llama3-8b, 128K context, tp 2 (SP) x cp 4 x dp 8 (ZeRO-1), full recomputation, 64 GPUs: context parallelism "
     "within a node, all-gather form",
     ["--model", "llama3-8b", "--tp", "2", "--sequence-parallel", "--cp", "4", "--dp", "8", "--recompute", "full",
      "--distributed-optimizer", "--seq", "131072"], [], 1),
    ("llama3-8b, 128K context, as the row above, ring form (`--cp-comm p2p`)",
     ["--model", "llama3-8b", "--tp", "2", "--sequence-parallel", "--cp", "4", "--dp", "8", "--recompute", "full",
      "--distributed-optimizer", "--seq", "131072", "--cp-comm", "p2p"], [], 1),
    ("llama3-8b, 128K context, as the row above, Ulysses form (`--cp-comm a2a`)",
     ["--model", "llama3-8b", "--tp", "2", "--sequence-parallel", "--cp", "4", "--dp", "8", "--recompute", "full",
      "--distributed-optimizer", "--seq", "131072", "--cp-comm", "a2a"], [], 1),
    ("llama3.2-3b (tied embeddings), tp 2 (SP) x pp 2 x dp 16 (ZeRO-1), 64 GPUs",
     ["--model", "llama3.2-3b", "--tp", "2", "--sequence-parallel", "--pp", "2", "--dp", "16",
      "--distributed-optimizer", "--micro-batches", "8", "--seq", "8192"], [], 1),
    ("llama3.2-3b as the row above, untied (`--untie-embeddings`)",
     ["--model", "llama3.2-3b", "--tp", "2", "--sequence-parallel", "--pp", "2", "--dp", "16",
      "--distributed-optimizer", "--micro-batches", "8", "--seq", "8192", "--untie-embeddings"], [], 1),
    ("llama3-8b, ZeRO-1 dp 256, 256 GPUs", ["--model", "llama3-8b", "--dp", "256", "--distributed-optimizer",
                                            "--seq", "8192"], [], 1),
    ("llama3-8b, FSDP dp 256, 256 GPUs", ["--model", "llama3-8b", "--dp", "256", "--fsdp", "--seq", "8192"], [], 1),
    ("llama3-8b, HSDP dp 256 (FSDP within each node of 8, replicated across the 32 nodes), 256 GPUs",
     ["--model", "llama3-8b", "--dp", "256", "--fsdp", "--shard-group", "8", "--seq", "8192"], [], 1),
    ("mixtral-8x7b, tp 2 (SP) x pp 4 x dp 32, ep 8, 256 GPUs",
     ["--model", "mixtral-8x7b", "--tp", "2", "--sequence-parallel", "--pp", "4", "--dp", "32", "--ep", "8",
      "--micro-batches", "16", "--seq", "4096"], [], 1),
    ("mixtral-8x22b, tp 8 (SP) x pp 8 (2 chunks) x dp 16 (ZeRO-1), ep 8, 1,024 GPUs",
     ["--model", "mixtral-8x22b", "--tp", "8", "--sequence-parallel", "--pp", "8", "--virtual-stages", "2",
      "--dp", "16", "--ep", "8", "--micro-batches", "32", "--seq", "4096", "--distributed-optimizer"], [], 1),
    ("deepseek-moe-16b (a dense first layer, 64 experts, 6 per token, shared experts), dp 32 (ZeRO-1), ep 8, "
     "256 GPUs",
     ["--model", "deepseek-moe-16b", "--dp", "32", "--ep", "8", "--distributed-optimizer", "--micro-batches", "8",
      "--seq", "4096"], [], 1),
    ("deepseek-v2-lite (as the row above with multi-head latent attention, 27 layers)",
     ["--model", "deepseek-v2-lite", "--dp", "32", "--ep", "8", "--distributed-optimizer", "--micro-batches", "8",
      "--seq", "4096"], [], 1),
    ("deepseek-v3, pp 16 x dp 128 (ZeRO-1), ep 64, full recomputation, 2,048 GPUs",
     ["--model", "deepseek-v3", "--pp", "16", "--dp", "128", "--ep", "64", "--distributed-optimizer",
      "--recompute", "full", "--micro-batches", "32", "--seq", "4096"], [], 1),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--orrery", default=os.path.join(ROOT, "build/release/orrery"))
    parser.add_argument("--quick", action="store_true", help="the first two cases only")
    parser.add_argument("--only", help="the cases whose name contains this text")
    parser.add_argument("--keep", help="a directory for each case's summary JSON")
    args = parser.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    cases = CASES[:2] if args.quick else CASES
    if args.only:
        cases = [case for case in cases if args.only in case[0]]
    mpirun = os.path.join(ROOT, "scripts/mpirun.sh")
    print("| job | processes | generate s | run wall s | peak RSS MB | events | step time s | model TFLOP/s per GPU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        for number, (name, gen_args, overrides, processes) in enumerate(cases, 1):
            out = os.path.join(work, name.split(",")[0])
            started = time.perf_counter()
            facts = json.loads(subprocess.run([args.orrery, "generate", "llm", *gen_args, "--out", out, "--json"],
                                              check=True, capture_output=True, text=True).stdout)
            generate_s = time.perf_counter() - started
            summary = os.path.join(work, "summary.json")
            command = [args.orrery, "--log-level", "warn", "run", os.path.join(out, "scenario.yaml"),
                       "--summary-json", summary]
            for override in overrides:
                command += ["--set", override]
            if processes > 1:
                command = [mpirun, "-np", str(processes)] + command
            # A fresh child per case measures the case's own peak RSS (the largest process).
            probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
                     "capture_output=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
            started = time.perf_counter()
            rss = int(subprocess.run([sys.executable, "-c", probe, *command], check=True, capture_output=True,
                                     text=True).stdout)
            wall = time.perf_counter() - started
            with open(summary) as f:
                s = json.load(f)
            if args.keep:
                with open(os.path.join(args.keep, f"{number}.json"), "w") as f:
                    json.dump({"name": name, **s}, f, indent=1)
            rate = facts["model_flops"] / s["step_time_s"] / facts["devices"] / 1e12
            print(f"| {name} | {processes} | {generate_s:.2f} | {wall:.1f} | {rss / 1024:.0f} | {s['events']:,} | "
                  f"{s['step_time_s']:.3f} | {rate:.0f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
