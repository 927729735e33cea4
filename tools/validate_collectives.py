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

Then the same collectives across two nodes (the rows with fewer devices per node than workers): the
NIC bandwidth and per-hop fabric latency fitted on the cross-node send/recv rows, the cross-node
all-reduces predicted out of sample with eight NICs per node (a DGX A100's) and, as a what-if, one.

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

ONE_NODE = "{topology: {kind: none}, model: flow}"
DGX_A100_NICS = 8          # per node, one per GPU
DGX_A100_NIC_GBPS = 25     # 200 Gb/s HDR InfiniBand (../shared/reference/hardware.md)
# Two nodes on one switch; each node's devices reach it through `rails` NICs (device d: NIC d mod rails).
TWO_NODES = ("{{topology: {{kind: switch, nodes: 2, link_GBps: {nic}, latency_ns: {fabric_latency}}}, "
             "nic: {{rails: {rails}, bandwidth_GBps: {nic}, latency_ns: 0}}, model: flow}}")

SCENARIO = """hardware: A100_80GB
system:
  devices_per_node: {per_node}
  scale_up: {{bandwidth_GBps: {bandwidth}, latency_ns: {latency}}}
  endpoint_delay_ns: {delay}
  collective_launch_ns: {launch}
  p2p_launch_ns: {p2p_launch}
  chunks: 1
  reduction_GBps: {reduction}
network: {network}
workload:
  programs: [{{file: {module}, ranks: all}}]
"""


def predict(orrery, workdir, kind, p, size, system):
    """The time of one collective (ms); `system` holds the scenario's bandwidth, latency, delay,
    launch, p2p_launch, reduction (GB/s, 0: the HBM bandwidth), per_node and network."""
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
        f.write(SCENARIO.format(module=module, **system))
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
            kind, p, per_node = case
            system = dict(system, per_node=per_node)
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
        base = {"bandwidth": 300, "latency": 1000, "delay": 1000, "launch": 0, "p2p_launch": 0, "reduction": 0,
                "network": ONE_NODE}
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

        two_nodes(nccl, sizes, rows, settings["fitted"], run_case)


def two_nodes(nccl, sizes, rows, fitted, run_case):
    """The same collectives across two DGX A100 nodes (Vidur's rows with fewer devices per node than
    workers). The source does not describe the fabric between the nodes, so the scale-out side is
    fitted on the one cross-node send/recv row set (NIC bandwidth and per-hop fabric latency, with
    the one-node constants fixed), and the all-reduces over 2 x 1, 2 x 2, 2 x 4 and 2 x 8 GPUs are
    predicted out of sample: with the DGX A100's eight NICs (one per GPU, 200 Gb/s each), and, as
    a what-if, with one NIC per node."""
    send_recv = ("send_recv", 2, 1)
    all_reduces = [("all_reduce", 2, 1), ("all_reduce", 4, 2), ("all_reduce", 8, 4), ("all_reduce", 16, 8)]
    rows.update({case: measured(nccl, case[0], case[1], case[2], sizes) for case in [send_recv] + all_reduces})

    def network(nic, fabric_latency, rails):
        return TWO_NODES.format(nic=nic, fabric_latency=fabric_latency, rails=rails)

    # NIC bandwidth and fabric latency on a grid (each a real run: a send above the eager limit
    # waits for a notice that crosses the fabric too), the point-to-point launch cost as fitted in
    # one node.
    best = None
    for nic in (5, 6, 7, 8, 9, 10, 12, 15, 20, 25):
        for fabric_latency in (500, 1000, 2000, 4000, 8000, 12000, 16000):
            system = dict(fitted, network=network(nic, fabric_latency, DGX_A100_NICS))
            times = run_case(send_recv, system)
            error = sum((math.log(a) - math.log(m)) ** 2 for a, (_, m) in zip(times, rows[send_recv]))
            if best is None or error < best[0]:
                best = (error, nic, fabric_latency)
    _, nic, fabric_latency = best
    settings = {
        "datasheet NIC": dict(fitted, network=network(DGX_A100_NIC_GBPS, 1000, DGX_A100_NICS)),
        "fitted, 8 NICs": dict(fitted, network=network(nic, fabric_latency, DGX_A100_NICS)),
        "fitted, 1 NIC": dict(fitted, network=network(nic, fabric_latency, 1)),
    }
    print("## Collectives across two DGX A100 nodes\n")
    print("Measured: Vidur's rows with fewer devices per node than workers (two nodes). The source does not "
          "describe the fabric between the nodes. Predicted: the one-node fitted constants above, the two "
          "nodes on one switch (two hops), each GPU reaching it through NIC (GPU index mod NICs).\n")
    print(f"- **datasheet NIC**: the DGX A100's {DGX_A100_NICS} NICs, {DGX_A100_NIC_GBPS * 8} Gb/s "
          f"({DGX_A100_NIC_GBPS} GB/s) each, 1000 ns per hop.")
    print(f"- **fitted, 8 NICs**: NIC bandwidth {nic} GB/s and fabric latency {fabric_latency} ns per hop, "
          "fitted (grid search, least squares in log time) on the cross-node send/recv rows only; the "
          "all-reduce rows are out of sample.")
    print("- **fitted, 1 NIC**: the same NIC, one per node (a what-if, not fitted): how the predictions move "
          "if every GPU's inter-node traffic shares one NIC.\n")
    summary = []
    faster = {"fitted, 8 NICs": 0, "fitted, 1 NIC": 0}  # rows with several GPUs per node predicted too fast
    rows_several = 0
    for case in [send_recv] + all_reduces:
        kind, p, per_node = case
        predictions = {name: run_case(case, system) for name, system in settings.items()}
        if kind == "all_reduce" and per_node > 1:
            rows_several += len(rows[case])
            for name in faster:
                faster[name] += sum(predicted < value for predicted, (_, value) in zip(predictions[name], rows[case]))
        print(f"### {kind}, {p} GPUs on two nodes ({per_node} per node)\n")
        print("| bytes | measured ms | " + " | ".join(f"{name} ms | error" for name in settings) + " |")
        print("|---:|---:|" + "---:|---:|" * len(settings))
        errors = {name: [] for name in settings}
        for i, (size, value) in enumerate(rows[case]):
            cells = [f"{size}", f"{value:.4f}"]
            for name in settings:
                relative = (predictions[name][i] - value) / value
                errors[name].append(abs(relative))
                cells += [f"{predictions[name][i]:.4f}", f"{relative:+.1%}"]
            print("| " + " | ".join(cells) + " |")
        summary.append((f"{kind} {p} GPUs ({per_node} per node)",
                        {name: float(np.median(e)) for name, e in errors.items()},
                        "in sample (NIC, fabric latency)" if case == send_recv else "out of sample"))
        print()
    print("### Summary across two nodes: median absolute relative error\n")
    print("| collective | " + " | ".join(settings) + " | fitted on it? |")
    print("|---|" + "---:|" * len(settings) + "---|")
    for name, medians, sample in summary:
        print(f"| {name} | " + " | ".join(f"{medians[s]:.1%}" for s in settings) + f" | {sample} |")
    print()
    print("With one GPU per node the number of NICs does not matter, and the out-of-sample all-reduce is "
          f"within {summary[1][1]['fitted, 8 NICs']:.1%} (median) of the measurement. With more GPUs per node "
          f"the eight-NIC prediction is faster than the measurement in {faster['fitted, 8 NICs']} of {rows_several} "
          f"rows and the one-NIC what-if in {faster['fitted, 1 NIC']}"
          + (": the measured runs got less inter-node bandwidth than eight NICs at the fitted rate give"
             if faster["fitted, 8 NICs"] > rows_several // 2 else "")
          + ". The source does not say how the nodes were connected or which NICs NCCL used, and Orrery's "
          "prediction across nodes is only as good as the fabric described to it (`network.nic.rails`, "
          "`network.nic.bandwidth_GBps`, the topology's links).\n")


if __name__ == "__main__":
    sys.exit(main())
