#!/usr/bin/env python3
"""Writes docs/validation/gpu.md: Orrery's predicted single-device step times for the programs
measured on GPUs for this project (validation/gpu: an H200, and an H100 in data/h100) against the
measured ones, per estimator configuration; where the time goes (the profiler's kernels against
Orrery's kernel classes); the memory estimate against XLA's; and a pointer to the sharded exports'
page (tools/validate_spmd.py). Everything is read from validation/gpu/data in the repository.
"""
import argparse
import hashlib
import json
import lzma
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "validation", "gpu"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hlo_kernels  # noqa: E402
import trace_summary  # noqa: E402
from validation_common import datasheet_preset, run  # noqa: E402

PROGRAM_ORDER = ["llama-60m", "llama-250m", "llama-900m", "resnet18", "resnet50"]
SCENARIO = """# One {hardware} running one program (tools/validate_gpu.py).
hardware: {hardware}
system:
  endpoint_delay_ns: 1000
network:
  topology:
    kind: astra_sim
    spec: {{topology: [FullyConnected], npus_count: [1], bandwidth: [450], latency: [1000]}}
  model: analytical
workload:
  programs:
    - file: {program}
      ranks: all
  steps: 1
compute:
  default: roofline
"""


# The GPUs measured: preset name, data folder (relative to validation/gpu/data), the kernel table
# exported from that GPU's microbenchmarks, and how its second run was made.
GPUS = [
    ("H200", ".", "a fresh machine of the same kind, validation/gpu/run_repeat.sh"),
    ("H100", "h100", "the same machine right after the first, validation/gpu/README.md"),
]


def fitted_block(root, name):
    """The lines of a preset's FITTED block (launch overhead, efficiencies, provenance)."""
    lines = open(os.path.join(root, "configs/hardware", name + ".yaml")).read().splitlines()
    begin = next(i for i, l in enumerate(lines) if "BEGIN FITTED" in l)
    end = next(i for i, l in enumerate(lines) if "END FITTED" in l)
    return lines[begin + 1:end]


def transplanted_preset(root, work, name, donor):
    """NAME's preset (its peaks and bandwidth) with DONOR's fitted constants: how far a fit made on one
    GPU carries to another."""
    lines = open(os.path.join(root, "configs/hardware", name + ".yaml")).read().splitlines()
    begin = next(i for i, l in enumerate(lines) if "BEGIN FITTED" in l)
    end = next(i for i, l in enumerate(lines) if "END FITTED" in l)
    path = os.path.join(work, f"{name}_with_{donor}_fit.yaml")
    with open(path, "w") as f:
        f.write("\n".join(lines[:begin + 1] + fitted_block(root, donor) + lines[end:]) + "\n")
    return path


def configurations(root, work, hardware):
    table = os.path.join(root, f"configs/tables/{hardware}_kernels.csv")
    rule = (f"compute.rules=[{{classes: [gemm, convolution], estimator: table, table: {table}, "
            "fallback: roofline}]")
    configs = {
        "roofline, datasheet peaks (efficiency 1, no launch overhead)":
            [f"hardware={datasheet_preset(root, work, hardware)}"],
        f"roofline, fitted on the {hardware} kernels": [],
    }
    for donor, _, _ in GPUS:
        if donor != hardware:
            configs[f"roofline, {hardware} peaks with the {donor}'s fitted constants"] = [
                f"hardware={transplanted_preset(root, work, hardware, donor)}"]
    configs["table for GEMMs and convolutions, fitted roofline else"] = [rule]
    configs["table for GEMMs and convolutions, fitted roofline else; no fusion"] = [rule, "compute.fusion=none"]
    return configs


# As on the end-to-end page (docs/validation/end-to-end.md), decided there from kernel data: measured
# kernels where the table has them (here GEMMs and convolutions of the same GPU's microbenchmarks),
# the roofline fitted on the same microbenchmarks else, XLA-style fusion.
FROZEN = "table for GEMMs and convolutions, fitted roofline else"


