// Compute estimators benchmark (issue 4, "Speed"): cost every op of real StableHLO programs and
// report estimates per second with and without the memoising cache.
//
//   compute_bench FILE... [--hardware NAME] [--repeat N]
//
// For each module of each file, on a roofline ComputeModel of the preset (default A100_80GB):
//   cost_program, cold   cost_program on a fresh model: counting + estimating every op (ops/s)
//   cost_program, warm   the same on the model that has costed it once (every estimate a hit)
//   counting only        OpCounter::count over every op (ops/s)
//   estimates, cache     model.estimate over the program's kernel signatures, memoised, after a
//                        first pass filled the cache (estimates/s: hash + lookup)
//   estimates, no cache  the same with memoisation off: every estimate runs the roofline model
// Wall times are the best of N repeats (steady clock); the machine is named by run_benchmarks.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "compute/program_costs.h"
#include "compute/roofline.h"
#include "frontend/stablehlo/stablehlo.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Best wall time of `repeat` runs of `body`.
template <class Body>
double best_of(int repeat, Body&& body) {
  double best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const auto start = Clock::now();
    body();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

volatile std::uint64_t sink = 0;  // keeps results observable

void bench_module(const std::string& file, const orrery::workload::Program& program, const std::string& hardware,
                  int repeat) {
  using namespace orrery;
  const compute::Hardware preset = compute::load_hardware(hardware);
  const config::ComputeConfig roofline;
  const compute::CostOptions options;
  const std::size_t ops = program.op_count();

  // cost_program, cold (a fresh model each time) and warm.
  compute::CacheStats cold_stats;
  std::uint64_t kernels = 0;
  const double cold = best_of(repeat, [&] {
    compute::ComputeModel model(roofline, preset);
    const compute::ProgramCosts costs = compute::cost_program(program, model, options);
    cold_stats = costs.cache;
    kernels = costs.estimates;
    sink = sink + costs.ops.size();
  });
  compute::ComputeModel warm_model(roofline, preset);
  (void)compute::cost_program(program, warm_model, options);
  const double warm = best_of(repeat, [&] {
    const compute::ProgramCosts costs = compute::cost_program(program, warm_model, options);
    sink = sink + costs.ops.size();
  });

  // Counting only; and the kernel signatures, for the estimate loops.
  const compute::OpCounter counter(program, options.counting);
  compute::OpCount count;
  std::vector<compute::OpSignature> signatures;
  for (workload::OpId id = 0; id < ops; ++id) {
    counter.count(id, count);
    if (count.role == compute::CostRole::kCompute) {
      signatures.push_back(count.signature);
    }
  }
  const double counting = best_of(repeat, [&] {
    for (workload::OpId id = 0; id < ops; ++id) {
      counter.count(id, count);
      sink = sink + count.signature.elements;
    }
  });

  // Estimates with the cache (after one pass filled it) and without.
  compute::ComputeModel cached(std::make_unique<compute::RooflineEstimator>(), preset, true);
  for (const compute::OpSignature& s : signatures) {
    sink = sink + cached.estimate(s).time.ps();
  }
  constexpr int kPasses = 20;
  const double with_cache = best_of(repeat, [&] {
    for (int pass = 0; pass < kPasses; ++pass) {
      for (const compute::OpSignature& s : signatures) {
        sink = sink + cached.estimate(s).time.ps();
      }
    }
  }) / kPasses;
  compute::ComputeModel uncached(std::make_unique<compute::RooflineEstimator>(), preset, false);
  const double without_cache = best_of(repeat, [&] {
    for (const compute::OpSignature& s : signatures) {
      sink = sink + uncached.estimate(s).time.ps();
    }
  });

  const auto per_second = [](double amount, double seconds) { return seconds > 0 ? amount / seconds : 0.0; };
  const double n_signatures = static_cast<double>(signatures.size());
  std::printf("%s (module %u): %zu ops, %llu kernels, %zu signatures distinct in the cache, cold hit rate %.1f%%\n",
              file.c_str(), program.module_index(), ops, static_cast<unsigned long long>(kernels),
              static_cast<std::size_t>(cold_stats.misses()), 100.0 * cold_stats.hit_rate());
  std::printf("  %-36s %12.3f ms  %8.2f M ops/s\n", "cost_program, cold (count + estimate)", cold * 1e3,
              per_second(static_cast<double>(ops), cold) * 1e-6);
  std::printf("  %-36s %12.3f ms  %8.2f M ops/s\n", "cost_program, warm (every estimate hit)", warm * 1e3,
              per_second(static_cast<double>(ops), warm) * 1e-6);
  std::printf("  %-36s %12.3f ms  %8.2f M ops/s\n", "counting only", counting * 1e3,
              per_second(static_cast<double>(ops), counting) * 1e-6);
  std::printf("  %-36s %12.3f ms  %8.2f M estimates/s\n", "estimates with the cache", with_cache * 1e3,
              per_second(n_signatures, with_cache) * 1e-6);
  std::printf("  %-36s %12.3f ms  %8.2f M estimates/s\n", "estimates without the cache", without_cache * 1e3,
              per_second(n_signatures, without_cache) * 1e-6);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::string hardware = "A100_80GB";
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--hardware" && i + 1 < argc) {
      hardware = argv[++i];
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s FILE.mlir... [--hardware NAME] [--repeat N]\n", argv[0]);
    return 2;
  }
  try {
    for (const std::string& file : files) {
      auto modules = orrery::frontend::stablehlo::parse_file(file, {});
      if (!modules.ok()) {
        std::fprintf(stderr, "%s\n", modules.error().render().c_str());
        return 1;
      }
      for (const auto& module : modules.value()) {
        bench_module(file, *module.program, hardware, repeat);
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "compute_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
