// The process's address space under RLIMIT_AS (ulimit -v): what the store's map may take of it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kjit::store {

// The process's current virtual size in bytes (/proc/self/statm), 0 if unknown.
std::size_t virtual_size();

// Bytes left under the address-space limit; nullopt when there is no limit.
std::optional<std::size_t> address_space_room();

// The first map within the address space the process has: at most a quarter of the room left, so
// that a miss still has room to load and run NVRTC and nvJitLink (a 1 GiB map under a 1.2 GB
// limit left them too little: no binary). LMDB maps at least the data the store holds, and the map
// grows later within the same limit (Store::Impl::growth_limit).
std::size_t fitted_map_size(std::size_t wanted);

// For messages: " under the address-space limit (ulimit -v) of N MiB", or "" without a limit.
std::string address_space_limit_text();

} // namespace kjit::store
