// libFuzzer target over the Chakra reader and the programs built from per-rank traces.
#include <cstddef>
#include <cstdint>

#include "chakra_fuzz_one.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  orrery::fuzz::fuzz_chakra(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
