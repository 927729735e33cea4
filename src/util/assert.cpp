#include "util/assert.h"

#include <string>

#include "util/error.h"

namespace orrery::detail {

void assertion_failed(std::string_view condition, std::string_view why, std::string_view file,
                      int line) {
  throw OrreryError(ErrorCode::kInternal, "assertion failed: " + std::string(condition) + " (" +
                                              std::string(why) + ") at " + std::string(file) + ":" +
                                              std::to_string(line));
}

}  // namespace orrery::detail
