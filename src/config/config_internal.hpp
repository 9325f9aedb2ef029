// Library-internal view of the configuration: change tracking for objects built from a Config.
#pragma once

#include <kjit/config.hpp>

#include <cstdint>

namespace kjit {

// Incremented by every kjit::option call; the default cache rebuilds itself when it changes.
std::uint64_t config_generation();

} // namespace kjit
