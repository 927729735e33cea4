#include "util/units.h"

#include <cmath>

#include "util/error.h"

namespace orrery {

SimTime SimTime::from_seconds_out_of_range(double seconds) {
  if (std::isnan(seconds) || seconds < 0.0) {
    throw OrreryError(ErrorCode::kInternal,
                      "a model produced a negative or NaN duration (" + std::to_string(seconds) +
                          " s); durations must be non-negative");
  }
  return max();
}

}  // namespace orrery
