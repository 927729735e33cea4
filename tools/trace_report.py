#!/usr/bin/python3
"""Report on an Orrery run trace (docs/trace.md): step time, the per-rank breakdown of compute,
exposed communication and idle time, per-rank skew, the costliest kernels and collectives, and
link utilisation, as text; optionally PNG plots and a Perfetto / Chrome trace JSON.

    tools/trace_report.py RUN.h5 [--plots DIR] [--perfetto OUT.json] [--top N]

Reads the file with h5py, numpy and pandas (Debian's python3-h5py, -numpy, -pandas) and plots
with matplotlib. Exits 1 with a message for a file that is not an Orrery trace, is of another
schema version, or is incomplete (its run failed or was killed) unless --allow-incomplete.
"""
import argparse
import json
import os
import sys

import h5py
import numpy as np
import pandas as pd

SCHEMA_VERSION = 1
PS = 1e-12  # seconds per picosecond


def fail(message):
    print(f"trace_report: error: {message}", file=sys.stderr)
    sys.exit(1)


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def open_trace(path, allow_incomplete):
    try:
        f = h5py.File(path, "r")
    except OSError as error:
        fail(f"{path}: cannot read it as HDF5 ({error})")
    if text(f.attrs.get("schema", b"")) != "orrery-trace":
        fail(f"{path}: not an Orrery trace (no schema attribute 'orrery-trace')")
    version = int(f.attrs.get("schema_version", 0))
    if version != SCHEMA_VERSION:
        fail(f"{path}: trace schema version {version}; this tool reads version {SCHEMA_VERSION}")
    if int(f.attrs.get("complete", 0)) != 1 and not allow_incomplete:
        fail(f"{path}: the trace is incomplete (its run failed or was stopped before it was written); "
             "--allow-incomplete reads what is there")
    return f


def table(f, name):
    return pd.DataFrame(f[name][:]) if name in f else None


def step_breakdown(steps):
    """Per rank, over the measured steps (all but the first when there are several, as the
    summary counts them): mean compute, exposed communication and idle seconds per step."""
    completed = steps.groupby("rank")["step"].max().min() + 1
    first_measured = 1 if completed > 1 else 0
    ends = steps.groupby("step")["end_ps"].max()
    span_ps = ends[completed - 1] - (ends[first_measured - 1] if first_measured > 0 else 0)
    measured = steps[(steps["step"] >= first_measured) & (steps["step"] < completed)]
    per_rank = measured.groupby("rank")[["compute_ps", "comm_ps", "exposed_comm_ps"]].sum()
    count = completed - first_measured
    out = pd.DataFrame({
        "compute_s": per_rank["compute_ps"] * PS / count,
        "comm_s": per_rank["comm_ps"] * PS / count,
        "exposed_comm_s": per_rank["exposed_comm_ps"] * PS / count,
    })
    out["idle_s"] = ((span_ps - per_rank["compute_ps"] - per_rank["exposed_comm_ps"]).clip(lower=0)) * PS / count
    return out, span_ps * PS / count, completed


def report(f, top):
    strings = [text(s) for s in f["strings"][:]]
    lines = []
    attrs = f.attrs
    lines.append(f"trace: {text(attrs['hardware'])}, {int(attrs['ranks'])} ranks, {text(attrs['network_model'])} "
                 f"network on {text(attrs['topology'])}; detail {text(attrs['detail'])}; "
                 f"written by orrery {text(attrs['orrery_version'])} on {int(attrs['processes'])} process(es)")
    steps = table(f, "steps")
    breakdown, step_s, completed = step_breakdown(steps)
    lines.append(f"steps completed: {completed}; step time {step_s * 1e3:.3f} ms "
                 f"(summary attribute: {float(attrs['step_time_s']) * 1e3:.3f} ms)")
    lines.append("per rank, per step        min          mean         max")
    for column in ["compute_s", "comm_s", "exposed_comm_s", "idle_s"]:
        values = breakdown[column]
        lines.append(f"  {column:<18} {values.min() * 1e3:9.3f} ms {values.mean() * 1e3:9.3f} ms "
                     f"{values.max() * 1e3:9.3f} ms")
    last_step = steps[steps["step"] == completed - 1]
    skew = (last_step["end_ps"].max() - last_step["end_ps"].min()) * PS
    slowest = int(last_step.loc[last_step["end_ps"].idxmax(), "rank"])
    lines.append(f"skew: the ranks end step {completed - 1} within {skew * 1e3:.3f} ms of each other "
                 f"(last: rank {slowest})")

    ops = table(f, "ops")
    if ops is not None and len(ops):
        ops["seconds"] = (ops["end_ps"] - ops["start_ps"]) * PS
        ranks = ops["rank"].nunique()
        by_kernel = ops.groupby(["label", "name"])["seconds"].agg(["sum", "count"]).sort_values("sum", ascending=False)
        lines.append(f"top kernels (seconds per rank over the run, of {len(ops)} kernel runs):")
        for (label, name), row in by_kernel.head(top).iterrows():
            lines.append(f"  {row['sum'] / ranks * 1e3:9.3f} ms x{row['count'] / ranks:g}  {strings[label]}  "
                         f"({strings[name]})")
    collectives = table(f, "collectives")
    if collectives is not None and len(collectives):
        collectives["seconds"] = (collectives["end_ps"] - collectives["issued_ps"]) * PS
        ranks = collectives["rank"].nunique()
        by_op = collectives.groupby(["name", "kind", "algorithm"]).agg(
            seconds=("seconds", "sum"), count=("seconds", "count"), bytes=("bytes", "max"))
        lines.append(f"top collectives (seconds in flight per rank over the run, of {len(collectives)}):")
        for (name, kind, algorithm), row in by_op.sort_values("seconds", ascending=False).head(top).iterrows():
            how = strings[kind] + (f" {strings[algorithm]}" if strings[algorithm] else "")
            lines.append(f"  {row['seconds'] / ranks * 1e3:9.3f} ms x{row['count'] / ranks:g}  {how}, "
                         f"{int(row['bytes'])} B  ({strings[name]})")
    transfers = table(f, "transfers")
    if transfers is not None:
        lines.append(f"transfers: {len(transfers)}, {int(transfers['bytes'].sum())} bytes")
    links = link_utilisation(f, steps)
    if links is not None:
        used = links[links["bytes"] > 0]
        lines.append(f"links: {len(used)} of {len(links)} carried traffic; utilisation over the run "
                     f"(bytes / (rate x run time)): mean {used['utilisation'].mean():.3%}, "
                     f"max {used['utilisation'].max():.3%}" if len(used) else
                     f"links: none of {len(links)} carried traffic")
        for _, row in used.sort_values("utilisation", ascending=False).head(top).iterrows():
            lines.append(f"  link {int(row['link'])} ({strings[int(row['kind'])]}, vertex {int(row['from'])} -> "
                         f"{int(row['to'])}): {int(row['bytes'])} B, {row['utilisation']:.3%}")
    return "\n".join(lines), breakdown, links


