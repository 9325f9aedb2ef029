// See malloc_arenas.hpp.
#include "malloc_arenas.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kjit::cli {

void share_one_malloc_arena() noexcept
{
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr || (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr)) {
    return;  // the user's setting stands
  }
  ::mallopt(M_ARENA_MAX, 1);
#endif
}

} // namespace kjit::cli
