"""The kernels of a compiled XLA module (HLO text, `compiled.as_text()`) and the bytes each moves:
the instructions of the entry computation that launch work (fusions, custom calls, copies, ...),
each reading its operands once and writing its results, as the HLO lists them (an upper bound for
a kernel that reads part of an operand). Used by fusions.py on the GPU machine and by
tools/validate_gpu.py; needs nothing beyond the standard library."""
import re

ELEMENT_BYTES = {"pred": 1, "s8": 1, "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1, "bf16": 2, "f16": 2, "s16": 2, "u16": 2,
                 "f32": 4, "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u64": 8}
SHAPE = re.compile(r"\b(" + "|".join(ELEMENT_BYTES) + r")\[([0-9,]*)\]")
INSTRUCTION = re.compile(r"^\s+(?:ROOT )?%(\S+) = (.*?) ([a-z][a-z0-9-]*)\((.*?)\)(, .*)?$")
FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "partition-id",
        "replica-id", "opt-barrier"}


def shape_bytes(text):
    total = 0
    for element, dims in SHAPE.findall(text):
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        total += n * ELEMENT_BYTES[element]
    return total


def entry_kernels(hlo):
    """[(name, opcode, bytes read, bytes written, attributes)] of the entry computation's kernels;
    None without an entry computation, or when the entry holds a loop (its body's kernels run a trip count of times, which this list
    does not follow)."""
    lines = hlo.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("ENTRY ")), None)
    if start is None:
        return None
    shapes = {}
    kernels = []
    for line in lines[start + 1:]:
        if line.startswith("}"):
            break
        m = INSTRUCTION.match(line)
        if not m:
            continue
        name, shape, op, args, rest = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5) or ""
        shapes[name] = shape
        if op == "while":
            return None
        if op in FREE:
            continue
        operands = dict.fromkeys(a.strip()[1:] for a in args.split(",") if a.strip().startswith("%"))
        if op == "custom-call" and shape.startswith("("):
            shape = shape[1:].split("}, ")[0]  # the result; the rest is the library's scratch space
        kernels.append((name, op, sum(shape_bytes(shapes.get(o, "")) for o in operands), shape_bytes(shape), rest))
    return kernels
