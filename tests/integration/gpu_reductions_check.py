"""XLA's tree reductions (validation/gpu/reductions.py, compiled on an H100): for every reduction
case Orrery launches as many kernels as XLA's compiled module (two where XLA splits a reduction it
cannot run race-free, one else) and writes the bytes XLA's kernels write: the first stage's partial
results (as many per output as XLA chose) and the results.
Usage: gpu_reductions_check.py ORRERY REDUCTIONS_DIR WORK_DIR"""
import csv
import json
import lzma
import os
import subprocess
import sys

orrery, base, work = sys.argv[1:]
rows = list(csv.DictReader(open(os.path.join(base, "reductions.csv"))))
if len(rows) != 18:
    sys.exit(f"reductions: {len(rows)} cases, expected 18")
bad = []
split = 0
for r in rows:
    program = os.path.join(work, "reduction.mlir")
    with lzma.open(os.path.join(base, "stablehlo", r["case"] + ".stablehlo.mlir.xz"), "rt") as src, \
            open(program, "w") as dst:
        dst.write(src.read())
    out = subprocess.run([orrery, "--log-level", "error", "inspect", program, "--strict", "--cost", "--hardware",
                          "H100", "--json"], capture_output=True, text=True, check=True).stdout
    ours = json.loads(out)
    split += int(r["kernels"]) == 2
    if ours["kernels"] != int(r["kernels"]) or ours["bytes_written"] != int(r["bytes_written"]):
        bad.append(f"{r['case']} ({r['shape']} over {r['axes']}): Orrery {ours['kernels']} kernels writing "
                   f"{ours['bytes_written']} B, XLA {r['kernels']} writing {r['bytes_written']} B "
                   f"(first stage {r['first_stage']})")
if bad:
    sys.exit("reductions: Orrery's kernels differ from XLA's:\n" + "\n".join(bad))
print(f"ok   reductions: {len(rows)} cases, {split} split by XLA into two kernels; Orrery's kernels and the bytes "
      "they write match XLA's")
