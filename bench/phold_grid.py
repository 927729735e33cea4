#!/usr/bin/env python3
"""The PHOLD grid of ../shared/reference/validation.md, sequential and with 2 MPI processes.

remote in {0.1, 0.5} x lookahead in {0.1, 0.5} x LPs in {1K, 16K}, 16 start events, mean 1.0.
Each configuration runs for about --events committed events; each run is repeated --repeats times
and the fastest is kept (the machine is shared; the minimum is the least disturbed). Prints a
Markdown table: committed events/s in total and per process, and the parallel efficiency
T(1 process) / (2 * T(2 processes)).
"""
import argparse
import json
import subprocess


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orrery", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--events", type=float, default=10e6, help="target committed events per run")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print("| LPs | remote | lookahead | events | 1 proc: events/s | 2 procs: events/s | per process | windows (2 procs) | efficiency T1/(2·T2) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for lps in (1024, 16384):
        for remote in (0.1, 0.5):
            for lookahead in (0.1, 0.5):
                end = args.events / (lps * 16)  # about lps*16 events per unit of time (mean 1.0)
                base = [args.orrery, "phold", "--lps", str(lps), "--start-events", "16", "--remote", str(remote),
                        "--mean", "1.0", "--lookahead", str(lookahead), "--end", f"{end:.3f}", "--json"]
                seq = min((run(base) for _ in range(args.repeats)), key=lambda d: d["wall_s"])
                par = min((run([args.mpirun, "-np", "2"] + base) for _ in range(args.repeats)), key=lambda d: d["wall_s"])
                assert seq["history_hash"] == par["history_hash"], "history differs between 1 and 2 processes"
                efficiency = seq["wall_s"] / (2 * par["wall_s"])
                print(f"| {lps} | {remote} | {lookahead} | {seq['events']} | {seq['events_per_s']/1e6:.2f} M "
                      f"| {par['events_per_s']/1e6:.2f} M | {par['events_per_s']/2e6:.2f} M | {par['windows']} "
                      f"| {efficiency:.2f} |", flush=True)


if __name__ == "__main__":
    main()
