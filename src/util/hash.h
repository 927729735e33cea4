// Non-cryptographic 64-bit mixing for determinism checks and memoisation keys.
// mix64 is the finaliser of SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a bijection on 64-bit words with full avalanche.
#pragma once

#include <cstdint>
#include <string_view>

namespace orrery {

constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Order-dependent combination: hash_combine(hash_combine(h, a), b) != hash_combine(hash_combine(h, b), a).
constexpr std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) {
  return mix64(seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

// FNV-1a over bytes, then mixed; stable across platforms and runs.
constexpr std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ULL) {
  std::uint64_t h = seed;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return mix64(h);
}

}  // namespace orrery
