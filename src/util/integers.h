// Integers written in attribute text: "[1, 2]", "array<i64: 0, 2>", "dense<[1, 2]>", "\"3\"".
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace orrery {

// The integers written in `text`, in order ("[1, 2]" -> 1, 2; "\"3\"" -> 3). A digit inside a word
// (f32, i64) is not a number.
std::vector<std::int64_t> integers_in(std::string_view text);

}  // namespace orrery
