// The lowered IR as text, for debugging (`orrery inspect --dump`). One line per op:
//   %op12 = stablehlo.dot_general(%op10, %arg3) -> tensor<1x4096x576xbf16>  {dot: lhs_batching=[0] ...}
// Operands name their producer: %opN (result 0 of op N), %opN#i, %argN (function argument) or
// %bN.i (argument i of block N).
#pragma once

#include <string>

#include "workload/program.h"

namespace orrery::workload {

std::string dump(const Program& program);

}  // namespace orrery::workload
