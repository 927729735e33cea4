// Writing a whole file at once.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace orrery {

// Writes `bytes` to `path` (created or truncated); a kIo error names the path and the reason.
Result<bool> write_file(const std::string& path, std::string_view bytes);

}  // namespace orrery
