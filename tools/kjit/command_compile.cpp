// kjit compile FILE --arch ARCH: compile a CUDA C++ file through the cache; write its PTX and cubin
// and list each kernel's registers and memory.
#include "commands.hpp"
#include "program_args.hpp"
#include "stored.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace kjit::cli {

namespace {

// Writes `path` as a regular file (a temp file renamed into place). Something else there (a FIFO,
// a device, a folder) is refused, never opened: opening a FIFO waits for a reader.
void write_output(const std::string& path, const std::string& content)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw Error("cannot write " + path + ": it exists and is not a regular file");
  }
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  std::size_t done = 0;
  while (fd >= 0 && done < content.size()) {
    const ssize_t wrote = ::write(fd, content.data() + done, content.size() - done);
    if (wrote <= 0 && errno != EINTR) {
      break;
    }
    done += wrote > 0 ? static_cast<std::size_t>(wrote) : 0;
  }
  const int saved = errno;
  const bool closed = fd >= 0 && ::close(fd) == 0;
  if (fd < 0 || done != content.size() || !closed || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int why = fd < 0 || done != content.size() ? saved : errno;
    std::ignore = ::unlink(temp.c_str());
    throw Error("cannot write " + path + ": " + std::strerror(why));
  }
}

// One line per kernel: what users look at first when tuning (registers, shared/local memory).
void print_kernels(const Binary& binary)
{
  if (binary.cubin.empty()) {
    return;
  }
  std::cout << "cubin made by " << (binary.cubin_path.empty() ? "unknown" : binary.cubin_path) << "\n";
  for (const KernelInfo& kernel : binary.kernels()) {
    std::printf("kernel %s: %d registers, %u B shared, %u B local, %u B constant, %zu params (%u B)",
                kernel.name.c_str(), kernel.registers, kernel.static_shared_bytes, kernel.local_bytes,
                kernel.const_bytes, kernel.params.size(), kernel.param_bytes);
    if (kernel.max_threads != 0) {
      std::printf(", max %u threads", kernel.max_threads);
    }
    std::printf("\n");
  }
}

// What this run did, apart from the timings of the compile that made the binary (for a hit, an
// earlier compile: what the hit saved, never this run's cost).
std::string timings_text(const Lookup& found)
{
  const StageTimings& t = found.binary->timings;
  char text[256];
  switch (found.source) {
  case Source::compiled:
    if (found.lookup_ms > 0) {
      // The lookup's own time beside the compile's: for a program with many headers, resolving,
      // hashing and placing them and storing the entry take a share of the wall time worth seeing.
      std::snprintf(text, sizeof text,
                    "compile: %.1f ms (load %.1f ms, nvrtc %.1f ms, nvJitLink %.1f ms); the lookup took %.1f ms, "
                    "%.1f ms of it outside the compile (headers, key, store)\n",
                    t.total_ms, t.load_ms, t.nvrtc_ms, t.link_ms, found.lookup_ms,
                    std::max(0.0, found.lookup_ms - t.total_ms));
    } else {
      std::snprintf(text, sizeof text, "compile: %.1f ms (load %.1f ms, nvrtc %.1f ms, nvJitLink %.1f ms)\n",
                    t.total_ms, t.load_ms, t.nvrtc_ms, t.link_ms);
    }
    break;
  case Source::compiled_elsewhere:
    std::snprintf(text, sizeof text,
                  "lookup: waited %.1f ms for another process's compile, which took %.1f ms (nvrtc %.1f ms, nvJitLink %.1f ms)\n",
                  found.lookup_ms, t.total_ms, t.nvrtc_ms, t.link_ms);
    break;
  default:
    std::snprintf(text, sizeof text,
                  "lookup: from %s in %.2f ms; the compile it saved took %.1f ms (nvrtc %.1f ms, nvJitLink %.1f ms)\n",
                  to_string(found.source), found.lookup_ms, t.total_ms, t.nvrtc_ms, t.link_ms);
  }
  return text;
}

} // namespace

