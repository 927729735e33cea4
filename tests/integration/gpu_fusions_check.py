"""XLA's fused kernels alone (validation/gpu/fusions.py): Orrery reads and costs every case's
export, and where XLA fuses a pattern as Orrery's regions do on a GPU (the ReLU gradient, the
residual add, SiLU gating, AdamW; RMSNorm and the causal softmax as one row-reduction kernel)
Orrery's kernels move XLA's bytes, within 1%. (XLA runs the softmax backward alone as two kernels,
inside the Llama steps as one, as Orrery does: it is not held here.)
Usage: gpu_fusions_check.py ORRERY FUSIONS_DIR WORK_DIR"""
import csv
import json
import lzma
import os
import subprocess
import sys

orrery, base, work = sys.argv[1:]
rows = list(csv.DictReader(open(os.path.join(base, "h100", "fusions.csv"))))
if len(rows) != 60:
    sys.exit(f"fusions: {len(rows)} cases, expected 60")
bad = []
for r in rows:
    name = f"{r['pattern']}.{r['shape']}"
    program = os.path.join(work, "fusion.mlir")
    with lzma.open(os.path.join(base, "stablehlo", name + ".stablehlo.mlir.xz"), "rt") as src, \
            open(program, "w") as dst:
        dst.write(src.read())
    out = subprocess.run([orrery, "--log-level", "error", "inspect", program, "--strict", "--cost", "--hardware",
                          "H100", "--json"], capture_output=True, text=True, check=True).stdout
    ours = json.loads(out)["bytes"]
    xla = int(r["bytes_read"]) + int(r["bytes_written"])
    if r["pattern"] in ("relu_grad", "add_relu", "silu_mul", "adamw", "rms_norm", "softmax_causal") and \
            abs(ours / xla - 1) > 0.01:
        bad.append(f"{name}: Orrery {ours} B, XLA {xla} B")
if bad:
    sys.exit("fusions: Orrery's bytes differ from XLA's:\n" + "\n".join(bad))
print("ok   fusions: 60 exports read and costed; the patterns XLA fuses as Orrery does move XLA's bytes")
