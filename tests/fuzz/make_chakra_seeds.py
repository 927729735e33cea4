#!/usr/bin/env python3
"""Writes the seed corpus of the Chakra fuzz target (tests/fuzz/corpus/chakra; format in
chakra_fuzz_one.h): ASTRA-sim's 4-NPU microbenchmarks from tests/data/chakra (MIT, see its
NOTICE.md), with communicator groups and network dimensions, a gzip file, and a 3-rank job of
every node kind encoded with protoc. Run from the repository root."""
import gzip
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import chakra_pb  # noqa: E402

ROOT = "tests/data/chakra/astra-sim"
OUT = "tests/fuzz/corpus/chakra"


def job(parts, flags=0):
    return bytes([flags]) + b"RANK".join(parts)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def node(*args, **kwargs):
    return chakra_pb.node(".", *args, **kwargs)


def every_kind(rank):
    trace = chakra_pb.metadata(".")
    trace += node(0, "COMP_NODE", duration=5)
    trace += node(1, "COMM_SEND_NODE", [0], attrs=[("comm_size", "int64_val", 1000),
                                                     ("comm_dst", "int32_val", (rank + 1) % 3), ("comm_tag", "int32_val", 0)])
    trace += node(2, "COMM_RECV_NODE", [0], attrs=[("comm_size", "int64_val", 1000),
                                                     ("comm_src", "int32_val", (rank + 2) % 3), ("comm_tag", "int32_val", 0)])
    trace += node(3, "COMP_NODE", [1, 2], attrs=[("num_ops", "uint64_val", 1000000), ("tensor_size", "uint64_val", 4096)])
    trace += node(4, "MEM_LOAD_NODE", [3], attrs=[("tensor_size", "uint64_val", 4096)])
    trace += node(5, "COMM_COLL_NODE", [4], attrs=[("comm_type", "int64_val", 0), ("comm_size", "int64_val", 65536),
                                                     ("pg_name", "string_val", '"g"')])
    return trace


def main():
    seeds = []
    for kind in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]:
        seeds.append(job([read(f"{ROOT}/microbenchmarks/{kind}/4npus_1MB/{kind}.{r}.et") for r in range(4)]))
    all_reduce = [read(f"{ROOT}/microbenchmarks/all_reduce/4npus_1MB/all_reduce.{r}.et") for r in range(4)]
    seeds.append(job(all_reduce + [b'{"0": [0, 1], "1": [2, 3]}'], flags=1))  # communicator groups
    seeds.append(job(all_reduce, flags=2))  # network dimensions 2 x 2
    seeds.append(job([every_kind(r) for r in range(3)] + [b'{"g": [0, 1, 2]}'], flags=1))
    seeds.append(job([gzip.compress(all_reduce[0], mtime=0)]))
    for i, seed in enumerate(seeds, 1):
        with open(f"{OUT}/seed_{i:02d}.bin", "wb") as f:
            f.write(seed)


if __name__ == "__main__":
    main()
