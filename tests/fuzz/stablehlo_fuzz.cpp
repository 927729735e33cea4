// libFuzzer target over the StableHLO parser, lowering and what reads their output.
#include <cstddef>
#include <cstdint>

#include "fuzz_one.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  orrery::fuzz::fuzz_one(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
