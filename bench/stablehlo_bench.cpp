// StableHLO frontend benchmark (issue 3, "Speed"): parse + lower throughput and the heap the IR
// holds, on a file built from the real Llama3-100M module by bench/gen_llama_stablehlo.py.
//
//   stablehlo_bench FILE [--repeat N]
//
// Throughput = file bytes / wall time of parse + lower (reading the file is timed separately).
// Heap is measured two ways: mallinfo2() (bytes in use, including mmapped blocks) after the parse
// minus before it, with the source already read, so that every parse-time temporary has been
// freed and only the programs remain; and the IR's own accounting (Program::heap_bytes(), the
// capacities of its tables). The source buffer, which the programs keep for attribute text and
// error locations, is reported beside them and in the total.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frontend/stablehlo/stablehlo.h"
#include "measure.h"

int main(int argc, char** argv) {
  using namespace orrery;
  using bench::cpu_seconds;
  using bench::heap_in_use;
  using bench::seconds_since;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE.mlir [--repeat N]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  int repeat = 3;
  if (argc >= 4 && std::string(argv[2]) == "--repeat") {
    repeat = std::atoi(argv[3]);
  }
  const auto read_start = std::chrono::steady_clock::now();
  auto source = frontend::stablehlo::read_source(path);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.error().render().c_str());
    return 1;
  }
  const double read_seconds = seconds_since(read_start);
  const double bytes = static_cast<double>(source.value()->text.size());

  double best = 1e30;
  double best_cpu = 1e30;
  std::size_t heap_delta = 0;
  std::size_t accounted = 0;
  std::size_t ops = 0;
  for (int i = 0; i < repeat; ++i) {
    const std::size_t before = heap_in_use();
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    auto modules = frontend::stablehlo::parse_source(source.value(), {});
    const double elapsed = seconds_since(start);
    best_cpu = std::min(best_cpu, cpu_seconds() - cpu_start);
    if (!modules.ok()) {
      std::fprintf(stderr, "%s\n", modules.error().render().c_str());
      return 1;
    }
    heap_delta = heap_in_use() - before;
    accounted = 0;
    ops = 0;
    for (const auto& module : modules.value()) {
      accounted += module.program->heap_bytes();
      ops += module.program->op_count();
    }
    best = std::min(best, elapsed);
  }
  const double mb = bytes / 1e6;
  std::printf("file            %s\n", path.c_str());
  std::printf("input           %.1f MB, %zu ops\n", mb, ops);
  std::printf("read            %.3f s\n", read_seconds);
  std::printf("parse+lower     %.3f s wall = %.0f MB/s; %.3f s CPU = %.0f MB/s (best of %d)\n", best,
              mb / best, best_cpu, mb / best_cpu, repeat);
  std::printf(
      "IR heap         %.1f MB measured (mallinfo2 delta) = %.2fx input; %.1f MB by the IR's accounting\n",
      static_cast<double>(heap_delta) / 1e6, static_cast<double>(heap_delta) / bytes,
      static_cast<double>(accounted) / 1e6);
  std::printf("IR heap+source %.1f MB = %.2fx input (the programs keep the source buffer)\n",
              static_cast<double>(heap_delta) / 1e6 + mb, (static_cast<double>(heap_delta) + bytes) / bytes);
  return 0;
}
