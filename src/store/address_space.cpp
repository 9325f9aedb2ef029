#include "store/address_space.hpp"

#include <algorithm>
#include <fstream>
#include <sys/resource.h>
#include <unistd.h>

namespace kjit::store {

namespace {

std::optional<rlim_t> address_space_limit()
{
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) {
    return std::nullopt;
  }
  return as.rlim_cur;
}

} // namespace

std::size_t virtual_size()
{
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

std::optional<std::size_t> address_space_room()
{
  const std::optional<rlim_t> limit = address_space_limit();
  if (!limit) {
    return std::nullopt;
  }
  const std::size_t used = virtual_size();
  return *limit > used ? *limit - used : 0;
}

std::size_t fitted_map_size(std::size_t wanted)
{
  const std::optional<std::size_t> room = address_space_room();
  if (!room) {
    return wanted;
  }
  constexpr std::size_t k_least = 32768;  // KJIT_STORE_MAP_SIZE's least
  return std::max(std::min(wanted, *room / 4 / 4096 * 4096), k_least);
}

std::string address_space_limit_text()
{
  const std::optional<rlim_t> limit = address_space_limit();
  return limit ? " under the address-space limit (ulimit -v) of " + std::to_string(*limit >> 20) + " MiB" : "";
}

} // namespace kjit::store
