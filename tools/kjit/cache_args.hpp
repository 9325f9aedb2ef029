// What the cache-operating subcommands share: --cache-dir, opening the cache, JSON text, colour.
#pragma once

#include "options.hpp"

#include <kjit/kjit.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace kjit::cli {

// Adds --cache-dir to `visible`.
void add_cache_dir_option(po::options_description& visible);

// Adds --name and --arch (entry filters) to `visible`; parsed_filter() reads them back.
void add_filter_options(po::options_description& visible);
EntryFilter parsed_filter(const po::variables_map& vm);

// Whether a command may create or change the cache folder: read (inspect; create nothing),
// change (an existing folder only), write (create it when missing).
enum class Access { read, change, write };

// The cache the parsed options name (--cache-dir, else KJIT_CACHE_DIR, else the default). With
// Access::read and Access::change a missing folder is not created (nullptr is returned: an empty cache) and the
// store is opened for inspection (Config::inspect_only): read-only, a damaged one left as it is; with
// Access::read a folder holding no store yet is an empty cache too (nullptr).
std::unique_ptr<Cache> open_cache(const po::variables_map& vm, Access access);

// Throws StoreError (exit 1) unless `cache` has a store this process can write.
void require_writable(const Cache& cache);

// Whether this process could write the store of `cache` (also one opened for inspection).
bool could_write(const Cache& cache);

// `text` as a JSON string literal, quotes included.

std::string json_string(const std::string& text);

// `text` on one line for a listing: each control character (a newline in a file name) as '?'.
std::string one_line(std::string text);

// "2026-11-22 22:40" in local time.
std::string format_time(std::int64_t unix_time);

// "1.2 MiB", "512 B".
std::string format_bytes(std::size_t bytes);

// --jobs: worker processes at once, 0 for one per core. More than 1024 is a UsageError (each job
// is a process and a thread).
unsigned jobs_option(const po::variables_map& vm);

// Parses an age: "90" or "90s", "15m", "12h", "30d", "2w". Throws UsageError.
std::int64_t parse_age(const std::string& text, const std::string& usage);

// Colour escapes for stdout: empty unless stdout is a terminal and NO_COLOR is unset.
struct Colours {
  const char* ok;
  const char* warn;
  const char* bad;
  const char* reset;
};
const Colours& colours();

} // namespace kjit::cli
