// One seeded random stream per LP (STYLE.md, rule 10), so results do not depend on which process
// runs an LP. The generator is PCG32 (O'Neill 2014, the Debian libpcg-cpp-dev header): 16 bytes
// of state, a distinct stream per LP id.
#pragma once

#include <boost/random/exponential_distribution.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstdint>
#include <pcg_random.hpp>

#include "util/hash.h"

namespace orrery::pdes {

class Random {
 public:
  Random() = default;
  Random(std::uint64_t seed, std::uint64_t stream) : engine_(mix64(seed ^ mix64(stream)), stream) {}

  std::uint32_t next_u32() { return engine_(); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() {
    const std::uint64_t high = engine_() >> 5;  // 27 bits
    const std::uint64_t low = engine_() >> 6;   // 26 bits
    return static_cast<double>((high << 26) | low) * 0x1.0p-53;
  }
  // Uniform integer in [0, bound), without modulo bias. bound > 0.
  std::uint32_t below(std::uint32_t bound) { return engine_(bound); }
  // Exponential with the given mean, by Boost.Random's ziggurat (Marsaglia and Tsang 2000): a table
  // lookup and one comparison in about 98% of draws, a logarithm only in the tail.
  double exponential(double mean) {
    return mean * boost::random::exponential_distribution<double>(1.0)(engine_);
  }
  // Normal with the given mean and standard deviation, by Boost.Random's ziggurat.
  double normal(double mean, double deviation) {
    return boost::random::normal_distribution<double>(mean, deviation)(engine_);
  }

 private:
  pcg32 engine_;
};

}  // namespace orrery::pdes
