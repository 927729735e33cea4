#include "compute/table_estimator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compute/roofline.h"
#include "util/assert.h"
#include "util/error.h"

namespace orrery::compute {
namespace {

double product(const std::vector<std::uint64_t>& values) {
  double result = 1.0;
  for (const std::uint64_t value : values) {
    result *= static_cast<double>(value);
  }
  return result;
}

ConvShape conv_from_table_shape(const ConvShape& like, const std::vector<std::uint64_t>& shape) {
  ConvShape conv = like;
  const std::size_t rank = (shape.size() - 4) / 4;
  conv.spatial_rank = static_cast<std::uint32_t>(rank);
  conv.batch = shape[0];
  conv.input_features = shape[1];
  conv.output_features = shape[2];
  conv.feature_groups = shape[3];
  for (std::size_t i = 0; i < rank; ++i) {
    conv.input_size[i] = shape[4 + i];
    conv.kernel_size[i] = shape[4 + rank + i];
    conv.stride[i] = shape[4 + 2 * rank + i];
    conv.output_size[i] = shape[4 + 3 * rank + i];
  }
  return conv;
}

double ratio(double to, double from) { return from > 0.0 ? to / from : 1.0; }

double roofline_seconds(const OpSignature& op, const Hardware& hardware) {
  return roofline_terms(op, hardware.roofline).total_s();
}

}  // namespace

OpSignature resized_signature(const OpSignature& op, const std::vector<std::uint64_t>& shape) {
  const std::vector<std::uint64_t> current = op.table_shape();
  ORRERY_ASSERT(shape.size() == current.size(), "resizing keeps the rank of the table shape");
  OpSignature resized = op;
  double flops_ratio = 1.0;
  double read_ratio = 1.0;
  double write_ratio = 1.0;
  if (op.op_class == OpClass::kGemm) {
    resized.gemm = GemmShape{shape[0], shape[1], shape[2], shape[3]};
    const OpSignature from = gemm_signature(op.kind, op.element_type, op.gemm);
    const OpSignature to = gemm_signature(op.kind, op.element_type, resized.gemm);
    flops_ratio = ratio(to.flops.value, from.flops.value);
    read_ratio = ratio(to.bytes_read.as_double(), from.bytes_read.as_double());
    write_ratio = ratio(to.bytes_written.as_double(), from.bytes_written.as_double());
  } else if (op.op_class == OpClass::kConvolution) {
    resized.conv = conv_from_table_shape(op.conv, shape);
    const OpSignature from = convolution_signature(op.kind, op.element_type, op.conv);
    const OpSignature to = convolution_signature(op.kind, op.element_type, resized.conv);
    flops_ratio = ratio(to.flops.value, from.flops.value);
    read_ratio = ratio(to.bytes_read.as_double(), from.bytes_read.as_double());
    write_ratio = ratio(to.bytes_written.as_double(), from.bytes_written.as_double());
  } else {
    flops_ratio = ratio(product(shape), product(current));
    read_ratio = flops_ratio;
    write_ratio = flops_ratio;
    if (op.row_length > 0 && shape.size() == 2) {
      resized.row_length = shape[1];
      if (op.op_class == OpClass::kReduction) {
        resized.elements = shape[0];
        write_ratio = ratio(static_cast<double>(shape[0]), static_cast<double>(current[0]));
      } else {
        resized.elements = shape[0] * shape[1];
      }
    } else {
      resized.elements = static_cast<std::uint64_t>(product(shape));
    }
  }
  resized.flops = Flops{op.flops.value * flops_ratio};
  resized.bytes_read = Bytes{static_cast<std::uint64_t>(std::llround(op.bytes_read.as_double() * read_ratio))};
  resized.bytes_written = Bytes{static_cast<std::uint64_t>(std::llround(op.bytes_written.as_double() * write_ratio))};
  return resized;
}

TableEstimator::TableEstimator(std::vector<KernelMeasurement> rows, std::unique_ptr<Estimator> fallback,
                               TableOptions options)
    : row_count_(rows.size()), fallback_(std::move(fallback)), options_(options) {
  ORRERY_ASSERT(fallback_ != nullptr, "the table estimator needs a fallback");
  ORRERY_ASSERT(options_.neighbours >= 1, "the table estimator scales from at least one neighbour");
  for (KernelMeasurement& row : rows) {
    std::vector<Point>& points = index_[Key{row.kind, row.op_class, row.element_type}][row.hardware];
    const auto same = std::find_if(points.begin(), points.end(), [&](const Point& p) { return p.shape == row.shape; });
    if (same != points.end()) {
      // Repeated measurements of one shape: their mean.
      same->time_s = (same->time_s * static_cast<double>(same->repeats) + row.time_s) /
                     static_cast<double>(same->repeats + 1);
      ++same->repeats;
      continue;
    }
    Point point;
    point.log_shape.reserve(row.shape.size());
    for (const std::uint64_t value : row.shape) {
      point.log_shape.push_back(std::log(static_cast<double>(value)));
    }
    point.shape = std::move(row.shape);
    point.time_s = row.time_s;
    point.repeats = 1;
    point.source = std::move(row.source);
    points.push_back(std::move(point));
  }
}

void TableEstimator::add_preset(Hardware hardware) {
  const std::lock_guard lock(presets_mutex_);
  const std::string key = hardware.name;
  presets_[key] = std::make_unique<Hardware>(std::move(hardware));
}

const Hardware* TableEstimator::preset(const std::string& name, const Hardware& target, std::string& reason) const {
  if (name == target.name) {
    return &target;
  }
  const std::lock_guard lock(presets_mutex_);
  if (const auto it = presets_.find(name); it != presets_.end()) {
    return it->second.get();
  }
  try {
    auto loaded = std::make_unique<Hardware>(load_hardware(name));
    return presets_.emplace(name, std::move(loaded)).first->second.get();
  } catch (const OrreryError& error) {
    reason = fmt::format("the table's device {} has no loadable preset to transfer from ({})", name, error.error().message);
    return nullptr;
  }
}

Estimate TableEstimator::fall_back(const OpSignature& op, const Hardware& hardware, const std::string& reason) const {
  Estimate estimate = fallback_->estimate(op, hardware);
  estimate.estimator = "fallback:" + std::string(fallback_->name());
  estimate.note = fmt::format("table fallback to {}: {}; {}", fallback_->name(), reason, estimate.note);
  return estimate;
}

std::optional<TableEstimator::Lookup> TableEstimator::lookup(const std::vector<Point>& points, const OpSignature& op,
                                                             const Hardware& device, std::string& reason) const {
  const std::vector<std::uint64_t> query = op.table_shape();
  for (const Point& p : points) {
    if (p.shape == query) {
      return Lookup{p.time_s, fmt::format("measured ({}, {} repeat(s))", p.source, p.repeats)};
    }
  }
  // 1-D log-log interpolation along the dimension with the tightest bracket.
  struct Bracket {
    std::size_t dim = 0;
    const Point* lower = nullptr;
    const Point* upper = nullptr;
  };
  std::optional<Bracket> best;
  for (std::size_t d = 0; d < query.size(); ++d) {
    Bracket bracket{d, nullptr, nullptr};
    for (const Point& p : points) {
      if (p.shape.size() != query.size()) {
        continue;
      }
      bool others_equal = true;
      for (std::size_t i = 0; i < query.size() && others_equal; ++i) {
        others_equal = i == d || p.shape[i] == query[i];
      }
      if (!others_equal) {
        continue;
      }
      if (p.shape[d] < query[d] && (bracket.lower == nullptr || p.shape[d] > bracket.lower->shape[d])) {
        bracket.lower = &p;
      }
      if (p.shape[d] > query[d] && (bracket.upper == nullptr || p.shape[d] < bracket.upper->shape[d])) {
        bracket.upper = &p;
      }
    }
    if (bracket.lower == nullptr || bracket.upper == nullptr) {
      continue;
    }
    const auto span = [](const Bracket& b) { return b.upper->log_shape[b.dim] - b.lower->log_shape[b.dim]; };
    if (!best || span(bracket) < span(*best)) {
      best = bracket;
    }
  }
  if (best) {
    const std::size_t d = best->dim;
    const double x = std::log(static_cast<double>(query[d]));
    const double x0 = best->lower->log_shape[d];
    const double x1 = best->upper->log_shape[d];
    const double t0 = std::log(best->lower->time_s);
    const double t1 = std::log(best->upper->time_s);
    return Lookup{std::exp(t0 + (x - x0) / (x1 - x0) * (t1 - t0)),
                  fmt::format("interpolated log-log along dimension {} between {} and {}", d,
                              format_shape(best->lower->shape), format_shape(best->upper->shape))};
  }
  // The nearest shapes, scaled by the roofline ratio.
  std::vector<std::size_t> order;
  std::vector<double> distance(points.size(), INFINITY);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].shape.size() != query.size()) {
      continue;
    }
    double sum = 0.0;
    for (std::size_t d = 0; d < query.size(); ++d) {
      sum += std::abs(std::log(static_cast<double>(query[d])) - points[i].log_shape[d]);
    }
    distance[i] = sum;
    order.push_back(i);
  }
  const auto nearest = order.begin() + static_cast<std::ptrdiff_t>(std::min(options_.neighbours, order.size()));
  std::partial_sort(order.begin(), nearest, order.end(), [&](std::size_t a, std::size_t b) {
    return distance[a] != distance[b] ? distance[a] < distance[b] : points[a].shape < points[b].shape;
  });
  if (order.empty() || distance[order.front()] > options_.max_distance) {
    reason = order.empty() ? fmt::format("no measured {} shape of rank {}", op.kind, query.size())
                           : fmt::format("the nearest measured shape {} is {:.2f} from {} (at most {:.2f} allowed)",
                                         format_shape(points[order.front()].shape), distance[order.front()],
                                         format_shape(query), options_.max_distance);
    return std::nullopt;
  }
  const double own = roofline_seconds(op, device);
  double weighted_log = 0.0;
  double weights = 0.0;
  std::vector<std::string> used;
  for (std::size_t n = 0; n < order.size() && n < options_.neighbours; ++n) {
    const Point& p = points[order[n]];
    if (distance[order[n]] > options_.max_distance) {
      break;
    }
    const double reference = roofline_seconds(resized_signature(op, p.shape), device);
    const double scaled = p.time_s * ratio(own, reference);
    const double weight = 1.0 / (distance[order[n]] + 1e-3);
    weighted_log += weight * std::log(scaled);
    weights += weight;
    used.push_back(format_shape(p.shape));
  }
  return Lookup{std::exp(weighted_log / weights),
                fmt::format("scaled from the nearest measured shape(s) {} by the roofline ratio", fmt::join(used, ", "))};
}