def inspect_classes(orrery, program, hardware, table):
    command = [orrery, "--log-level", "error", "inspect", program, "--cost", "--hardware", hardware, "--json"]
    if table:
        command += ["--estimator", "table", "--table", table]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def xla_kernel_bytes(path):
    """{"matrix": bytes, "other": bytes, "kernels": n} over the kernels of XLA's compiled HLO
    (NAME.hlo.txt.xz; validation/gpu/hlo_kernels.py); None when the entry holds a loop."""
    with lzma.open(path, "rt") as f:
        kernels = hlo_kernels.entry_kernels(f.read())
    if kernels is None:
        return None
    totals = {"matrix": 0, "other": 0, "kernels": len(kernels)}
    for name, op, read, written, rest in kernels:
        matrix = (op in ("dot", "convolution") or name.startswith("gemm_fusion")
                  or (op == "custom-call" and re.search(r'custom_call_target="(__cublas|__cudnn)', rest)))
        totals["matrix" if matrix else "other"] += read + written
    return totals


def load_hardware_bandwidth(root, name):
    """The preset's datasheet memory bandwidth in bytes/s."""
    text = open(os.path.join(root, "configs/hardware", name + ".yaml")).read()
    return float(re.search(r"^\s*memory_bandwidth_GBps:\s*([0-9.]+)", text, re.M).group(1)) * 1e9


def load_launch_overhead_us(root, name):
    """The preset's fitted launch overhead in microseconds."""
    text = open(os.path.join(root, "configs/hardware", name + ".yaml")).read()
    return float(re.search(r"^\s*launch_overhead_us:\s*([0-9.]+)", text, re.M).group(1))


SMALL_US = 2.0  # a kernel shorter than this in the trace counts as small


