#!/usr/bin/env python3
"""Writes small Chakra jobs whose ranks run different graphs (tests/integration/chakra_joint.sh):
PREFIX.<rank>.et for each rank of job NAME, and PREFIX.comm_groups.json when the job has groups.
Nodes are encoded with protoc (tests/chakra_pb.py).

usage: chakra_jobs.py ROOT NAME PREFIX   (ROOT: the repository, for the .proto)"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import chakra_pb  # noqa: E402

ROOT, NAME, PREFIX = sys.argv[1:4]
MIB = 1 << 20


def comp(id, us, deps=()):
    return (id, "COMP_NODE", deps, us, [])


def all_reduce(id, size, deps=(), group=None):
    attrs = [("comm_type", "int64_val", 0), ("comm_size", "int64_val", size)]
    if group is not None:
        attrs.append(("pg_name", "string_val", f'"{group}"'))
    return (id, "COMM_COLL_NODE", deps, None, attrs)


def send(id, size, dst, tag, deps=()):
    return (id, "COMM_SEND_NODE", deps, None,
            [("comm_size", "int64_val", size), ("comm_dst", "int32_val", dst), ("comm_tag", "int32_val", tag)])


def recv(id, size, src, tag, deps=()):
    return (id, "COMM_RECV_NODE", deps, None,
            [("comm_size", "int64_val", size), ("comm_src", "int32_val", src), ("comm_tag", "int32_val", tag)])


def pipeline_stage0(r):  # forward, send activations on, receive their gradient, backward, reduce
    return [comp(0, 100), send(1, 4 * MIB, r + 2, 1, [0]), recv(2, 4 * MIB, r + 2, 2), comp(3, 200, [2]),
            all_reduce(4, 16 * MIB, [3], "dp0"), all_reduce(5, 4, [4], "all")]


def pipeline_stage1(r):  # receive activations, forward and loss, backward, send the gradient back
    return [recv(0, 4 * MIB, r - 2, 1), comp(1, 150, [0]), comp(2, 250, [1]), send(3, 4 * MIB, r - 2, 2, [2]),
            all_reduce(4, 8 * MIB, [2], "dp1"), all_reduce(5, 4, [4], "all")]


def shift(r, ranks=4):  # a pipeline shift: receive from r - 1, compute, send to r + 1; then reduce over all
    nodes = [comp(0, 10 + 5 * r)]
    if r > 0:
        nodes.append(recv(1, MIB, r - 1, 0))
    if r + 1 < ranks:
        nodes.append(send(2, MIB, r + 1, 0, [0] + ([1] if r > 0 else [])))
    nodes.append(all_reduce(3, MIB, [n[0] for n in nodes[1:]] or [0]))
    return nodes


def fan_in(r):  # ranks 0 and 1 send 1 MiB each to rank 2 (one tag), which reduces them
    if r < 2:
        return [comp(0, 20), send(1, MIB, 2, 5, [0])]
    return [recv(0, MIB, 0, 5), recv(1, MIB, 1, 5), comp(2, 30, [0, 1])]


def distinct(ranks):  # rank r with r more nodes that take no time: every rank a graph of its own
    return [nodes + [(100 + k, "COMP_NODE", (), None, []) for k in range(r)] for r, nodes in enumerate(ranks)]


# Each job: (list of ranks' node lists, communicator groups or None).
JOBS = {
    # One graph on both ranks: 25 us of compute, then a 1 MiB all-reduce.
    "shared": ([[comp(0, 25), all_reduce(1, MIB, [0])]] * 2, None),
    # The same work split differently: rank 1 runs its 25 us as two kernels (different graphs).
    "joint": ([[comp(0, 25), all_reduce(1, MIB, [0])],
               [comp(0, 10), comp(1, 15, [0]), all_reduce(2, MIB, [1])]], None),
    "size_mismatch": ([[all_reduce(0, MIB)], [comp(0, 5), all_reduce(1, 2 * MIB, [0])]], None),
    "count_mismatch": ([[all_reduce(0, MIB), all_reduce(1, MIB, [0])], [all_reduce(0, MIB)]], None),
    # Rank 2 is in group g but runs no collective on it.
    "missing": ([[comp(0, 5), all_reduce(1, MIB, [0], "g")]] * 2 + [[comp(0, 5)]], {"g": [0, 1, 2]}),
    # Ranks 0 and 1 wait for each other: rank 0 reduces over a then b, rank 1 over b then a.
    "crossed": ([[all_reduce(0, MIB, (), "a"), all_reduce(1, MIB, [0], "b")],
                 [all_reduce(0, MIB, (), "b"), all_reduce(1, MIB, [0], "a")],
                 [all_reduce(0, MIB, (), "b")]], {"a": [0, 1], "b": [0, 1, 2]}),
    # Two pipeline stages of two data-parallel ranks each: the stages' graphs differ; each stage
    # reduces its gradients over its own ranks, then all four reduce a norm (a joint collective).
    "pipeline": ([pipeline_stage0(0), pipeline_stage0(1), pipeline_stage1(2), pipeline_stage1(3)],
                 {"dp0": [0, 1], "dp1": [2, 3], "all": [0, 1, 2, 3]}),
    # Ranks 1 and 2 share a graph but send to ranks of different graphs (2 and 3): they are split.
    "shift": ([shift(r) for r in range(4)], None),
    "shift_distinct": (distinct([shift(r) for r in range(4)]), None),
    # Ranks 0 and 1 share a graph and send to a graph of one rank: they are split.
    "fan_in": ([fan_in(r) for r in range(3)], None),
    "fan_in_distinct": (distinct([fan_in(r) for r in range(3)]), None),
}

ranks, groups = JOBS[NAME]
for rank, nodes in enumerate(ranks):
    trace = chakra_pb.metadata(ROOT)
    for id, kind, deps, duration, attrs in nodes:
        trace += chakra_pb.node(ROOT, id, kind, deps, duration, attrs)
    with open(f"{PREFIX}.{rank}.et", "wb") as f:
        f.write(trace)
if groups is not None:
    with open(f"{PREFIX}.comm_groups.json", "w") as f:
        json.dump(groups, f)
