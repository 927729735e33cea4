#!/usr/bin/env python3
"""Collectives against measurements: NCCL all-reduce and send/recv on a DGX A100 (Vidur's
../shared/data/compute/vidur/network/a100_dgx, median of the measured times, in ms; `size` in
bytes) versus Orrery's prediction on an 8 x A100 NVSwitch node.

For every measured size (a log-spaced subset) it writes a StableHLO module holding one collective
of that size (an all_reduce over all replicas, or a collective_permute 0 -> 1 for send/recv) and
runs `orrery run` on it; the step time is the collective's time. Two system descriptions:

  datasheet  NVLink 3 at its datasheet 300 GB/s per GPU and direction, 1 us injection delay,
             NVSwitch latency 1 us, no launch costs, reductions at the HBM bandwidth (no fitting);
  fitted     per primitive, by least squares in log time:
             1. on the send/recv rows, what moving data costs: the achievable NVLink bandwidth and
                the point-to-point launch cost (system.p2p_launch_ns: NCCL's send/recv kernel
                launch and setup, which a permute pays);
             2. with that bandwidth, on the 2- and 4-GPU all-reduce rows, what an all-reduce adds:
                the rate at which a GPU reduces what it receives (system.reduction_GBps: NCCL's
                reduce-copy is slower than a copy) and the collective launch cost
                (system.collective_launch_ns).
             The 8-GPU all-reduce rows are predictions it was not fitted on. A launch cost adds a
             constant to an isolated collective (tests/system/simulation_test.cpp checks it), so
             the fit scans it without rerunning Orrery; each bandwidth and reduction rate of the
             grids is a real run.

Writes a Markdown section to stdout (tools/validate.sh puts it in docs/validation/end-to-end.md).
"""
import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd

MODULE = """module @collective attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = {p} : i32}} {{
  func.func public @main(%arg0: tensor<{n}xf32>) -> tensor<{n}xf32> {{
    %0 = {op}
    return %0 : tensor<{n}xf32>
  }}
}}
"""
ALL_REDUCE = """"stablehlo.all_reduce"(%arg0) ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }}) {{replica_groups = dense<[[{group}]]> : tensor<1x{p}xi64>}} : (tensor<{n}xf32>) -> tensor<{n}xf32>"""
PERMUTE = """"stablehlo.collective_permute"(%arg0) {{source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>}} : (tensor<{n}xf32>) -> tensor<{n}xf32>"""

SCENARIO = """hardware: A100_80GB
system:
  devices_per_node: {p}
  scale_up: {{bandwidth_GBps: {bandwidth}, latency_ns: {latency}}}
  endpoint_delay_ns: {delay}
  collective_launch_ns: {launch}
  p2p_launch_ns: {p2p_launch}
  chunks: 1
  reduction_GBps: {reduction}
network: {{topology: {{kind: none}}, model: flow}}
workload:
  programs: [{{file: {module}, ranks: all}}]
"""


