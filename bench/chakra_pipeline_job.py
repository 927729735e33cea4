#!/usr/bin/env python3
"""Writes a Chakra job of pipeline stages with data parallelism inside each stage (bench/RESULTS.md,
"Jobs whose ranks run different graphs"): RANKS ranks in STAGES stages of RANKS / STAGES ranks; rank
r is stage r // D, data-parallel index r % D (D = RANKS / STAGES). Per step and micro-batch each
stage receives activations from the previous stage, runs LAYERS forward kernels and sends its
activations on; backward runs the other way; then each stage reduces its gradients over its own
ranks in LAYERS buckets and every rank reduces a gradient norm (4 bytes) over all ranks. The stages'
graphs differ (their process groups and ends do), so every reduction over all ranks joins
programs. Nodes are encoded with protoc (tests/chakra_pb.py); identical nodes are encoded once.

usage: chakra_pipeline_job.py ROOT RANKS STAGES MICROBATCHES LAYERS PREFIX   (ROOT: the repository)"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import chakra_pb  # noqa: E402

ROOT = sys.argv[1]
RANKS, STAGES, MICRO, LAYERS = (int(a) for a in sys.argv[2:6])
PREFIX = sys.argv[6]
D = RANKS // STAGES
assert D * STAGES == RANKS, "RANKS must be a multiple of STAGES"
ACTIVATION = 8 << 20  # bytes sent between stages per micro-batch
BUCKET = 25 << 20     # bytes per gradient bucket

cache = {}


def node(id, kind, deps=(), duration=None, attrs=()):
    key = (id, kind, tuple(deps), duration, tuple(attrs))
    if key not in cache:
        cache[key] = chakra_pb.node(ROOT, id, kind, deps, duration, attrs)
    return cache[key]


def rank_trace(r):
    stage, index = divmod(r, D)
    out = [chakra_pb.metadata(ROOT)]
    next_id = 0

    def add(kind, deps=(), duration=None, attrs=()):
        nonlocal next_id
        out.append(node(next_id, kind, deps, duration, attrs))
        next_id += 1
        return next_id - 1

    def p2p(kind, peer_stage, tag, deps):
        field = "comm_dst" if kind == "COMM_SEND_NODE" else "comm_src"
        return add(kind, deps, attrs=[("comm_size", "int64_val", ACTIVATION),
                                      (field, "int32_val", peer_stage * D + index), ("comm_tag", "int32_val", tag)])

    last = None
    for m in range(MICRO):  # forward of each micro-batch
        deps = [] if last is None else [last]
        if stage > 0:
            deps.append(p2p("COMM_RECV_NODE", stage - 1, 1, []))
        for _ in range(LAYERS):
            last = add("COMP_NODE", deps, duration=200)
            deps = [last]
        if stage + 1 < STAGES:
            p2p("COMM_SEND_NODE", stage + 1, 1, [last])
    for m in range(MICRO):  # backward, in the same order
        deps = [last]
        if stage + 1 < STAGES:
            deps.append(p2p("COMM_RECV_NODE", stage + 1, 2, []))
        for _ in range(LAYERS):
            last = add("COMP_NODE", deps, duration=400)
            deps = [last]
        if stage > 0:
            p2p("COMM_SEND_NODE", stage - 1, 2, [last])
    for _ in range(LAYERS):
        last = add("COMM_COLL_NODE", [last], attrs=[("comm_type", "int64_val", 0), ("comm_size", "int64_val", BUCKET),
                                                    ("pg_name", "string_val", f'"dp{stage}"')])
    add("COMM_COLL_NODE", [last], attrs=[("comm_type", "int64_val", 0), ("comm_size", "int64_val", 4),
                                         ("pg_name", "string_val", '"all"')])
    return b"".join(out)


for r in range(RANKS):
    with open(f"{PREFIX}.{r}.et", "wb") as f:
        f.write(rank_trace(r))
groups = {f"dp{s}": list(range(s * D, (s + 1) * D)) for s in range(STAGES)}
groups["all"] = list(range(RANKS))
with open(f"{PREFIX}.comm_groups.json", "w") as f:
    json.dump(groups, f)
