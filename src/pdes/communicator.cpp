#include "pdes/communicator.h"

#include <array>
#include <fmt/format.h>
#include <limits>
#include <optional>

namespace orrery::pdes {
namespace {
constexpr std::string_view kSecondaryPrefix = "run stopped: process ";
}  // namespace

void run_collectively(Communicator& communicator, const std::function<void()>& step) {
  std::optional<OrreryError> failure;
  try {
    step();
  } catch (const OrreryError& error) {
    failure = error;
  } catch (const std::exception& error) {
    failure = OrreryError(ErrorCode::kInternal, error.what());
  }
  std::array<std::uint64_t, 1> failed{failure ? encode_failure(communicator.rank(), failure->code())
                                              : kNoFailure};
  communicator.allreduce_min(failed);
  if (failed[0] == kNoFailure) {
    return;
  }
  if (failure && failed_process(failed[0]) == communicator.rank()) {
    throw failure->mark_coordinated();
  }
  throw secondary_failure(failed_process(failed[0]), failed_code(failed[0]));
}

OrreryError secondary_failure(std::uint64_t failed, ErrorCode code) {
  OrreryError error(code, fmt::format("{}{} reported an error (see its message)", kSecondaryPrefix, failed));
  error.mark_coordinated();
  return error;
}

bool is_secondary_failure(const OrreryError& error) {
  return error.error().message.starts_with(kSecondaryPrefix);
}

}  // namespace orrery::pdes