def predict(orrery, workdir, kind, p, size, system):
    """The time of one collective (ms); `system` holds the scenario's bandwidth, latency, delay,
    launch, p2p_launch and reduction (GB/s, 0: the HBM bandwidth)."""
    workdir = tempfile.mkdtemp(dir=workdir)  # calls run concurrently
    n = max(1, size // 4)
    if kind == "all_reduce":
        op = ALL_REDUCE.format(n=n, p=p, group=", ".join(str(i) for i in range(p)))
    else:
        op = PERMUTE.format(n=n)
    module = os.path.join(workdir, "collective.mlir")
    with open(module, "w") as f:
        f.write(MODULE.format(n=n, p=p, op=op))
    scenario = os.path.join(workdir, "scenario.yaml")
    with open(scenario, "w") as f:
        f.write(SCENARIO.format(p=p, module=module, **system))
    summary = os.path.join(workdir, "summary.json")
    subprocess.run([orrery, "--log-level", "warn", "run", scenario, "--summary-json", summary],
                   check=True, stdout=subprocess.DEVNULL)
    with open(summary) as f:
        return json.load(f)["step_time_s"] * 1e3  # ms


def measured(data, kind, p, per_node, sizes):
    frame = pd.read_csv(os.path.join(data, f"{kind}.csv"))
    frame = frame[(frame.num_workers == p) & (frame.devices_per_node == per_node)]
    frame = frame.groupby("size")[f"time_stats.{kind}.median"].median()
    chosen = []
    for target in sizes:
        index = int(np.argmin(np.abs(np.log(frame.index.values) - math.log(target))))
        chosen.append(int(frame.index.values[index]))
    chosen = sorted(set(chosen))
    return [(s, float(frame.loc[s])) for s in chosen]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orrery", required=True)
    parser.add_argument("--data", required=True, help="../shared/data")
    parser.add_argument("--points", type=int, default=12, help="sizes per configuration (log-spaced)")
    parser.add_argument("--fit-out", help="write the fitted constants here (JSON) for the end-to-end step")
    args = parser.parse_args()
    nccl = os.path.join(args.data, "compute/vidur/network/a100_dgx")
    sizes = np.geomspace(2048, 64 << 20, args.points)
    cases = [("all_reduce", 2, 2), ("all_reduce", 4, 4), ("all_reduce", 8, 8), ("send_recv", 2, 2)]
    rows = {case: measured(nccl, case[0], case[1], case[2], sizes) for case in cases}

    with tempfile.TemporaryDirectory() as workdir, concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        def run_case(case, system):
            kind, p, _ = case
            # Each run is mostly process start-up (MPI initialisation), so several run at once.
            return list(pool.map(lambda size: predict(args.orrery, workdir, kind, p, size, system),
                                 [size for size, _ in rows[case]]))

        def fit_launch(cases_and_times):
            """The launch cost (ns, 500 ns steps) that, added to every time, best fits the cases."""
            best = None
            for launch in np.arange(0, 40001, 500):
                error = sum((math.log(a + launch * 1e-6) - math.log(m)) ** 2
                            for case, times in cases_and_times for a, (_, m) in zip(times, rows[case]))
                if best is None or error < best[0]:
                    best = (error, int(launch))
            return best

        # The injection delay and NVSwitch latency stay at 1 us (a transfer's own start-up).
        base = {"bandwidth": 300, "latency": 1000, "delay": 1000, "launch": 0, "p2p_launch": 0, "reduction": 0}
        send_recv = cases[3]
        all_reduces = [cases[0], cases[1]]
        # 1. Moving data, on send/recv: NVLink bandwidth (grid) and point-to-point launch cost.
        best = None
        for bandwidth in range(150, 301, 10):
            error, launch = fit_launch([(send_recv, run_case(send_recv, dict(base, bandwidth=bandwidth)))])
            if best is None or error < best[0]:
                best = (error, launch, bandwidth)
        _, p2p_launch, bandwidth = best
        # 2. What an all-reduce adds, on the 2- and 4-GPU all-reduces at that bandwidth: the
        # reduction rate (grid) and the collective launch cost.
        best = None
        for reduction in (100, 125, 150, 175, 200, 225, 250, 300, 350, 400, 500, 600, 800, 1000, 1500, 2000):
            system = dict(base, bandwidth=bandwidth, reduction=reduction)
            error, launch = fit_launch([(case, run_case(case, system)) for case in all_reduces])
            if best is None or error < best[0]:
                best = (error, launch, reduction)
        _, launch, reduction = best
        fit = {"collective_launch_ns": launch, "p2p_launch_ns": p2p_launch, "reduction_GBps": reduction,
               "nvlink_GBps": bandwidth}
        settings = {"datasheet": base,
                    "fitted": dict(base, bandwidth=bandwidth, launch=launch, p2p_launch=p2p_launch, reduction=reduction)}
        fitted_on = {send_recv: "in sample (bandwidth, p2p launch)", cases[0]: "in sample (reduction, launch)",
                     cases[1]: "in sample (reduction, launch)", cases[2]: "out of sample"}
        if args.fit_out:
            with open(args.fit_out, "w") as f:
                json.dump(fit, f)

        print("## Collectives against NCCL on a DGX A100\n")
        print("Measured: median NCCL times from Vidur's DGX A100 profiling (8 x A100 SXM 80GB on NVSwitch); "
              "`size` is bytes per rank. Predicted: `orrery run` on a one-collective StableHLO module, flow "
              "network model, one chunk (send/recv: a collective_permute 0 -> 1, which XLA runs as NCCL "
              "send and recv).\n")
        print("- **datasheet**: NVLink 3 at 300 GB/s per GPU and direction, 1000 ns injection delay, 1000 ns "
              "NVSwitch latency, no launch costs, reductions at the A100_80GB preset's HBM bandwidth.")
        print(f"- **fitted** per primitive (grid searches, least squares in log time; injection delay and NVSwitch "
              f"latency as above): on the send/recv rows, what moving data costs — achievable NVLink bandwidth "
              f"{bandwidth} GB/s and point-to-point launch cost {p2p_launch} ns (`system.p2p_launch_ns`); then, "
              f"at that bandwidth, on the 2- and 4-GPU all-reduce rows, what an all-reduce adds — reduction rate "
              f"{reduction} GB/s (`system.reduction_GBps`: NCCL's reduce-copy runs slower than a copy) and "
              f"collective launch cost {launch} ns (`system.collective_launch_ns`). The 8-GPU all-reduce rows "
              f"are out of sample.\n")
        summary = []
        for case in cases:
            kind, p, _ = case
            predictions = {name: run_case(case, system) for name, system in settings.items()}
            print(f"### {kind}, {p} GPUs in one node\n")
            print("| bytes | measured ms | datasheet ms | error | fitted ms | error |")
            print("|---:|---:|---:|---:|---:|---:|")
            errors = {name: [] for name in settings}
            for i, (size, value) in enumerate(rows[case]):
                cells = [f"{size}", f"{value:.4f}"]
                for name in settings:
                    predicted = predictions[name][i]
                    relative = (predicted - value) / value
                    errors[name].append(abs(relative))
                    cells += [f"{predicted:.4f}", f"{relative:+.1%}"]
                print("| " + " | ".join(cells) + " |")
            medians = {name: float(np.median(e)) for name, e in errors.items()}
            summary.append((f"{kind} {p} GPUs", medians["datasheet"], medians["fitted"],
                            fitted_on[case]))
            print()
        print("### Summary: median absolute relative error\n")
        print("| collective | datasheet | fitted | fitted on it? |")
        print("|---|---:|---:|---|")
        for name, datasheet, fitted, sample in summary:
            print(f"| {name} | {datasheet:.1%} | {fitted:.1%} | {sample} |")
        print()


if __name__ == "__main__":
    sys.exit(main())
