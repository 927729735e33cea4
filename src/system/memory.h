// Peak device memory of one rank's program, from live tensor sizes: the entry function's
// arguments (parameters, optimizer state, the batch) are live for the whole step; what every exec
// op leaves in memory -- its results, and for a fused kernel every value of its fused ops used
// outside it (ProgramModel::output_bytes) -- is live from the op until its last consumer in
// program order (the schedule XLA's buffer assignment follows), all of a kernel's values until the
// last consumer of any; free ops alias their operands and allocate nothing. Results nobody in the
// step reads (the step's outputs: updated weights and optimizer state) are written into the
// entry's donated arguments (`tf.aliasing_output`, `jax.buffer_donor`) while donated bytes remain,
// in program order, and take no new memory there. Temporary workspace inside kernels is not
// counted.
#pragma once

#include <cstdint>

#include "system/program_model.h"
#include "system/simulation.h"

namespace orrery::system {

MemoryEstimate estimate_memory(const ProgramModel& program, Bytes capacity);

}  // namespace orrery::system
