// While-loop trip counts from the loop's own pattern:
//
//   %r = stablehlo.while(%i = %init, ...) cond { %p = compare DIR, %i, %bound ; return %p }
//                                          do   { %n = add %i, %step ; return %n, ... }
//
// with %init, %bound and %step constants (directly, through convert/reshape/broadcast, through
// loop-invariant iteration arguments with constant initial values, or through calls, which are
// followed into the callee). For step s > 0 and DIR = LT the loop runs ceil((bound - init) / s)
// times (0 when init >= bound); LE runs floor((bound - init) / s) + 1; GT and GE mirror them for
// s < 0; NE runs (bound - init) / s when that is a whole, non-negative number.
#pragma once

#include <cstdint>
#include <string>

#include "workload/program.h"

namespace orrery::frontend::stablehlo {

struct TripCount {
  bool derived = false;
  std::uint64_t count = 0;
  std::string reason;  // why it could not be derived
};

TripCount derive_trip_count(const workload::Program& program, workload::OpId while_op);

// Iterations of `for (x = init; x DIR bound; x += step)`, or a reason in `reason`.
TripCount count_iterations(std::int64_t init, std::int64_t bound, std::int64_t step,
                           workload::ComparisonDirection direction);

}  // namespace orrery::frontend::stablehlo
