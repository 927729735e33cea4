"""Sharded lowerings for 4 and 8 devices (run on the CPU with fake host devices).

Run with JAX_PLATFORMS=cpu XLA_FLAGS=--xla_force_host_platform_device_count=8. For each
(program, mesh) this writes under --out:
  NAME.MESH.pre.mlir.gz    the StableHLO JAX emits before partitioning (jit(...).lower().as_text(),
                           sharding annotations included)
  NAME.MESH.post.hlo.txt.gz XLA's partitioned, optimised HLO (lowered.compile().as_text(); the CPU
                           backend's fusion, the GPU's would differ; the SPMD partitioning is the same)
  NAME.MESH.json           mesh, shardings rule, times, errors
Meshes: fsdpN (parameters, optimizer state and batch sharded over N devices along their first
dimension), tpN (Megatron-style tensor parallelism: column-parallel wq/wk/wv/w1/w3/lm_head and
embedding columns, row-parallel wo/w2; batch replicated), dp2tp4 (batch over 'data', tp over 'model').
ResNets get dpN (parameters replicated, batch sharded) and fsdpN (convolution weights sharded on
their output channels).
"""
import argparse
import gzip
import json
import os
import sys
import time
import traceback

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

COLUMN = {"wq", "wk", "wv", "w1", "w3", "lm_head"}
ROW = {"wo", "w2"}


def leaf_name(path):
    names = [k.key for k in path if isinstance(k, jax.tree_util.DictKey)]
    return names[-1] if names else ""


def spec_for(kind, name, shape, axis, n):
    nd = len(shape)
    if nd == 0:
        return P()
    if kind == "fsdp":
        if nd >= 2 and shape[0] % n == 0:
            return P(axis, *([None] * (nd - 1)))
        return P(*([None] * nd))
    if kind == "fsdp_conv":  # ResNet: convolution kernels HWIO on O, the classifier on its input
        if nd == 4 and shape[3] % n == 0:
            return P(None, None, None, axis)
        if nd == 2 and shape[0] % n == 0:
            return P(axis, None)
        return P(*([None] * nd))
    if kind == "tp":
        if nd == 2 and (name in COLUMN or name == "embed") and shape[1] % n == 0:
            return P(None, axis)
        if nd == 2 and name in ROW and shape[0] % n == 0:
            return P(axis, None)
        return P(*([None] * nd))
    return P(*([None] * nd))  # replicated


MESHES = {
    "llama": {
        "fsdp4": dict(shape=(4,), axes=("fsdp",), param=("fsdp", "fsdp"), batch="fsdp"),
        "fsdp8": dict(shape=(8,), axes=("fsdp",), param=("fsdp", "fsdp"), batch="fsdp"),
        "tp4": dict(shape=(4,), axes=("model",), param=("tp", "model"), batch=None),
        "tp8": dict(shape=(8,), axes=("model",), param=("tp", "model"), batch=None),
        "dp2tp4": dict(shape=(2, 4), axes=("data", "model"), param=("tp", "model"), batch="data"),
    },
    "resnet": {
        "dp4": dict(shape=(4,), axes=("data",), param=("replicated", None), batch="data"),
        "dp8": dict(shape=(8,), axes=("data",), param=("replicated", None), batch="data"),
        "fsdp8": dict(shape=(8,), axes=("data",), param=("fsdp_conv", "data"), batch="data"),
    },
}


def lower(name, mesh_name, m, out):
    rec = {"program": name, "mesh": mesh_name, "mesh_shape": list(m["shape"]), "mesh_axes": list(m["axes"]),
           "ok": False}
    try:
        n_dev = int(np.prod(m["shape"]))
        mesh = Mesh(np.array(jax.devices()[:n_dev]).reshape(m["shape"]), m["axes"])
        holder = {}

        def build():  # shapes only: nothing is allocated or initialised
            holder["step"], args = models.program(name)
            return args

        shapes = jax.eval_shape(build)
        step = holder["step"]
        kind, axis = m["param"]
        n_axis = mesh.shape[axis] if axis else 1

        def shard(path, x):
            return NamedSharding(mesh, spec_for(kind, leaf_name(path), x.shape, axis, n_axis))

        n_state = len(shapes) - 2
        state_sh = [jax.tree_util.tree_map_with_path(shard, a) for a in shapes[:n_state]]
        batch_sh = [NamedSharding(mesh, P(m["batch"], *([None] * (len(b.shape) - 1))) if m["batch"] else P())
                    for b in shapes[n_state:]]
        jitted = jax.jit(step, in_shardings=tuple(state_sh + batch_sh))
        t0 = time.perf_counter()
        lowered = jitted.lower(*shapes)
        rec["lower_s"] = time.perf_counter() - t0
        with gzip.open(os.path.join(out, f"{name}.{mesh_name}.pre.mlir.gz"), "wt", compresslevel=9) as f:
            f.write(lowered.as_text())
        t0 = time.perf_counter()
        compiled = lowered.compile()
        rec["compile_s"] = time.perf_counter() - t0
        with gzip.open(os.path.join(out, f"{name}.{mesh_name}.post.hlo.txt.gz"), "wt", compresslevel=9) as f:
            f.write(compiled.as_text())
        rec["ok"] = True
        print(f"{name} {mesh_name}: lowered {rec['lower_s']:.1f} s, compiled {rec['compile_s']:.1f} s", flush=True)
    except Exception as e:
        rec["error"] = repr(e)
        rec["traceback"] = traceback.format_exc()
        print(f"{name} {mesh_name}: FAILED {e!r}", flush=True)
    with open(os.path.join(out, f"{name}.{mesh_name}.json"), "w") as f:
        json.dump(rec, f, indent=1)
    jax.clear_caches()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("programs", nargs="*", default=["llama-60m", "resnet50", "llama-250m", "resnet18", "llama-900m"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print("jax", jax.__version__, "devices", len(jax.devices()), jax.devices()[0].platform, flush=True)
    for name in a.programs:
        family = "llama" if name in models.LLAMA else "resnet"
        for mesh_name, m in MESHES[family].items():
            lower(name, mesh_name, m, a.out)


if __name__ == "__main__":
    main()
