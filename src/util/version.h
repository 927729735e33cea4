// The build's version: `git describe --always --dirty --tags`, stamped at build time.
#pragma once

#include <string>
#include <string_view>

namespace orrery {
std::string_view version();
}  // namespace orrery
