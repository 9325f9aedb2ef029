// The process-wide cache behind kjit::get and default_cache(): made from current_config(), made
// again when the settings change or in a forked child.
#include <kjit/cache.hpp>
#include <kjit/config.hpp>

#include "config/config_internal.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <unistd.h>

namespace kjit {

// Rebuilding replaces the object; each caller holds the one it got, so a replaced cache lives until
// its last user returns.
std::shared_ptr<Cache> shared_default_cache()
{
  static std::mutex mutex;
  static std::shared_ptr<Cache> cache;
  static std::uint64_t generation = 0;
  static pid_t pid = 0;
  std::lock_guard lock(mutex);
  const std::uint64_t now = config_generation();
  if (!cache || generation != now || pid != ::getpid()) {
    cache = std::make_shared<Cache>(current_config());
    generation = now;
    pid = ::getpid();
  }
  return cache;
}

Cache& default_cache()
{
  return *shared_default_cache();
}

std::shared_ptr<const Binary> get(const Program& program, const Arch& arch)
{
  return shared_default_cache()->get(program, arch);
}

void clear_cache()
{
  shared_default_cache()->clear();
}

} // namespace kjit
