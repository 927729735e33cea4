#!/usr/bin/python3
"""An example estimator plugin speaking Orrery's JSON-lines protocol (docs/compute.md, "Plugins").

It costs every op as a datasheet roofline, max(FLOPs / peak, bytes / bandwidth) plus the preset's
launch overhead, times a scale given in the options as "scale=X" (default 1), exactly like the
C example (example_plugin.c). Name it in a scenario:
    compute: {default: plugin, plugin: src/compute/plugins/example_plugin.py, plugin_options: "scale=1.2"}
"""
import json
import sys


def main():
    hello = json.loads(sys.stdin.readline())
    if hello.get("protocol") != 1:
        sys.exit(f"unsupported protocol {hello.get('protocol')}")
    options = hello.get("options", "")
    scale = float(options[len("scale="):]) if options.startswith("scale=") else 1.0
    print(json.dumps({"protocol": 1, "name": "example-jsonl"}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        op, hardware = request["op"], request["hardware"]
        compute = op["flops"] / hardware["peak_flops"]
        memory = (op["bytes_read"] + op["bytes_written"]) / hardware["memory_bandwidth"]
        work = max(compute, memory)
        time_s = 0.0 if work == 0.0 else (work + hardware["launch_overhead_s"]) * scale
        answer = {"id": request["id"], "time_s": time_s, "bound": "compute" if compute >= memory else "memory",
                  "note": f"example JSON-lines plugin: datasheet roofline x {scale:g} on {hardware['name']}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
