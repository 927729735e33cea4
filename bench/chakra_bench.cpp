// Chakra frontend benchmark: how long loading a job's per-rank traces takes, and what the loaded
// programs hold, as the rank count grows.
//
//   chakra_bench TRACE.et [--ranks N,N,...] [--repeat R]
//
// A data-parallel job's ranks record the same graph; the job is made by linking <prefix>.<r>.et to
// TRACE for every rank r (no copies on disk; every rank's file is still read and decoded in full).
// Per rank count: wall and CPU time of load_workload (read, decode, check, group ranks that share
// a graph, build the programs), trace bytes decoded per second, and the heap the result holds
// (mallinfo2 after minus before, with the result alive and every temporary freed). Best of R.
// Last, the peak resident set of the whole run (every row's loads included).
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/chakra/workload.h"
#include "measure.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  using namespace orrery;
  using bench::cpu_seconds;
  using bench::heap_in_use;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE.et [--ranks N,N,...] [--repeat R]\n", argv[0]);
    return 2;
  }
  const fs::path trace = fs::absolute(argv[1]);
  std::vector<std::uint32_t> rank_counts = {1, 64, 1024};
  int repeat = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--ranks") {
      rank_counts.clear();
      std::stringstream list(argv[i + 1]);
      for (std::string item; std::getline(list, item, ',');) {
        rank_counts.push_back(static_cast<std::uint32_t>(std::stoul(item)));
      }
    } else if (option == "--repeat") {
      repeat = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "unknown option %s\n", option.c_str());
      return 2;
    }
  }
  std::error_code error;
  const auto file_bytes = fs::file_size(trace, error);
  if (error) {
    std::fprintf(stderr, "%s: %s\n", trace.c_str(), error.message().c_str());
    return 1;
  }
  const fs::path dir = fs::temp_directory_path() / ("orrery_chakra_bench_" + std::to_string(::getpid()));
  std::printf("trace %s: %.2f MB per rank\n\n", trace.c_str(), static_cast<double>(file_bytes) / 1e6);
  std::printf(
      "| ranks | trace bytes | programs | ops | load wall s | load CPU s | decoded MB/s | ranks/s | heap "
      "held MB |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::uint32_t ranks : rank_counts) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (std::uint32_t r = 0; r < ranks; ++r) {
      fs::create_symlink(trace, dir / ("t." + std::to_string(r) + ".et"));
    }
    frontend::chakra::WorkloadOptions options;
    options.prefix = (dir / "t").string();
    options.ranks = ranks;
    double best_wall = 1e300;
    double best_cpu = 1e300;
    std::size_t held = 0;
    std::size_t programs = 0;
    std::size_t ops = 0;
    for (int k = 0; k < repeat; ++k) {
      const std::size_t heap_before = heap_in_use();
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = cpu_seconds();
      auto loaded = frontend::chakra::load_workload(options);
      const double cpu = cpu_seconds() - cpu_start;
      const double wall = bench::seconds_since(start);
      if (!loaded) {
        std::fprintf(stderr, "%s\n", loaded.error().render().c_str());
        fs::remove_all(dir);
        return 1;
      }
      held = heap_in_use() - heap_before;
      programs = loaded.value().programs.size();
      ops = 0;
      for (const auto& program : loaded.value().programs) {
        ops += program.program->op_count();
      }
      best_wall = std::min(best_wall, wall);
      best_cpu = std::min(best_cpu, cpu);
    }
    const double bytes = static_cast<double>(file_bytes) * ranks;
    std::printf("| %u | %.1f MB | %zu | %zu | %.3f | %.3f | %.0f | %.0f | %.1f |\n", ranks, bytes / 1e6,
                programs, ops, best_wall, best_cpu, bytes / 1e6 / best_wall, ranks / best_wall,
                static_cast<double>(held) / 1e6);
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("\npeak RSS of the whole run: %.1f MB\n", static_cast<double>(usage.ru_maxrss) / 1e3);
  return 0;
}
