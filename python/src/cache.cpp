// kjit.Cache (settings as keyword arguments), kjit.Lookup and the module's get(),
// lookup(), compile(), default_cache(), supported_archs(). Every call that may compile, read the
// store or wait for another thread's compile releases the GIL; Cache is thread-safe and a Program
// is immutable, so any number of Python threads may call them at once.
#include "bindings.hpp"
#include "text.hpp"

#include <kjit/compile.hpp>
#include <kjit/config.hpp>
#include <kjit/version.hpp>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string_view>

namespace kjit {
// src/config: a setting set by its name in the settings table, parsed as its variable is.
void apply_setting(Config& config, std::string_view name, std::string_view value);
} // namespace kjit

namespace kjit::python {

namespace {

using namespace nb::literals;

// One lookup's outcome. The key is computed when asked for (a hit by the program's raw inputs
// computes none): prepare() of the program for the binary's arch, the GIL released.
struct LookupRef {
  Lookup lookup;
  std::shared_ptr<Cache> cache;
  nb::object program;  // the kjit.Program looked up, kept for key
  nb::object binary;   // kjit.Binary, made once
};

// Python keyword → the settings table's name. The table's own names are accepted too.
std::string_view setting_name(std::string_view keyword)
{
  if (keyword == "dump_ir") {
    return "debug.dump_ir";
  }
  if (keyword == "bundles") {
    return "bundle";
  }
  return keyword;
}

// A keyword argument's value as the setting's variable would spell it.
std::string setting_text(nb::handle value, const std::string& name)
{
  if (nb::isinstance<nb::bool_>(value)) {
    return nb::cast<bool>(value) ? "1" : "0";
  }
  if (nb::isinstance<nb::int_>(value) || nb::isinstance<nb::float_>(value)) {
    return nb::cast<std::string>(nb::str(value));
  }
  if (name == "bundle" && !nb::isinstance<nb::str>(value) && !nb::hasattr(value, "__fspath__")) {
    std::string joined;
    for (const std::string& path : text_list(value, "bundles")) {
      joined += (joined.empty() ? "" : ":") + path;
    }
    return joined;
  }
  return text_of(value, name.c_str());
}

Config config_of(nb::handle cache_dir, const nb::kwargs& settings)
{
  Config config = current_config();
  if (!cache_dir.is_none()) {
    apply_setting(config, "cache_dir", text_of(cache_dir, "cache_dir"));
  }
  for (auto [keyword, value] : settings) {
    const std::string given = nb::cast<std::string>(keyword);
    const std::string name(setting_name(given));
    bool known = false;
    for (const SettingInfo& setting : kjit::settings()) {
      known |= setting.name == name;
    }
    if (!known || name == "cache_dir") {
      throw nb::type_error(("Cache() got an unexpected keyword argument '" + given + "'").c_str());
    }
    if (!value.is_none()) {  // None: the environment's or the default
      apply_setting(config, name, setting_text(value, name));
    }
  }
  return config;
}

nb::object binary_of(std::shared_ptr<const Binary> binary)
{
  return nb::cast(BinaryRef{std::move(binary), {}, {}});
}

nb::object get_binary(Cache& cache, const Program& program, nb::handle arch)
{
  const Arch target = arch_of(arch);
  std::shared_ptr<const Binary> binary;
  {
    nb::gil_scoped_release release;
    binary = cache.get(program, target);
  }
  return binary_of(std::move(binary));
}

LookupRef lookup_in(std::shared_ptr<Cache> cache, nb::handle program, nb::handle arch)
{
  if (!nb::isinstance<Program>(program)) {
    throw nb::type_error("lookup() takes a kjit.Program");
  }
  const Arch target = arch_of(arch);
  const Program& p = nb::cast<const Program&>(program);
  LookupRef out{{}, std::move(cache), nb::borrow(program), {}};
  {
    nb::gil_scoped_release release;
    out.lookup = out.cache->lookup(p, target);
  }
  return out;
}

std::string key_of(Cache& cache, const Program& program, const Arch& arch)
{
  nb::gil_scoped_release release;
  return cache.prepare(program, arch).key();
}

nb::dict stats_of(const CacheStats& s)
{
  nb::dict d;
#define KJIT_STAT(field) d[#field] = s.field
  KJIT_STAT(memory_hits);
  KJIT_STAT(disk_hits);
  KJIT_STAT(bundle_hits);
  KJIT_STAT(tier_errors);
  KJIT_STAT(remote_hits);
  KJIT_STAT(remote_misses);
  KJIT_STAT(remote_errors);
  KJIT_STAT(remote_bytes_read);
  KJIT_STAT(remote_bytes_written);
  KJIT_STAT(misses);
  KJIT_STAT(compiles);
  KJIT_STAT(failed_hits);
  KJIT_STAT(quarantined);
  KJIT_STAT(mirror_errors);
  KJIT_STAT(store_errors);
  KJIT_STAT(compiled_elsewhere);
  KJIT_STAT(stores_replaced);
  KJIT_STAT(header_stats);
  KJIT_STAT(header_rehashes);
  KJIT_STAT(compile_ms_saved);
  KJIT_STAT(compile_ms_spent);
#undef KJIT_STAT
  return d;
}

// A str, not an enum.Enum: importing Python's enum module would cost `import kjit` about 8 ms.
// kjit::to_string's words, but an identifier for the one it spells as prose.
const char* source_name(Source source)
{
  return source == Source::compiled_elsewhere ? "compiled_elsewhere" : to_string(source);
}

std::shared_ptr<Cache> default_cache_unlocked()
{
  nb::gil_scoped_release release;  // the first call opens the store
  return shared_default_cache();
}

} // namespace

void bind_cache(nb::module_& m)
{
  m.attr("__version__") = KJIT_VERSION;

  nb::class_<LookupRef>(m, "Lookup", "One lookup's outcome: the binary, where it came from, the key.")
    .def_prop_ro("binary",
      [](LookupRef& l) {
        if (!l.binary.is_valid()) {
          l.binary = binary_of(l.lookup.binary);
        }
        return l.binary;
      },
      nb::sig("def binary(self) -> Binary"))
    .def_prop_ro("source", [](const LookupRef& l) { return source_name(l.lookup.source); },
      "Where the binary came from: 'memory' (this process, or another thread's lookup in flight), 'disk' "
      "(the store), 'bundle', 'remote', 'compiled' (by this call) or 'compiled_elsewhere' (by another "
      "process while this one waited).")
    .def_prop_ro("lookup_ms", [](const LookupRef& l) { return l.lookup.lookup_ms; }, "Wall time of this call.")
    .def_prop_ro("key",
      [](LookupRef& l) {
        if (l.lookup.key.empty()) {  // found by its raw inputs: the key was not needed
          l.lookup.key = key_of(*l.cache, nb::cast<const Program&>(l.program), Arch::parse(l.lookup.binary->arch));
        }
        return l.lookup.key;
      },
      "The entry's key: sha256(program.txt ‖ options.txt), 64 hex digits (the mirror's folder name).")
    .def("__repr__", [](const LookupRef& l) {
      return std::string("kjit.Lookup(source=") + to_string(l.lookup.source) + ", arch='" + l.lookup.binary->arch +
             "', lookup_ms=" + std::to_string(l.lookup.lookup_ms) + ")";
    });

  nb::class_<CacheRef>(m, "Cache",
    "A kernel cache: memory tier → LMDB store → bundles → remote → compile. Settings are keyword "
    "arguments named as in docs/configuration.md (mirror=False, memory_limit='64MiB', arch='sm_90', "
    "verbose=True, max_size=…, cuda_home=…, bundles=[…], …); those not given come from the KJIT_* "
    "environment, then the defaults. Thread-safe; the GIL is released while it compiles or reads.")
    .def("__init__",
      [](CacheRef* self, nb::handle cache_dir, nb::kwargs settings) {
        Config config = config_of(cache_dir, settings);
        std::shared_ptr<Cache> cache;
        {
          nb::gil_scoped_release release;
          cache = std::make_shared<Cache>(config);
        }
        new (self) CacheRef{std::move(cache)};
      },
      "cache_dir"_a = nb::none(), "settings"_a)
    .def("get",
      [](CacheRef& c, const Program& program, nb::handle arch) { return get_binary(*c.cache, program, arch); },
      "program"_a, "arch"_a = nb::none(), nb::sig("def get(self, program: Program, arch: str | None = None) -> Binary"),
      "The binary of `program` for `arch` ('sm_90', 'compute_90'; None: the cache's arch setting, else the "
      "current GPU's): from memory, the store, or compiled and stored. Raises CompileError, OptionError, ArchError…")
    .def("lookup",
      [](CacheRef& c, nb::handle program, nb::handle arch) { return lookup_in(c.cache, program, arch); },
      "program"_a, "arch"_a = nb::none(),
      nb::sig("def lookup(self, program: Program, arch: str | None = None) -> Lookup"),
      "get() that also says where the binary came from, what the call took and the key.")
    .def("key",
      [](CacheRef& c, const Program& program, nb::handle arch) { return key_of(*c.cache, program, arch_of(arch)); },
      "program"_a, "arch"_a = nb::none(), "The key the program has (or will have) in this cache.")
    .def("stats", [](const CacheRef& c) { return stats_of(c.cache->stats()); },
      "Counters since the cache was made: memory_hits, disk_hits, misses, compiles… (a dict).")
    .def("clear", [](CacheRef& c) {
      nb::gil_scoped_release release;
      c.cache->clear();
    }, "Empties the memory tier, the store and the mirror.")
    .def("flush_mirror", [](CacheRef& c) {
      nb::gil_scoped_release release;
      c.cache->flush_mirror();
    }, "Returns once every entry stored so far is written to the mirror (programs/).")
    .def("supported_archs", [](CacheRef& c) {
      nb::gil_scoped_release release;
      return c.cache->supported_archs();
    }, "The SM numbers NVRTC can build for (remembered: no NVRTC load on a warm start).")
    .def_prop_ro("cache_dir", [](const CacheRef& c) { return c.cache->config().cache_dir; })
    .def_prop_ro("has_disk_tier", [](const CacheRef& c) { return c.cache->has_disk_tier(); })
    .def_prop_ro("disk_entries", [](const CacheRef& c) { return c.cache->disk_entries(); })
    .def("__repr__", [](const CacheRef& c) { return "kjit.Cache('" + c.cache->config().cache_dir + "')"; });

  m.def("default_cache", [] { return CacheRef{default_cache_unlocked()}; },
    "The process's default cache (KJIT_* settings), shared with C++ code in the process.");
  m.def("get",
    [](const Program& program, nb::handle arch) {
      std::shared_ptr<Cache> cache = default_cache_unlocked();
      return get_binary(*cache, program, arch);
    },
    "program"_a, "arch"_a = nb::none(), nb::sig("def get(program: Program, arch: str | None = None) -> Binary"),
    "default_cache().get(program, arch).");
  m.def("lookup", [](nb::handle program, nb::handle arch) { return lookup_in(default_cache_unlocked(), program, arch); },
    "program"_a, "arch"_a = nb::none(),
    nb::sig("def lookup(program: Program, arch: str | None = None) -> Lookup"), "default_cache().lookup(program, arch).");
  m.def("compile",
    [](const Program& program, nb::handle arch) {
      const Arch target = arch_of(arch);
      std::shared_ptr<const Binary> binary;
      {
        nb::gil_scoped_release release;
        binary = std::make_shared<const Binary>(kjit::compile(program, target));
      }
      return binary_of(std::move(binary));
    },
    "program"_a, "arch"_a, nb::sig("def compile(program: Program, arch: str) -> Binary"),
    "Compiles without any cache (nothing read or stored).");
  m.def("supported_archs", [] {
    nb::gil_scoped_release release;
    return kjit::supported_archs();
  }, "The SM numbers NVRTC can build for (loads NVRTC).");
}

} // namespace kjit::python