int command_compile(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  po::options_description hidden;
  po::positional_options_description positional;
  add_program_options(visible, hidden, positional);
  visible.add_options()
    ("output,o", po::value<std::string>()->default_value("."), "folder for the .ptx and .cubin")
    ("no-cache", "compile without reading or writing the cache");
  po::variables_map vm;
  if (!parse_arguments(args, "kjit compile FILE [options]", visible, hidden, positional, vm)) {
    return 0;
  }
  if (vm["output"].as<std::string>().empty()) {
    throw UsageError{"-o needs a folder, not \"\"", ""};
  }
  Arch arch;
  const Program program = program_from_arguments(vm, arch);

  Binary binary;
  std::string outcome;  // this run's: where the binary came from and what that took
  if (vm.count("no-cache") != 0) {
    const Lookup found{std::make_shared<const Binary>(compile(program, arch)), Source::compiled, 0, {}};
    binary = *found.binary;
    std::cout << "compiled (cache bypassed)\n";
    outcome = timings_text(found);
  } else {
    Cache& cache = default_cache();
    // One lookup validates the headers once (a stat each); a PreparedProgram looked up validates
    // them again, for the files of that moment.
    const CacheStats before = cache.stats();
    const Lookup found = cache.lookup(program, arch);
    const CacheStats after = cache.stats();
    const std::uint64_t header_stats = after.header_stats - before.header_stats;  // this lookup's
    binary = *found.binary;
    const std::optional<std::string> compiled_key =
      found.source == Source::compiled ? stored_key(cache, program, arch, binary, found.key) : std::nullopt;
    const bool not_stored = found.source == Source::compiled && !compiled_key;
    if (not_stored) {
      // No key: none was stored, and `kjit show` would find nothing under it.
      std::cout << "compiled, not stored: " << why_not_stored(cache, before, after) << "\n";
    } else {
      // Compiled: the key it is stored under; found by its raw inputs: its key from prepare() (one
      // found by its raw inputs has no disk header to stat).
      const std::string key = compiled_key && !compiled_key->empty() ? *compiled_key
                              : found.key.empty()                     ? cache.prepare(program, arch).key()
                                                                      : found.key;
      std::cout << (found.source == Source::compiled             ? "compiled"
                    : found.source == Source::compiled_elsewhere ? "compiled by another process"
                                                                 : "cache hit")
                << " " << key << "\n";
    }
    outcome = timings_text(found);
    if (header_stats != 0 && found.source != Source::compiled && found.source != Source::compiled_elsewhere) {
      outcome.insert(outcome.size() - 1, "; " + std::to_string(header_stats) + " tracked header stats");
    }
    if (found.source == Source::compiled && !not_stored) {
      // The mirror's background writer would finish at exit, in no column: it is waited for
      // here, and the wait said (the writer started after the commit, beside the work above; a
      // file per header for a heavy program).
      const auto start = std::chrono::steady_clock::now();
      cache.flush_mirror();
      const double mirror_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (cache.config().mirror) {  // (an entry that is not stored is not mirrored either)
        char line[96];
        std::snprintf(line, sizeof line, "mirror: waited %.1f ms for its writer (programs/)\n", mirror_ms);
        outcome += line;
      }
    }
  }
  std::string out_dir = vm["output"].as<std::string>();
  while (out_dir.size() > 1 && out_dir.back() == '/') {
    out_dir.pop_back();  // "out/" prints as out/saxpy.ptx, not out//saxpy.ptx
  }
  std::error_code mkdir_error;
  std::filesystem::create_directories(out_dir, mkdir_error);
  if (mkdir_error) {
    throw Error("cannot create the output folder " + out_dir + ": " + mkdir_error.message());
  }
  const std::string base = program.name.substr(program.name.rfind('/') + 1);  // the name is the FILE as given
  const std::string stem = base.substr(0, base.rfind('.'));
  if (!binary.ptx.empty()) {
    write_output(out_dir + "/" + stem + ".ptx", binary.ptx);
    std::cout << out_dir << "/" << stem << ".ptx (" << binary.ptx.size() << " bytes)\n";
  }
  if (!binary.cubin.empty()) {
    write_output(out_dir + "/" + stem + "." + binary.arch + ".cubin", binary.cubin);
    std::cout << out_dir << "/" << stem << "." << binary.arch << ".cubin (" << binary.cubin.size() << " bytes)\n";
  }
  print_kernels(binary);
  for (const auto& [expression, lowered] : binary.lowered_names) {
    std::cout << expression << " -> " << lowered << "\n";
  }
  std::cout << outcome;
  if (!binary.log.empty()) {
    std::cerr << binary.log << "\n";
  }
  return 0;
}

} // namespace kjit::cli
