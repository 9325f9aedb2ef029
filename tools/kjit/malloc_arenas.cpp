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
  // The user's arena count stands (glibc read it at start); other malloc tunables are theirs too,
  // and this changes none of them.
  const char* variable = std::getenv("MALLOC_ARENA_MAX");
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if ((variable != nullptr && *variable != '\0') ||
      (tunables != nullptr && std::strstr(tunables, "glibc.malloc.arena_max=") != nullptr)) {
    return;
  }
  ::mallopt(M_ARENA_MAX, 1);
#endif
}

} // namespace kjit::cli
