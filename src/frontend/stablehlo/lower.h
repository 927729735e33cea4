// Lowering: the second pass over a parsed module. It reads the attributes that cost models and
// the system layer need into typed payloads (workload/payloads.h), resolves calls, reads the
// module's partition and replica counts and meshes, picks the entry function, derives while-loop
// trip counts (applying overrides), and classifies the program's form.
#pragma once

#include "frontend/stablehlo/diagnostics.h"
#include "frontend/stablehlo/parser.h"
#include "frontend/stablehlo/stablehlo.h"

namespace orrery::frontend::stablehlo {

Status lower_module(ModuleDraft& draft, const AttributeAliases& aliases, const Options& options,
                    Diagnostics& diagnostics);

}  // namespace orrery::frontend::stablehlo
