#include "network/model_factory.h"

#include "network/analytical_model.h"
#include "util/error.h"

namespace orrery::network {

std::unique_ptr<NetworkModel> make_model(config::NetworkModelKind kind, const Routing& routing,
                                         FlowModelOptions flow_options) {
  switch (kind) {
    case config::NetworkModelKind::kAnalytical:
      return std::make_unique<AnalyticalModel>(routing);
    case config::NetworkModelKind::kFlow:
      return std::make_unique<FlowModel>(routing, flow_options);
    case config::NetworkModelKind::kPacket:
      break;
  }
  throw OrreryError(ErrorCode::kUnsupported,
                    "network.model: the packet model is not implemented yet (it comes with a later issue); use "
                    "analytical or flow");
}

}  // namespace orrery::network
