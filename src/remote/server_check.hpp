// `kjit doctor`'s check of the remote servers (KJIT_REMOTE_CACHE).
#pragma once

#include <kjit/cache.hpp>

#include <vector>

namespace kjit::remote {

// One finding per configured server ("remote"): reachable, AUTH accepted, Redis version, role,
// read-only mode, and a full server that refuses uploads (maxmemory with noeviction). Reads only
// (PING, INFO); a password-file problem is one error finding. Never throws.
std::vector<HealthCheck> check_servers(const Config& config);

} // namespace kjit::remote
