// Peak device memory of one rank's program, from live tensor sizes: the entry function's
// arguments (parameters, optimizer state, the batch) are live for the whole step; each value an
// exec op writes and another reads -- its results, and for a fused kernel each value of its fused
// ops used outside it (ExecGraph::buffers) -- is live from the op until its last reader in program
// order (the schedule XLA's buffer assignment follows), value by value, as XLA gives each output
// of a multi-output fusion its own buffer; free ops alias their operands and allocate nothing
// (an optimization barrier's result i keeps operand i live, not the others it waits for). A
// value whose readers recompute it takes nothing; what it is computed from stays live until those
// readers. Values
// the step returns (updated weights and optimizer state) are written into the entry's donated
// arguments (`tf.aliasing_output`, `jax.buffer_donor`) while donated bytes remain, in program
// order, and take no new memory there. Temporary workspace inside kernels is not counted.
#pragma once

#include <cstdint>

#include "system/program_model.h"
#include "system/simulation.h"

namespace orrery::system {

MemoryEstimate estimate_memory(const ProgramModel& program, Bytes capacity);

}  // namespace orrery::system
