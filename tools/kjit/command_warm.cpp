// kjit warm FILE… --arch LIST [--jobs N]: fill the cache for many programs and archs at once, the
// misses compiled in worker processes on every core. A FILE that can't be read is reported and the
// rest are warmed (exit 1).
#include "commands.hpp"
#include "cache_args.hpp"
#include "program_args.hpp"
#include "stored.hpp"

#include <kjit/kjit.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace kjit::cli {

namespace {

// The archs of --arch: every comma-separated part must name one ("sm_80,,sm_90" and "," are usage
// errors, not an empty warm).
std::vector<Arch> arch_list(const std::string& text)
{
  std::vector<Arch> archs;
  std::stringstream stream(text + ",");
  for (std::string part; std::getline(stream, part, ',');) {
    if (part.empty()) {
      throw UsageError{"--arch needs a comma-separated list of archs without empty parts, e.g. sm_80,sm_90 (got \"" +
                         text + "\")",
                       ""};
    }
    try {
      archs.push_back(Arch::parse(part));
    } catch (const ArchError& e) {
      throw UsageError{std::string("--arch: ") + e.what(), ""};  // a malformed list is a usage error (exit 2)
    }
  }
  return archs;
}

} // namespace

int command_warm(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()
    ("arch,a", po::value<std::string>()->default_value("auto"), "comma-separated archs, e.g. sm_80,sm_90,sm_120")
    ("define,D", po::value<std::vector<std::string>>()->composing(), "define a macro in every program")
    ("include,I", po::value<std::vector<std::string>>()->composing(), "add an include folder")
    ("name-expr,n", po::value<std::vector<std::string>>()->composing(),
     "name expression added to every program, e.g. 'scale<float>'")
    ("option,X", po::value<std::vector<std::string>>()->composing(), "pass an option to NVRTC")
    ("header", po::value<std::vector<std::string>>()->composing(),
     "an in-memory header NAME=FILE given to every program (#include \"NAME\" gets FILE's text)")
    ("jobs,j", po::value<unsigned>()->default_value(0), "worker processes at once (0: one per core)")
    ("timeout", po::value<double>()->default_value(600), "seconds one compile may take before its worker is killed (0: no limit)")
    ("worker", po::value<std::string>(), "the kjit-worker executable (default: libkjit's, next to kjit)")
    ("cache-dir", po::value<std::string>(), "cache folder (default: KJIT_CACHE_DIR or ~/.cache/kjit)");
  po::options_description hidden;
  hidden.add_options()("files", po::value<std::vector<std::string>>()->required(), "CUDA C++ files");
  po::positional_options_description positional;
  positional.add("files", -1);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit warm FILE... [options]", visible, hidden, positional, vm)) {
    return 0;
  }
  refuse_empty_program_values(vm);
  if (vm.count("cache-dir") != 0) {
    option::cache_dir(vm["cache-dir"].as<std::string>());
  }
  auto list = [&vm](const char* key) {
    return vm.count(key) != 0 ? vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
  };
  std::vector<std::string> options;
  for (const auto& define : list("define")) {
    options.push_back("-D" + define);
  }
  // A folder as written: "-I" + "=inc" would be the folder inc, as NVRTC reads -I=inc.
  CompileOptions folders;
  folders.include_dirs = list("include");
  for (auto& option : folders.render()) {
    options.push_back(std::move(option));
  }
  for (const auto& option : list("option")) {
    options.push_back(option);
  }
  const std::vector<Arch> archs = arch_list(vm["arch"].as<std::string>());
  BatchOptions batch;  // checked before any file is read: a usage error comes first
  batch.jobs = jobs_option(vm);
  batch.timeout_s = vm["timeout"].as<double>();
  // 0 is no limit, as for BatchOptions::timeout_s; NaN, a negative number (a typo more likely than
  // a wish) or beyond a day (overflowing the milliseconds) are refused.
  if (!(batch.timeout_s >= 0 && batch.timeout_s <= 86400)) {
    throw UsageError{"--timeout must be a number of seconds from 0 (no limit) to 86400", ""};
  }
  const std::map<std::string, std::string> headers = headers_from_arguments(vm);  // after the usage checks
  std::vector<BatchItem> items;
  std::size_t unreadable = 0;
  for (const auto& file : list("files")) {
    Program program;
    try {
      program = program_from_file(file);
    } catch (const Error& e) {
      ++unreadable;  // reported, and the other files are still warmed
      std::cerr << "failed: " << file << ": " << e.what() << "\n";
      continue;
    }
    program.options = options;
    program.name_expressions = list("name-expr");
    program.headers = headers;
    for (const Arch& arch : archs) {
      items.push_back({program, arch});
    }
  }

  if (vm.count("worker") != 0) {
    batch.worker_path = vm["worker"].as<std::string>();
    if (batch.worker_path.empty()) {
      throw UsageError{"--worker needs the kjit-worker executable, not \"\"", ""};
    }
  }
  const bool terminal = ::isatty(2) != 0;
  batch.progress = [terminal](std::size_t done, std::size_t total) {
    if (terminal) {
      const int width = 30;
      const int filled = static_cast<int>(width * done / total);
      std::fprintf(stderr, "\r[%s%s] %zu/%zu", std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                   done, total);
      if (done == total) {
        std::fprintf(stderr, "\n");
      }
    } else {
      std::fprintf(stderr, "%zu/%zu done\n", done, total);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  Cache& cache = default_cache();
  const CacheStats before = cache.stats();
  const auto results = cache.get_many(items, batch);
  const CacheStats after = cache.stats();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::size_t compiled = 0;
  std::size_t cached = 0;
  std::size_t failed = unreadable;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].binary) {
      ++failed;
      std::cerr << "failed: " << items[i].program.name << " (" << items[i].arch.str() << "): " << results[i].message
                << "\n";
    } else if (results[i].compiled) {
      ++compiled;
    } else {
      ++cached;
    }
  }
  std::size_t lost = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    lost += results[i].binary && results[i].compiled && !stored_key(cache, items[i].program, items[i].arch, *results[i].binary)
              ? 1
              : 0;
  }
  const std::string why = lost != 0 ? why_not_stored(cache, before, after) : std::string();
  std::printf("%zu compiled, %zu cached, %zu failed in %.1f s\n", compiled, cached, failed, seconds);
  if (lost != 0) {
    // A warm that stored nothing must not pass as one that did (a CI step filling a bundle).
    std::fprintf(stderr, "kjit warm: %zu of the %zu compiled kernels were not stored: %s\n", lost, compiled,
                 why.c_str());
  }
  return failed == 0 && lost == 0 ? 0 : k_exit_failure;
}

} // namespace kjit::cli
