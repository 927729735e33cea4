// The table estimator: measured kernel times, matched by kind, element type and shape.
//
// For an op on hardware H (docs/compute.md, "Table estimator"):
//   1. Rows of the same kind, class and element type are candidates; rows measured on H itself
//      are preferred, otherwise the device with the most such rows (whose preset loads) is the
//      source and the result is transferred (4). No candidate: the fallback estimator, with the
//      reason in the note.
//   2. Exact shape: the measured time (repeated measurements of one shape are averaged).
//      Otherwise, if rows equal to the op in every dimension but one bracket it in that dimension,
//      log-log interpolation between the two nearest: ln t = ln t0 + (ln x - ln x0) / (ln x1 -
//      ln x0) * (ln t1 - ln t0); of several such dimensions, the tightest bracket wins.
//   3. Otherwise the nearest measured shapes (at most `neighbours`, within `max_distance` in
//      sum_i |ln q_i - ln p_i|) are scaled by the roofline ratio R(op) / R(op resized to p), and
//      combined as a geometric mean weighted by 1 / (distance + 0.001). Beyond max_distance: the
//      fallback.
//   4. Transfer from the source device D to H: t_H = t_D * R_H(op) / R_D(op), with R the roofline
//      time of each preset (its fitted efficiencies and launch overhead): memory-bound ops scale
//      by the bandwidth ratio, compute-bound ones by the peak ratio.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compute/estimator.h"
#include "compute/kernel_table.h"

namespace orrery::compute {

struct TableOptions {
  std::size_t neighbours = 2;
  double max_distance = 4.605170185988092;  // ln 100: at most a 100x total change of shape
};

class TableEstimator final : public Estimator {
 public:
  // `fallback` costs what the table cannot (never null). Presets of source devices are loaded by
  // name (load_hardware) when a transfer first needs them.
  TableEstimator(std::vector<KernelMeasurement> rows, std::unique_ptr<Estimator> fallback, TableOptions options = {});

  [[nodiscard]] std::string_view name() const override { return "table"; }
  [[nodiscard]] Estimate estimate(const OpSignature& op, const Hardware& hardware) const override;

  [[nodiscard]] std::size_t size() const { return row_count_; }
  // Registers a preset for transfers (tests, or a caller that loaded it already).
  void add_preset(Hardware hardware);

 private:
  struct Point {
    std::vector<std::uint64_t> shape;
    std::vector<double> log_shape;
    double time_s = 0.0;
    std::size_t repeats = 0;
    std::string source;
  };
  struct Key {
    std::string kind;
    OpClass op_class;
    ElementType element_type;
    auto operator<=>(const Key&) const = default;
  };
  // key -> device -> points
  using Devices = std::map<std::string, std::vector<Point>>;

  struct Lookup {
    double time_s = 0.0;
    std::string how;
  };
  std::optional<Lookup> lookup(const std::vector<Point>& points, const OpSignature& op, const Hardware& device,
                               std::string& reason) const;
  const Hardware* preset(const std::string& name, const Hardware& target, std::string& reason) const;
  Estimate fall_back(const OpSignature& op, const Hardware& hardware, const std::string& reason) const;

  std::map<Key, Devices> index_;
  std::size_t row_count_ = 0;
  std::unique_ptr<Estimator> fallback_;
  TableOptions options_;
  mutable std::mutex presets_mutex_;
  mutable std::map<std::string, std::unique_ptr<Hardware>> presets_;
};

// The op resized to another table shape of its class: FLOPs and bytes scaled by the ratio of the
// textbook counts of the two shapes (GEMM and convolution formulas of op_signature.h; element
// counts otherwise). The table estimator's reference op for a measured shape.
OpSignature resized_signature(const OpSignature& op, const std::vector<std::uint64_t>& shape);

}  // namespace orrery::compute
