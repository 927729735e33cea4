// The estimator interface (DESIGN.md, "Compute"): estimate(op, hardware) -> {time, flops, bytes,
// bound, estimator, note}, and the memoising cache the simulator puts in front of it.
//
// Estimators are stateless with respect to the ops they cost (the subprocess plugin keeps a pipe,
// guarded internally), so one estimator may serve every rank. Errors that end the run (a plugin
// that crashes, hardware without the constants an estimator needs) are thrown as OrreryError
// naming the op; the table estimator's fallbacks are not errors and are recorded in the note.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "compute/hardware.h"
#include "compute/op_signature.h"
#include "util/units.h"

namespace orrery::compute {

// What limits an op's time.
enum class Bound : std::uint8_t {
  kCompute,   // the FLOP rate (or, systolic: the array's compute cycles)
  kMemory,    // memory bandwidth (systolic: DRAM stalls)
  kOverhead,  // the fixed launch overhead exceeds both
  kMeasured,  // a measured kernel time (table)
  kExternal,  // an external estimator (plugin) said so
  kNone,      // no work: the op costs nothing
};
std::string_view name(Bound bound);
std::optional<Bound> parse_bound(std::string_view text);

struct Estimate {
  SimTime time;
  Flops flops;
  Bytes bytes;
  Bound bound = Bound::kNone;
  std::string estimator;  // "roofline", "systolic", "table", "plugin:NAME", "fallback:roofline"
  std::string note;       // why: the rule, the table row or interpolation, the fallback reason
};

class Estimator {
 public:
  virtual ~Estimator() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual Estimate estimate(const OpSignature& op, const Hardware& hardware) const = 0;
};

struct CacheStats {
  std::uint64_t lookups = 0;
  std::uint64_t hits = 0;
  [[nodiscard]] std::uint64_t misses() const { return lookups - hits; }
  [[nodiscard]] double hit_rate() const {
    return lookups == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(lookups);
  }
};

// Memoises one estimator on one hardware by op signature. References it returns stay valid for
// the cache's lifetime. Not thread-safe: one cache per thread (or per simulation process).
class EstimateCache {
 public:
  EstimateCache(const Estimator& estimator, const Hardware& hardware) : estimator_(estimator), hardware_(hardware) {}

  const Estimate& estimate(const OpSignature& op);
  [[nodiscard]] const CacheStats& stats() const { return stats_; }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  void clear();

 private:
  const Estimator& estimator_;
  const Hardware& hardware_;
  std::unordered_map<OpSignature, Estimate, OpSignatureHash> entries_;
  CacheStats stats_;
};

}  // namespace orrery::compute
