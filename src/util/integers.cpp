#include "util/integers.h"

#include <cctype>

namespace orrery {

std::vector<std::int64_t> integers_in(std::string_view text) {
  std::vector<std::int64_t> values;
  std::size_t i = 0;
  while (i < text.size()) {
    const bool negative = text[i] == '-' && i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '9';
    if (negative || (text[i] >= '0' && text[i] <= '9')) {
      // A digit inside a word (f32, i64) is not a number.
      if (i > 0 && (std::isalpha(static_cast<unsigned char>(text[i - 1])) != 0 || text[i - 1] == '_')) {
        while (i < text.size() && std::isalnum(static_cast<unsigned char>(text[i])) != 0) {
          ++i;
        }
        continue;
      }
      std::size_t j = negative ? i + 1 : i;
      std::int64_t value = 0;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
        value = value * 10 + (text[j] - '0');
        ++j;
      }
      values.push_back(negative ? -value : value);
      i = j;
    } else {
      ++i;
    }
  }
  return values;
}

}  // namespace orrery
