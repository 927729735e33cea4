// The compute validation page (docs/validation/compute.md), computed from the shared data.
#pragma once

#include <filesystem>
#include <string>

namespace orrery::compute {

// The page's Markdown. Throws OrreryError when the data or the presets cannot be read.
std::string validation_report(const std::filesystem::path& data_dir);

}  // namespace orrery::compute