def small_kernels(path):
    """From a program's profiler trace (three steps): per step, the kernels other than copies shorter
    than SMALL_US and their median duration; between consecutive kernels inside a step (the
    STEPS - 1 longest gaps, between steps, left out), the share that overlap (a kernel starting
    before the previous one ends, as kernels of a CUDA graph may) and the median idle time of the
    rest; and the copies (memcpy kernels) and their time."""
    events = sorted(trace_summary.gpu_events(trace_summary.load(path)), key=lambda e: e["ts"])
    steps = trace_summary.STEPS
    gaps = []
    end = events[0]["ts"] + events[0]["dur"]
    for e in events[1:]:
        gaps.append(e["ts"] - end)
        end = max(end, e["ts"] + e["dur"])
    gaps = sorted(gaps)[:len(gaps) - (steps - 1)]
    idle = [g for g in gaps if g > 0]
    copies = [e["dur"] for e in events if "memcpy" in e["name"].lower()]
    small = sorted(e["dur"] for e in events if e["dur"] < SMALL_US and "memcpy" not in e["name"].lower())
    median = lambda values: values[len(values) // 2] if values else float("nan")  # noqa: E731
    return {"small": len(small) / steps, "small_us": median(small),
            "overlap": (len(gaps) - len(idle)) / len(gaps) if gaps else float("nan"), "gap_us": median(idle),
            "copies": len(copies) / steps, "copies_us": sum(copies) / steps}


def small_kernel_table(args, data, results):
    print("### Small kernels and the launch overhead\n")
    print(f"From the same profiler traces, per step: the kernels other than copies that ran shorter than "
          f"{SMALL_US:g} µs and their median duration; between consecutive kernels of a step, the share that "
          "overlap (a kernel starting before the previous one ends, as kernels launched from a CUDA graph may) "
          "and the median idle time between the others; and the copies (memcpy kernels: XLA's copies back to a "
          "parameter's layout among them) and their time. Orrery's roofline gives every kernel the preset's "
          "fitted launch overhead (one figure for every kernel class, fitted on all the kernel microbenchmarks "
          "at once, most of them GEMMs; memory-bound kernels small enough to stay in the L2 cache are left out "
          "of the fit); a kernel XLA runs in a step costs its duration plus the idle time before it.\n")
    print("| GPU | program | small kernels | their median (µs) | overlapping | median idle gap (µs) | copies | "
          "copies' time (µs) | preset's launch overhead (µs) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for hardware, folder, _ in GPUS:
        overhead = load_launch_overhead_us(args.root, hardware)
        for name, *_ in results[hardware][1]:
            path = os.path.join(data, folder, "programs", name + ".trace.json.xz")
            if not os.path.exists(path):
                continue
            k = small_kernels(path)
            print(f"| {hardware} | {name} | {k['small']:.0f} | {k['small_us']:.2f} | {k['overlap'] * 100:.0f}% | "
                  f"{k['gap_us']:.2f} | {k['copies']:.0f} | {k['copies_us']:.0f} | {overhead:.2f} |")
    print()


def pct(predicted, measured):
    return f"{(predicted / measured - 1) * 100:+.1f}%"


def ms(seconds):
    return f"{seconds * 1e3:.2f}"


def environment(path):
    env = open(path).read() if os.path.exists(path) else ""
    gpu = re.search(r"^(NVIDIA [^,]+), ([0-9.]+), ", env, re.M)
    versions = re.search(r"^jax (\S+) jaxlib (\S+) optax (\S+) torch (\S+) cuda (\S+) cudnn (\S+)", env, re.M)
    return {"gpu": gpu.group(1) if gpu else "?", "driver": gpu.group(2) if gpu else "?",
            "jax": versions.group(1) if versions else "?", "cudnn": versions.group(6) if versions else "?"}


def export_text(data, name):
    """The StableHLO export of NAME (data/programs; a GPU measured later keeps only the SHA-256 sums of
    its own exports, checked here to be the same text)."""
    with lzma.open(os.path.join(data, "programs", name + ".stablehlo.mlir.xz"), "rt") as src:
        return src.read()


def check_exports(data, folder, texts):
    sums = os.path.join(data, folder, "programs", "stablehlo.sha256")
    if folder == "." or not os.path.exists(sums):
        return
    for line in open(sums):
        digest, file = line.split()
        name = file.removesuffix(".stablehlo.mlir")
        if name in texts and hashlib.sha256(texts[name].encode()).hexdigest() != digest:
            sys.exit(f"{sums}: {file} is not the export in {data}/programs; the programs differ")


def measure(args, data, work, hardware, folder, texts):
    """Per program: the measurement, Orrery's predictions per configuration, the trace summary and
    the frozen configuration's kernel classes."""
    configs = configurations(args.root, work, hardware)
    table = os.path.join(args.root, f"configs/tables/{hardware}_kernels.csv")
    rows = []
    for name in PROGRAM_ORDER:
        meta_path = os.path.join(data, folder, "programs", name + ".json")
        if not os.path.exists(meta_path) or name not in texts:
            continue
        meta = json.load(open(meta_path))
        if not meta.get("ok"):
            continue
        program = os.path.join(work, name + ".mlir")
        scenario = os.path.join(work, f"{name}.{hardware}.yaml")
        with open(scenario, "w") as f:
            f.write(SCENARIO.format(hardware=hardware, program=program))
        predicted = {c: run(args.orrery, scenario, o, os.path.join(work, "s.json")) for c, o in configs.items()}
        trace = trace_summary.summarise(os.path.join(data, folder, "programs", name + ".trace.json.xz"))
        rows.append((name, meta, predicted, trace, inspect_classes(args.orrery, program, hardware, table)))
    return configs, rows


def step_table(data, folder, hardware, second_run, configs, rows):
    print(f"### Step times on the {hardware}\n")
    print("| program | parameters | measured (ms): median [p10, p90] | second run (ms) | "
          + " | ".join(configs) + " | asynchronous steps (ms) [traced span]: frozen configuration's error |")
    print("|---|---|---|---|" + "---|" * len(configs) + "---|")
    errors = []
    repeats = []
    gpu_errors = []
    for name, meta, predicted, trace, _ in rows:
        cells = []
        for c in configs:
            t = predicted[c]["step_time_s"]
            cells.append(f"{ms(t)} ({pct(t, meta['median_s'])})")
        errors.append(abs(predicted[FROZEN]["step_time_s"] / meta["median_s"] - 1))
        repeat_path = os.path.join(data, folder, "repeat", "programs", name + ".json")
        second = "—"
        if os.path.exists(repeat_path):
            again = json.load(open(repeat_path))
            if again.get("ok"):
                second = f"{ms(again['median_s'])} ({pct(again['median_s'], meta['median_s'])})"
                repeats.append(abs(again["median_s"] / meta["median_s"] - 1))
        frozen = predicted[FROZEN]["step_time_s"]
        async_path = os.path.join(data, "async", hardware.lower(), name + ".async.json")
        gpu_cell = "—"
        if os.path.exists(async_path) and json.load(open(async_path)).get("ok"):
            per_step = json.load(open(async_path))["async_per_step_s"]
            gpu_errors.append(abs(frozen / per_step - 1))
            gpu_cell = f"{ms(per_step)} [{ms(trace['gpu_step_s'])}]: {pct(frozen, per_step)}"
        print(f"| {name} | {meta['parameters'] / 1e6:.1f} M | {ms(meta['median_s'])} "
              f"[{ms(meta['p10_s'])}, {ms(meta['p90_s'])}] | {second} | " + " | ".join(cells) + f" | {gpu_cell} |")
    if not errors:
        print(f"\nNo measured program on the {hardware}.\n")
        return
    within = sum(e <= 0.15 for e in errors)
    print(f"\nFrozen configuration ({FROZEN}) on the {hardware}: {within} of {len(errors)} programs within 15%; "
          f"median absolute error {sorted(errors)[len(errors) // 2] * 100:.1f}%, "
          f"largest {max(errors) * 100:.1f}%. Errors are against the first run's medians; the second run "
          f"({second_run}) differs from the first by up to {max(repeats, default=0) * 100:.1f}%, so differences "
          "of that size are within the measurement's own reproducibility.\n")
    if gpu_errors:
        print("The last column times the steps as a training loop runs them (validation/gpu/async_steps.py, a later "
              "run on the same kind of GPU): 30 steps dispatched back to back, each taking the previous step's "
              "state, synchronised once at the end — the GPU's own time per step — and, in brackets, the span of "
              "a step's kernels in the profiler trace (first start to last end, the median of three steps). The "
              "host-clock measurement also holds what the host does before a step's first kernel and after its "
              "last (dispatching the executable with its arguments, seeing the step end at `block_until_ready`), "
              "which Orrery does not model and an asynchronous loop hides. Against the asynchronous steps the "
              f"frozen configuration is within 15% for {sum(e <= 0.15 for e in gpu_errors)} of {len(gpu_errors)} "
              f"programs, median absolute error {sorted(gpu_errors)[len(gpu_errors) // 2] * 100:.1f}%, largest "
              f"{max(gpu_errors) * 100:.1f}%.\n")


def time_table(data, folder, hardware, rows):
    print(f"### Where the time goes on the {hardware}\n")
    print("| program | measured kernels | XLA's HLO kernels | Orrery kernels | measured GEMM + conv (ms) | "
          "Orrery GEMM + conv | measured other (ms) | Orrery other | measured busy + gaps (ms) | Orrery total |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, meta, _, trace, classes in rows:
        hlo = os.path.join(data, folder, "programs", name + ".hlo.txt.xz")
        xla = xla_kernel_bytes(hlo) if os.path.exists(hlo) else None
        cls = trace["classes"]
        m_matrix = sum(cls.get(k, {}).get("seconds", 0.0) for k in ("gemm", "convolution"))
        m_other = sum(cls.get(k, {}).get("seconds", 0.0) for k in ("fusion", "copy"))
        o_classes = classes["classes"]
        o_matrix = sum(o_classes.get(k, {}).get("estimated_s", 0.0) for k in ("gemm", "convolution"))
        o_total = classes["estimated_compute_s"]
        print(f"| {name} | {trace['kernels_per_step']:.0f} | {xla['kernels'] if xla else '—'} | {classes['kernels']} | "
              f"{ms(m_matrix)} | "
              f"{ms(o_matrix)} ({pct(o_matrix, m_matrix)}) | {ms(m_other)} | {ms(o_total - o_matrix)} "
              f"({pct(o_total - o_matrix, m_other)}) | {ms(trace['busy_s_per_step'])} + "
              f"{ms(trace['span_s_per_step'] - trace['busy_s_per_step'])} | {ms(o_total)} |")
    print()


FUSION_ORDER = ["bn_stats", "bn_apply_relu", "bn_backward", "relu_grad", "add_relu", "rms_norm", "silu_mul",
                "softmax_causal", "softmax_backward", "adamw"]


def fusion_rows(args, data, work, hardware, folder, table):
    """Per case of validation/gpu/data/fusions/FOLDER/fusions.csv: the measured kernel time and
    XLA's bytes and kernels, with Orrery's estimate of the same JAX export."""
    import csv
    base = os.path.join(data, "fusions")
    path = os.path.join(base, folder, "fusions.csv")
    if not os.path.exists(path):
        return []
    rows = []
    for r in csv.DictReader(open(path)):
        if not r.get("kernel_us") or not r.get("launches"):
            continue  # the case's trace failed on the GPU machine: no kernel time
        name = f"{r['pattern']}.{r['shape']}"
        program = os.path.join(work, name + ".mlir")
        if not os.path.exists(program):
            with lzma.open(os.path.join(base, "stablehlo", name + ".stablehlo.mlir.xz"), "rt") as src, \
                    open(program, "w") as dst:
                dst.write(src.read())
        ours = inspect_classes(args.orrery, program, hardware, table)
        rows.append({"pattern": r["pattern"], "measured_s": float(r["kernel_us"]) * 1e-6,
                     "xla_bytes": int(r["bytes_read"]) + int(r["bytes_written"]), "xla_kernels": float(r["launches"]),
                     "orrery_s": ours["estimated_compute_s"], "orrery_bytes": ours["bytes"],
                     "orrery_kernels": ours["kernels"]})
    return rows


def fusion_table(hardware, rows, bandwidth):
    def median(values):
        values = sorted(values)
        return values[len(values) // 2] if len(values) % 2 else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2

    if not rows:
        return
    print(f"### {hardware}\n")
    print("| pattern | cases | measured (µs) | achieved bandwidth | XLA kernels | Orrery kernels | Orrery / XLA bytes | "
          "Orrery's time error: median [min, max] |")
    print("|---|---|---|---|---|---|---|---|")
    errors = []
    for pattern in FUSION_ORDER:
        mine = [r for r in rows if r["pattern"] == pattern]
        if not mine:
            continue
        err = [r["orrery_s"] / r["measured_s"] - 1 for r in mine]
        errors += err
        achieved = [r["xla_bytes"] / r["measured_s"] / bandwidth for r in mine]
        print(f"| {pattern} | {len(mine)} | {min(r['measured_s'] for r in mine) * 1e6:.1f}–"
              f"{max(r['measured_s'] for r in mine) * 1e6:.1f} | {min(achieved) * 100:.0f}–{max(achieved) * 100:.0f}% | "
              f"{median([r['xla_kernels'] for r in mine]):g} | {median([r['orrery_kernels'] for r in mine]):g} | "
              f"{median([r['orrery_bytes'] / r['xla_bytes'] for r in mine]):.2f} | "
              f"{median(err) * 100:+.0f}% [{min(err) * 100:+.0f}%, {max(err) * 100:+.0f}%] |")
    big = [abs(r["orrery_s"] / r["measured_s"] - 1) for r in rows if r["measured_s"] >= 20e-6]
    print(f"\nAll {len(rows)} cases: median absolute error {median([abs(e) for e in errors]) * 100:.0f}%"
          + (f"; the {len(big)} that run 20 µs or longer: {median(big) * 100:.0f}%" if big else "") + ".\n")


def reduction_table(args, data, work):
    """XLA's tree reductions (validation/gpu/data/reductions, compiled on an H100) against Orrery's."""
    import csv
    base = os.path.join(data, "reductions")
    path = os.path.join(base, "reductions.csv")
    if not os.path.exists(path):
        return
    print("## Reductions XLA splits\n")
    print("Single reductions jitted alone and compiled by XLA for the H100 (validation/gpu/reductions.py; "
          "nothing timed): how many kernels XLA's compiled module launches and the result of its first "
          "reduction kernel — the partial results where XLA's TreeReductionRewriter split a reduction it cannot "
          "run race-free — against Orrery's kernels for the same export (`orrery inspect --cost --hardware H100`: "
          "the kernels it launches and the bytes they write, which hold the partial results; docs/compute.md, "
          "\"Fusion\").\n")
    print("| case | shape | reduced axes | op | XLA kernels | XLA's first kernel writes | Orrery kernels | "
          "bytes written, Orrery / XLA |")
    print("|---|---|---|---|---|---|---|---|")
    same = 0
    rows = list(csv.DictReader(open(path)))
    for r in rows:
        program = os.path.join(work, "reduction." + r["case"] + ".mlir")
        with lzma.open(os.path.join(base, "stablehlo", r["case"] + ".stablehlo.mlir.xz"), "rt") as src, \
                open(program, "w") as dst:
            dst.write(src.read())
        ours = inspect_classes(args.orrery, program, "H100", None)
        ratio = ours["bytes_written"] / int(r["bytes_written"])
        same += ours["kernels"] == int(r["kernels"]) and ours["bytes_written"] == int(r["bytes_written"])
        print(f"| {r['case']} | {r['shape'].replace('x', ' x ')} {r['dtype']} | {r['axes']} | {r['op']} | "
              f"{r['kernels']} | {r['first_stage']} | {ours['kernels']} | {ratio:.3f} |")
    print(f"\n{same} of {len(rows)} cases: Orrery launches XLA's kernels and writes XLA's bytes exactly.\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orrery", required=True)
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    data = os.path.join(args.root, "validation/gpu/data")
    envs = {hardware: environment(os.path.join(data, folder, "environment.txt")) for hardware, folder, _ in GPUS}

    print("# GPU ground truth: single-device training steps\n")
    print("Generated by `make validate` (tools/validate_gpu.py) from validation/gpu/data; do not edit by hand.\n")
    measured_on = "; ".join(f"one {e['gpu']} (driver {e['driver']}; JAX {e['jax']}, cuDNN {e['cudnn']})"
                            for e in envs.values())
    print(f"Measured for this project on two GPUs — {measured_on} — clocks as found, by the scripts of "
          "validation/gpu (README there): five training steps (forward, backward, Optax AdamW; bf16 compute, f32 "
          "master weights) written in JAX, each exported as StableHLO, compiled by XLA and timed (5 warm-up steps, "
          "then the median of 30 steps with `block_until_ready`). JAX writes the same StableHLO for both GPUs "
          "(checked here against the SHA-256 sums the H100 run kept). Predicted: `orrery run` of that export on "
          "one device of the matching preset, whose roofline constants and kernel table were fitted on kernel "
          "microbenchmarks measured on the same GPU, never on these step times.\n")

    with tempfile.TemporaryDirectory() as work:
        texts = {}
        for name in PROGRAM_ORDER:
            if os.path.exists(os.path.join(data, "programs", name + ".stablehlo.mlir.xz")):
                texts[name] = export_text(data, name)
                with open(os.path.join(work, name + ".mlir"), "w") as f:
                    f.write(texts[name])
        results = {}
        for hardware, folder, _ in GPUS:
            check_exports(data, folder, texts)
            results[hardware] = measure(args, data, work, hardware, folder, texts)

        print("## Step times\n")
        print("Programs: Llama-style decoders (RMSNorm, RoPE, SwiGLU, grouped-query attention with the naive "
              "softmax(QK^T)V, untied LM head; batch 8 x 1,024 tokens, vocabulary 32,000) and ResNet v1.5 "
              "(NHWC, batch-norm in training mode; batch 128 at 224 x 224): validation/gpu/models.py. The "
              "column that carries one GPU's fitted constants to the other's peaks shows how far a fit transfers "
              "between two GPUs of one architecture (the H200 is the H100's die with faster memory).\n")
        for hardware, folder, second_run in GPUS:
            configs, rows = results[hardware]
            step_table(data, folder, hardware, second_run, configs, rows)

        print("## Where the time goes\n")
        print("Measured: the GPU kernels of three steps in the profiler trace (validation/gpu/trace_summary.py), "
              "per step: matrix kernels (cuBLAS, CUTLASS, XLA's Triton GEMMs; cuDNN convolutions, and the 1 x 1 "
              "convolutions XLA hands to cuBLAS) and everything else (XLA's fused kernels, copies). *busy* is the "
              "sum of kernel times, *gaps* the step's span minus that. Predicted: `orrery inspect --cost` with the "
              "frozen configuration's estimators (GEMM and convolution kernels against the rest; Orrery's kernel "
              "times include the fitted launch overhead, so its gaps are inside the kernels). Kernels: those the "
              "profiler saw per step (with the libraries' own helper kernels, memsets and copies), those of XLA's "
              "compiled program (the entry computation's fusions, library calls and copies, as the bytes table "
              "below counts them), and Orrery's (with the second stages of tree reductions; docs/compute.md, "
              "\"Fusion\").\n")
        for hardware, folder, _ in GPUS:
            time_table(data, folder, hardware, results[hardware][1])

        print("### Bytes the non-matrix kernels move\n")
        print("Orrery's fused kernels other than GEMMs and convolutions (`orrery inspect --cost`: bytes read and "
              "written) against the kernels of XLA's compiled program for each GPU (NAME.hlo.txt.xz: each kernel of "
              "the entry computation, fusions and copies, reading its operands once and writing its results, as "
              "the HLO lists them), and the bandwidth those kernels achieved: XLA's bytes over the measured time "
              "of the profiler's non-matrix kernels, as a fraction of the datasheet's.\n")
        header = "| program | Orrery (GB) |"
        rule = "|---|---|"
        for hardware, _, _ in GPUS:
            header += f" XLA on the {hardware} (GB) | Orrery / XLA | achieved on the {hardware} (TB/s) |"
            rule += "---|---|---|"
        print(header)
        print(rule)
        bandwidth = {hardware: load_hardware_bandwidth(args.root, hardware) for hardware, _, _ in GPUS}
        for i, name in enumerate(r[0] for r in results[GPUS[0][0]][1]):
            classes = results[GPUS[0][0]][1][i][4]["classes"]
            ours = sum(v["bytes"] for k, v in classes.items() if k not in ("gemm", "convolution"))
            cells = [name, f"{ours / 1e9:.1f}"]
            for hardware, folder, _ in GPUS:
                row = next((r for r in results[hardware][1] if r[0] == name), None)
                hlo = os.path.join(data, folder, "programs", name + ".hlo.txt.xz")
                xla = xla_kernel_bytes(hlo) if row is not None and os.path.exists(hlo) else None
                cls = row[3]["classes"] if row is not None else {}
                seconds = sum(cls.get(k, {}).get("seconds", 0.0) for k in ("fusion", "copy"))
                if xla is None or seconds <= 0:
                    cells += ["—", "—", "—"]
                    continue
                achieved = xla["other"] / seconds
                cells += [f"{xla['other'] / 1e9:.1f}", f"{ours / xla['other']:.2f}",
                          f"{achieved / 1e12:.2f} ({achieved / bandwidth[hardware] * 100:.0f}%)"]
            print("| " + " | ".join(cells) + " |")
        print()

        small_kernel_table(args, data, results)

        print("## XLA's fused kernels alone\n")
        print("The memory-bound patterns of these steps, each jitted by itself at the shapes the programs use "
              "(validation/gpu/fusions.py: batch-norm statistics, application and backward pass, ReLU gradient "
              "and residual add over ResNet-50's activations at batch 128; RMSNorm, SiLU gating, causal softmax and "
              "its backward pass over the Llama steps' shapes; an AdamW update), so that XLA generates the kernels "
              "it runs inside a step, and timed on both GPUs: *measured* is the GPU's busy time per call in a "
              "profiler trace (the kernels' durations, without launch gaps), *achieved bandwidth* XLA's bytes (its "
              "compiled HLO) over that time as a fraction of the datasheet's. Orrery costs the same JAX export with "
              "the frozen configuration (`orrery inspect --cost`; its kernel times include the fitted launch "
              "overhead, which these measurements leave out, so kernels of a few microseconds come out above "
              "them). Above 100%, a small case's data stays in the 50 MB L2 cache from call to call. A kernel-level "
              "check: none of these times was used to fit anything.\n")
        for hardware, folder, _ in GPUS:
            fusion_table(hardware, fusion_rows(args, data, work, hardware, hardware.lower(),
                                               os.path.join(args.root, f"configs/tables/{hardware}_kernels.csv")),
                         load_hardware_bandwidth(args.root, hardware))

        reduction_table(args, data, work)

        print("## Memory\n")
        print("Orrery's per-device peak estimate (the live buffers of the kernels it runs, fused as in the frozen configuration, in program order) against "
              "XLA's own for the compiled program (`compiled.memory_analysis()`: arguments + outputs − aliased + "
              "temporaries, after XLA's buffer assignment), on the H200.\n")
        print("| program | XLA peak (GiB) | Orrery peak (GiB) | ratio |")
        print("|---|---|---|---|")
        for name, meta, predicted, _, _ in results[GPUS[0][0]][1]:
            xla = meta.get("xla_memory_analysis", {}).get("peak_memory_in_bytes")
            mem = predicted[FROZEN].get("memory", [])
            ours = max((m.get("peak_bytes", 0) for m in mem), default=0)
            if xla:
                print(f"| {name} | {xla / 2 ** 30:.2f} | {ours / 2 ** 30:.2f} | {ours / xla:.2f} |")
        print()

        print("## Sharded exports\n")
        print("The same programs lowered for 4 and 8 devices (validation/gpu/sharded.py) are partitioned by "
              "Orrery's SPMD partitioner and compared with XLA's partitioned HLO in [spmd.md](spmd.md).\n")


if __name__ == "__main__":
    main()
