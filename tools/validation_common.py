"""Helpers shared by the validation scripts (tools/validate_*.py)."""
import json
import os
import subprocess


def datasheet_preset(root, work, name="A100_40GB"):
    """The preset with every achievable fraction 1 and no launch overhead (a plain datasheet roofline)."""
    lines = open(os.path.join(root, "configs/hardware", name + ".yaml")).read().splitlines()
    out = []
    skip_deeper_than = None  # the indent of the `efficiency:` line while its entries are skipped
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if skip_deeper_than is not None and stripped and indent > skip_deeper_than:
            continue
        skip_deeper_than = None
        if stripped.startswith("launch_overhead_us:"):
            out.append(line[:indent] + "launch_overhead_us: 0")
        elif stripped.startswith("efficiency:"):
            out.append(line[:indent] + "efficiency:")
            out.append(line[:indent] + "  default: {compute: 1.0, memory: 1.0}")
            skip_deeper_than = indent
        elif stripped.startswith("provenance:"):
            out.append(line[:indent] + 'provenance: "datasheet peaks, efficiency 1"')
        else:
            out.append(line)
    path = os.path.join(work, name + "_datasheet.yaml")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def run(orrery, scenario, overrides, out, mpirun=None, processes=1):
    """`orrery run SCENARIO --set ...` (under `mpirun -np N` for N > 1); its summary JSON."""
    command = [orrery, "--log-level", "error", "run", scenario, "--summary-json", out]
    for override in overrides:
        command += ["--set", override]
    if mpirun and processes > 1:
        command = [mpirun, "-np", str(processes)] + command
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)