def link_utilisation(f, steps):
    """Bytes each link carried over its capacity for the whole run; None below detail transfers."""
    if text(f.attrs["detail"]) != "transfers":
        return None
    links = table(f, "links")
    run_s = steps["end_ps"].max() * PS
    links["utilisation"] = links["bytes"] / (links["bandwidth_Bps"] * run_s) if run_s > 0 else 0.0
    return links


def plots(directory, breakdown, links):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(directory, exist_ok=True)
    written = []
    fig, ax = plt.subplots(figsize=(max(6, len(breakdown) * 0.05 + 4), 4))
    bottom = np.zeros(len(breakdown))
    for column, colour in [("compute_s", "tab:blue"), ("exposed_comm_s", "tab:red"), ("idle_s", "tab:gray")]:
        ax.bar(breakdown.index, breakdown[column] * 1e3, bottom=bottom, color=colour, label=column[:-2], width=1.0)
        bottom += breakdown[column].to_numpy() * 1e3
    ax.set_xlabel("rank")
    ax.set_ylabel("ms per step")
    ax.set_title("Per-rank breakdown of the step")
    ax.legend()
    path = os.path.join(directory, "breakdown.png")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    written.append(path)
    if links is not None and (links["bytes"] > 0).any():
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.hist(links.loc[links["bytes"] > 0, "utilisation"] * 100, bins=50)
        ax.set_xlabel("utilisation over the run (%)")
        ax.set_ylabel("links")
        ax.set_title("Link utilisation (links that carried traffic)")
        path = os.path.join(directory, "links.png")
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def perfetto(f, out):
    """Chrome trace event format (Perfetto opens it): one process per rank, a compute thread
    (kernels) and a communication thread (collectives, sends and recvs); times in microseconds."""
    strings = [text(s) for s in f["strings"][:]]
    events = []
    ranks = int(f.attrs["ranks"])
    for rank in range(ranks):
        events.append({"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank}"}})
        events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": 0, "args": {"name": "compute"}})
        events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": 1, "args": {"name": "communication"}})
    if "ops" in f:
        for row in f["ops"][:]:
            events.append({"ph": "X", "pid": int(row["rank"]), "tid": 0, "name": strings[row["label"]],
                           "ts": row["start_ps"] / 1e6, "dur": (row["end_ps"] - row["start_ps"]) / 1e6,
                           "args": {"op": strings[row["name"]], "step": int(row["step"])}})
    if "collectives" in f:
        for row in f["collectives"][:]:
            algorithm = strings[row["algorithm"]]
            events.append({"ph": "X", "pid": int(row["rank"]), "tid": 1,
                           "name": strings[row["kind"]] + (f" ({algorithm})" if algorithm else ""),
                           "ts": row["issued_ps"] / 1e6, "dur": (row["end_ps"] - row["issued_ps"]) / 1e6,
                           "args": {"op": strings[row["name"]], "bytes": int(row["bytes"]),
                                    "members": int(row["members"]), "step": int(row["step"])}})
    with open(out, "w") as handle:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, handle)
    return len(events)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="an HDF5 trace written by orrery run --trace")
    parser.add_argument("--plots", metavar="DIR", help="write breakdown.png (and links.png) here")
    parser.add_argument("--perfetto", metavar="OUT", help="write a Perfetto / Chrome trace JSON here")
    parser.add_argument("--top", type=int, default=10, help="kernels, collectives and links listed (default 10)")
    parser.add_argument("--allow-incomplete", action="store_true", help="read a trace whose run did not finish")
    args = parser.parse_args()
    with open_trace(args.trace, args.allow_incomplete) as f:
        if "steps" not in f or len(f["steps"]) == 0:
            fail(f"{args.trace}: no step was recorded")
        summary, breakdown, links = report(f, args.top)
        print(summary)
        if args.plots:
            for path in plots(args.plots, breakdown, links):
                print(f"wrote {path}")
        if args.perfetto:
            count = perfetto(f, args.perfetto)
            print(f"wrote {args.perfetto} ({count} events)")


if __name__ == "__main__":
    main()
