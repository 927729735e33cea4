// Physical units as types. No unit-less double crosses a module boundary (STYLE.md, rule 3).
//
// SimTime is the simulator's clock: an unsigned 64-bit count of picoseconds (DESIGN.md,
// invariant 1). Floating-point quantities computed inside models become SimTime through one
// rounding rule, SimTime::from_seconds: round up to the next whole picosecond, except that a
// value within a relative 1e-12 of a whole picosecond is taken as that picosecond (so 1e-9 s is
// exactly 1000 ps rather than 1001 ps because of binary representation error). Rounding up keeps
// every positive duration positive and never lets a transfer finish early.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

namespace orrery {

class SimTime {
 public:
  constexpr SimTime() = default;

  static constexpr SimTime from_ps(std::uint64_t picoseconds) { return SimTime(picoseconds); }
  static constexpr SimTime from_ns(std::uint64_t nanoseconds) { return SimTime(nanoseconds * 1000); }
  static constexpr SimTime zero() { return SimTime(0); }
  // The end of time: "never". Addition saturates here.
  static constexpr SimTime max() { return SimTime(std::numeric_limits<std::uint64_t>::max()); }

  // The rounding rule (see the file comment). Throws OrreryError for negative or NaN input;
  // values beyond the representable range saturate to max().
  static SimTime from_seconds(double seconds) {
    const double picoseconds = seconds * 1e12;
    if (!(picoseconds >= 0.0) || picoseconds >= 18446744073709549568.0) [[unlikely]] {
      return from_seconds_out_of_range(seconds);
    }
    // Round up, but forgive representation error within a relative 1e-12 of a whole picosecond.
    const auto whole = static_cast<std::uint64_t>(picoseconds);  // truncation = floor for x >= 0
    const double fraction = picoseconds - static_cast<double>(whole);
    return SimTime(fraction <= picoseconds * 1e-12 ? whole : whole + 1);
  }
  static SimTime from_nanoseconds(double nanoseconds) { return from_seconds(nanoseconds * 1e-9); }
  static SimTime from_microseconds(double microseconds) { return from_seconds(microseconds * 1e-6); }

  [[nodiscard]] constexpr std::uint64_t ps() const { return picoseconds_; }
  [[nodiscard]] constexpr bool is_max() const { return picoseconds_ == max().picoseconds_; }
  [[nodiscard]] double seconds() const { return static_cast<double>(picoseconds_) * 1e-12; }
  [[nodiscard]] double nanoseconds() const { return static_cast<double>(picoseconds_) * 1e-3; }

  friend constexpr auto operator<=>(SimTime, SimTime) = default;

  // Saturating addition: anything plus max() is max().
  friend constexpr SimTime operator+(SimTime a, SimTime b) {
    std::uint64_t sum = 0;
    if (__builtin_add_overflow(a.picoseconds_, b.picoseconds_, &sum)) {
      return max();
    }
    return SimTime(sum);
  }
  constexpr SimTime& operator+=(SimTime other) { return *this = *this + other; }
  // Difference of two times; the caller guarantees a >= b (checked in debug builds).
  friend constexpr SimTime operator-(SimTime a, SimTime b) {
    return SimTime(a.picoseconds_ >= b.picoseconds_ ? a.picoseconds_ - b.picoseconds_ : 0);
  }
  friend constexpr SimTime operator*(SimTime a, std::uint64_t factor) {
    std::uint64_t product = 0;
    if (__builtin_mul_overflow(a.picoseconds_, factor, &product)) {
      return max();
    }
    return SimTime(product);
  }

 private:
  // Negative or NaN: throws OrreryError(kInternal). Too large: max().
  static SimTime from_seconds_out_of_range(double seconds);
  constexpr explicit SimTime(std::uint64_t picoseconds) : picoseconds_(picoseconds) {}
  std::uint64_t picoseconds_ = 0;
};

// A count of bytes. Sums and multiples saturate at 2^64 - 1 (is_max), as SimTime does: a traffic
// total through loops of huge trip counts stays an upper bound instead of wrapping to a small one.
struct Bytes {
  std::uint64_t count = 0;
  static constexpr Bytes max() { return Bytes{~std::uint64_t{0}}; }
  [[nodiscard]] constexpr bool is_max() const { return count == ~std::uint64_t{0}; }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;
  friend constexpr Bytes operator+(Bytes a, Bytes b) {
    std::uint64_t sum = 0;
    return __builtin_add_overflow(a.count, b.count, &sum) ? max() : Bytes{sum};
  }
  constexpr Bytes& operator+=(Bytes other) { return *this = *this + other; }
  friend constexpr Bytes operator*(Bytes a, std::uint64_t factor) {
    std::uint64_t product = 0;
    return __builtin_mul_overflow(a.count, factor, &product) ? max() : Bytes{product};
  }
  [[nodiscard]] constexpr double as_double() const { return static_cast<double>(count); }
};

// A bandwidth in bytes per second (decimal: 1 GB/s = 1e9 B/s unless a format says otherwise).
struct BytesPerSecond {
  double value = 0.0;
  static constexpr BytesPerSecond from_gigabytes(double gigabytes_per_second) {
    return BytesPerSecond{gigabytes_per_second * 1e9};
  }
  // ASTRA-sim's analytical backend reads "1 GB/s" as 2^30 bytes per second.
  static constexpr BytesPerSecond from_gibibytes(double gibibytes_per_second) {
    return BytesPerSecond{gibibytes_per_second * 1073741824.0};
  }
  friend constexpr auto operator<=>(BytesPerSecond, BytesPerSecond) = default;
};

// Floating-point operations (a count, not a rate).
struct Flops {
  double value = 0.0;
  friend constexpr auto operator<=>(Flops, Flops) = default;
  friend constexpr Flops operator+(Flops a, Flops b) { return Flops{a.value + b.value}; }
  constexpr Flops& operator+=(Flops other) {
    value += other.value;
    return *this;
  }
};

// A compute rate in floating-point operations per second.
struct FlopsPerSecond {
  double value = 0.0;
  static constexpr FlopsPerSecond from_teraflops(double teraflops) {
    return FlopsPerSecond{teraflops * 1e12};
  }
  friend constexpr auto operator<=>(FlopsPerSecond, FlopsPerSecond) = default;
};

// Seconds needed to move `bytes` at `rate` (rate must be positive).
[[nodiscard]] inline double transfer_seconds(Bytes bytes, BytesPerSecond rate) {
  return bytes.as_double() / rate.value;
}

}  // namespace orrery
