// What libkjit shows a process that loads it: only kjit's own symbols (C++ and the C API, each in
// its version node), and no SHA-256, XXH3 or zstd library among its dependencies (each one cost
// every process its load; docs/benchmarks.md).
#include <boost/test/unit_test.hpp>

#include "kjit_build_config.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

namespace {

// The first path in KJIT_TEST_BINARIES: the built libkjit.
std::string libkjit()
{
  const char* binaries = std::getenv("KJIT_TEST_BINARIES");
  BOOST_TEST_REQUIRE(binaries != nullptr);
  std::istringstream list(binaries);
  std::string path;
  list >> path;
  BOOST_TEST_REQUIRE(path.find("libkjit") != std::string::npos, path);
  return path;
}

std::string output_of(const std::string& command)
{
  FILE* pipe = ::popen(command.c_str(), "r");
  BOOST_TEST_REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    out += buffer.data();
  }
  BOOST_TEST(::pclose(pipe) == 0, command);
  return out;
}

bool c_api_symbol(const std::string& name)
{
  return name.rfind("kjit_", 0) == 0;
}

bool kjit_symbol(const std::string& name)
{
  if (c_api_symbol(name)) {
    return true;
  }
  for (const char* prefix : {"kjit::", "typeinfo for kjit::", "typeinfo name for kjit::", "vtable for kjit::",
                             "VTT for kjit::", "guard variable for kjit::"}) {
    if (name.rfind(prefix, 0) == 0) {
      return true;
    }
  }
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(library_exports)

// src/exports.map: the std:: instantiations each object file emits stay local (they were 80 % of
// the exported symbols, each one searched for in every symbol lookup of the process).
BOOST_AUTO_TEST_CASE(libkjit_exports_only_kjit_symbols)
{
  std::istringstream table(output_of("readelf -W --dyn-syms '" + libkjit() + "' | c++filt"));
  int exported = 0;
  int foreign = 0;
  int c_calls = 0;
  int hooks = 0;
  for (std::string line; std::getline(table, line);) {
    std::istringstream fields(line);
    std::string num, value, size, type, bind, vis, ndx;
    fields >> num >> value >> size >> type >> bind >> vis >> ndx;
    // ABS: the version nodes' own names (KJIT_C_1.0, KJIT_CXX_0.1), not symbols of code or data.
    if (num.empty() || num.back() != ':' || ndx == "UND" || ndx == "ABS" || (bind != "GLOBAL" && bind != "WEAK") ||
        (type != "FUNC" && type != "OBJECT")) {
      continue;
    }
    std::string name;
    std::getline(fields >> std::ws, name);
    const auto at = name.find('@');
    const std::string version = at == std::string::npos ? "" : name.substr(name.find_first_not_of('@', at));
    name = name.substr(0, at);
    ++exported;
    // The test hooks (set_read_hook, …) are hidden: the unit tests reach them through the archive
    // of libkjit's objects; an application that loads libkjit has no way to call them.
    if (name.find("_hook") != std::string::npos) {
      ++hooks;
      BOOST_TEST_MESSAGE("exported, a test hook: " << name);
    }
    if (!kjit_symbol(name)) {
      ++foreign;
      BOOST_TEST_MESSAGE("exported, not kjit's: " << name);
    }
    // src/exports.map: each C call in its node, so a later kjit adds calls without breaking
    // programs linked against these; the C++ symbols in theirs.
    if (c_api_symbol(name)) {
      ++c_calls;
      // C API 1.1's calls (kjit.h: batches, statistics and upkeep) in the node that inherits 1.0's.
      static const std::set<std::string> added_in_1_1{"kjit_cache_get_many",      "kjit_cache_get_stats",
                                                      "kjit_cache_disk_entries",  "kjit_cache_clear",
                                                      "kjit_cache_prune_to_size", "kjit_cache_prune_older_than"};
      const std::string node = added_in_1_1.count(name) != 0 ? "KJIT_C_1.1" : "KJIT_C_1.0";
      BOOST_TEST(version == node, name << " has version '" << version << "'");
    } else if (kjit_symbol(name)) {
      BOOST_TEST(version == "KJIT_CXX_0.1", name << " has version '" << version << "'");
    }
  }
  BOOST_TEST(exported > 100);  // the public API is there
  BOOST_TEST(c_calls > 30);    // the C API (include/kjit/kjit.h) is there
  BOOST_TEST(foreign == 0);
  BOOST_TEST(hooks == 0);
}

BOOST_AUTO_TEST_CASE(libkjit_needs_no_sha256_xxhash_or_zstd_library)
{
  const std::string needed = output_of("readelf -d '" + libkjit() + "'");
  BOOST_TEST(needed.find("liblmdb") != std::string::npos, needed);
  BOOST_TEST(needed.find("libnettle") == std::string::npos, needed);   // dlopen()ed on the first SHA-256
  BOOST_TEST(needed.find("libcrypto") == std::string::npos, needed);
  BOOST_TEST(needed.find("libxxhash") == std::string::npos, needed);   // inlined
  if (KJIT_ZSTD_STATIC) {
    BOOST_TEST(needed.find("libzstd") == std::string::npos, needed);   // linked in
  }
}

// libgcc's CPU probe (cpuinfo.o, linked in by __builtin_cpu_supports) is a constructor that runs
// ≈ 20 CPUID instructions when libkjit loads; each traps to the hypervisor in a virtual machine
// (10–14 µs here). AVX2 is asked of glibc instead (src/util/checksum.cpp).
BOOST_AUTO_TEST_CASE(libkjit_has_no_cpuid_constructor)
{
  const std::string symbols = output_of("readelf -W -s '" + libkjit() + "'");
  BOOST_TEST(symbols.find(".symtab") != std::string::npos);  // not stripped: the check below can fail
  BOOST_TEST(symbols.find("__cpu_indicator_init") == std::string::npos);
  BOOST_TEST(symbols.find("__cpu_model") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
