// Library-internal view of the configuration: change tracking for objects built from a Config.
#pragma once

#include <kjit/config.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace kjit {

// Sets the setting `name` (its API name in the settings table: "cache_dir", "mirror", …) of
// `config` from text, parsed as its environment variable is. Throws ConfigError naming the setting
// for a bad value or a name not in the table, leaving `config` unchanged. For the C API.
void apply_setting(Config& config, std::string_view name, std::string_view value);

// Incremented by every kjit::option call; the default cache rebuilds itself when it changes.
std::uint64_t config_generation();

// The environment variables the compiler reads that change what it produces, as "NAME=value\n"
// lines (those set, in a fixed order); empty when none is set. Part of every key (key.cpp). Read
// once per process, at the first call (NVRTC reads them once, when it is loaded).
// NVRTC 13.0 reads NV_NVVM_VERSION (nvvm70 | nvvm-latest: another NVVM, other PTX and cubin) once,
// when it is loaded; the other variables it reads change no output (measured: docs/configuration.md).
std::string compiler_environment();
// The variables compiler_environment() reads (a compile worker is given the Cache's values).
inline constexpr const char* k_compiler_environment_variables[] = {"NV_NVVM_VERSION"};
// The same lines as the environment holds them now (what NVRTC takes if it loads now).
std::string compiler_environment_now();

// Checks the settings a Config was given directly (not through the table, whose parsers check
// them): throws ConfigError naming the setting for an arch that does not parse, a compile lock
// timeout that is not in (0, a day] (NaN waited forever), a map size under 32KiB.
void check_config(const Config& config);

} // namespace kjit
