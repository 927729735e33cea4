// Builds the model a scenario's network.model names.
#pragma once

#include <memory>

#include "config/network_config.h"
#include "network/flow/flow_model.h"
#include "network/model.h"

namespace orrery::network {

// Throws OrreryError(kUnsupported) for the packet model, which a later issue adds.
std::unique_ptr<NetworkModel> make_model(config::NetworkModelKind kind, const Routing& routing,
                                         FlowModelOptions flow_options = {});

}  // namespace orrery::network
