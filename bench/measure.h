// What the frontend benchmarks measure with: heap in use, CPU and wall seconds.
#pragma once

#include <malloc.h>
#include <time.h>

#include <chrono>
#include <cstddef>

namespace orrery::bench {

// Bytes the allocator has handed out and not taken back, including mmapped blocks.
inline std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// CPU seconds of this process: the frontends are single-threaded, so on a machine shared with
// other jobs this is the time the work would take on an idle core.
inline double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace orrery::bench