Estimate TableEstimator::estimate(const OpSignature& op, const Hardware& hardware) const {
  auto found = index_.find(Key{op.kind, op.op_class, op.element_type});
  std::string_view measured_as;
  if (found == index_.end()) {
    // Rows of another element type of the same width that has the same peak on this hardware (f16
    // rows for a bf16 op on a GPU whose tensor cores run both at one rate) stand in for the op's.
    const auto peak = [&](ElementType type) {
      OpSignature probe = op;
      probe.element_type = type;
      return hardware.roofline.peak_for(probe).value;
    };
    for (const ElementTypeInfo& other : element_types()) {
      if (other.type == op.element_type || other.bits != info(op.element_type).bits ||
          peak(other.type) != peak(op.element_type) || peak(other.type) <= 0.0) {
        continue;
      }
      found = index_.find(Key{op.kind, op.op_class, other.type});
      if (found != index_.end()) {
        measured_as = other.name;
        break;
      }
    }
  }
  if (found == index_.end()) {
    return fall_back(op, hardware,
                     fmt::format("no measured {} ({}, {}) in the tables", op.kind, compute::name(op.op_class),
                                 compute::name(op.element_type)));
  }
  const Devices& devices = found->second;
  std::string reason;
  const Hardware* source = nullptr;
  const std::vector<Point>* points = nullptr;
  if (const auto own = devices.find(hardware.name); own != devices.end()) {
    source = &hardware;
    points = &own->second;
  } else {
    // The device with the most rows of this kind (ties: the first name) whose preset loads.
    std::vector<const Devices::value_type*> candidates;
    for (const auto& entry : devices) {
      candidates.push_back(&entry);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const auto* a, const auto* b) { return a->second.size() > b->second.size(); });
    for (const auto* candidate : candidates) {
      source = preset(candidate->first, hardware, reason);
      if (source != nullptr) {
        points = &candidate->second;
        break;
      }
    }
    if (source == nullptr) {
      return fall_back(op, hardware, reason);
    }
  }
  const std::optional<Lookup> found_time = lookup(*points, op, *source, reason);
  if (!found_time) {
    return fall_back(op, hardware, reason);
  }
  Estimate estimate;
  estimate.flops = op.flops;
  estimate.bytes = op.bytes();
  estimate.bound = Bound::kMeasured;
  estimate.estimator = "table";
  double seconds = found_time->time_s;
  std::string note = fmt::format("{} on {}", found_time->how, source->name);
  if (!measured_as.empty()) {
    note += fmt::format(" (measured in {}: same width and peak as {} on {})", measured_as,
                        compute::name(op.element_type), hardware.name);
  }
  if (source != &hardware) {
    const double transfer = ratio(roofline_seconds(op, hardware), roofline_seconds(op, *source));
    seconds *= transfer;
    note += fmt::format(", transferred to {} by the roofline ratio {:.4g}", hardware.name, transfer);
  }
  estimate.time = SimTime::from_seconds(seconds);
  estimate.note = std::move(note);
  return estimate;
}

}  // namespace orrery::compute
