// ORRERY_ASSERT(cond, why): an invariant of Orrery's own code. A failure is a bug, reported with
// the condition, the reason and the source position, as an OrreryError(kInternal) so that MPI
// runs stop cleanly instead of hanging. ORRERY_DEBUG_ASSERT compiles away in release builds and
// is for hot paths.
#pragma once

#include <string_view>

namespace orrery::detail {
[[noreturn]] void assertion_failed(std::string_view condition, std::string_view why,
                                   std::string_view file, int line);
}  // namespace orrery::detail

#define ORRERY_ASSERT(condition, why)                                                  \
  do {                                                                                 \
    if (!(condition)) [[unlikely]] {                                                   \
      ::orrery::detail::assertion_failed(#condition, (why), __FILE__, __LINE__);       \
    }                                                                                  \
  } while (false)

#ifdef NDEBUG
#define ORRERY_DEBUG_ASSERT(condition, why) \
  do {                                      \
  } while (false)
#else
#define ORRERY_DEBUG_ASSERT(condition, why) ORRERY_ASSERT(condition, why)
#endif
