#include "util/file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace orrery {

Result<bool> write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    return Error{
        ErrorCode::kIo, fmt::format("{}: cannot write ({})", path, std::strerror(errno)), std::nullopt, {}};
  }
  return true;
}

}  // namespace orrery
