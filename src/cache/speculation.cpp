// See speculation.hpp. Why a binary compiled from the disk may be stored under a key made from
// what kjit read (docs/includes.md, "A first miss"): NVRTC found only files the key holds (each
// found by it is a header of the resolution), every name it looked for in vain is one whose
// appearance the key's manifest watches, and no header the key holds changed since before NVRTC
// started (its stamp is not too new by that moment and is the same after the compile), so what
// NVRTC read is what kjit hashed. The binary is then the one `--no-cache` makes, by construction.
#include "cache/speculation.hpp"

#include "cache/direct_index.hpp"
#include "cache/key.hpp"
#include "store/meta_keys.hpp"
#include "store/record.hpp"
#include "util/hash.hpp"
#include "util/own_thread.hpp"
#include "rtc/compile_options.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_library.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <map>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <ctime>
#include <unistd.h>

namespace kjit::cache {

namespace {

thread_local Speculation* t_current = nullptr;
thread_local std::shared_ptr<deps::Resolver>* t_prediction = nullptr;
thread_local bool t_outdated_ends_prepare = false;
thread_local const OutdatedRow* t_outdated_row = nullptr;
// At most this many records of a program's name are read to tell that none is of its arch.
constexpr std::size_t k_records_read = 32;
std::atomic<std::uint64_t> g_adopted{0};
std::atomic<std::uint64_t> g_compiled{0};
std::atomic<std::uint64_t> g_encoded{0};  // blobs encoded ahead (keep_encoded_blobs)

bool below(const std::string& path, const std::string& dir)
{
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// A name of NVRTC's own that it looks for on disk before it takes its built-in one (NVRTC 13.0, at
// every compile: __nv_nvrtc_builtin_header.h and __nv_name_map, in the working directory).
bool nvrtc_own(const std::string& path)
{
  const std::size_t base = path.rfind('/') + 1;  // 0 when there is no '/'
  return path.compare(base, 5, "__nv_") == 0;
}

// The store's "program-rows" time (meta_keys.hpp): 0 when every entry it holds has its program
// row; nullopt when none is written (or it can't be read).
std::optional<std::int64_t> program_rows_since(const store::Store& store)
{
  std::optional<std::int64_t> since;
  store.visit(store::Table::meta, store::k_program_rows_since, [&](std::string_view value) {
    std::int64_t time = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), time);
    if (error == std::errc() && end == value.data() + value.size()) {
      since = time;
    }
  });
  return since;
}

// Adds `path` to `paths` unless it is there.
void named_once(std::vector<std::string>& paths, const std::string& path)
{
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) {
    paths.push_back(path);
  }
}

// The first of `paths` (not empty), with how many more.
std::string first_of(const std::vector<std::string>& paths)
{
  return paths.front() + (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more" : "");
}

} // namespace

Speculation::Speculation(const Config& config, Program program, const Arch& arch, std::unique_ptr<rtc::FileWatch> watch)
  : m_config(config), m_program(std::move(program)), m_arch(arch), m_start_ns(deps::stamp_clock_ns()),
    m_watch(std::move(watch))
{
}

void Speculation::compile()
{
  try {
    rtc::nvrtc_for(m_config);
    if (rtc::cubin_path(m_program, m_arch) == rtc::CubinPath::nvjitlink_lto) {
      rtc::nvjitlink_for(m_config);  // (not for NVRTC's own cubin: compile_placed())
    }
  } catch (...) {
    m_error = std::current_exception();  // the usual compile reports it
    return;
  }
  if (!m_watch || !m_watch->start()) {
    m_blind = "NVRTC's file accesses can't be watched in this process";
    return;
  }
  g_compiled.fetch_add(1, std::memory_order_relaxed);
  try {
    m_binary = rtc::compile(m_config, m_program, m_arch);
  } catch (const CompileError&) {
    m_error = std::current_exception();
    m_compile_error = true;
  } catch (...) {
    m_error = std::current_exception();
  }
  m_compiled_ns = deps::Resolver::steady_now_ns();
  m_blind = m_watch->blind();
  m_accesses = m_watch->accesses();
  m_watch.reset();  // the next compile of this process may be watched
}

PreparedProgram prepare_beside(Speculation& speculation, const std::function<PreparedProgram()>& prepare)
{
  std::optional<PreparedProgram> prepared;
  std::exception_ptr error;
  std::optional<rtc::CompileAhead> ahead(std::in_place);  // the key context waits for its PTX, not probing
  std::thread preparing;
  try {
    // Behind the caller's thread, which runs NVRTC: its work is what NVRTC's time hides.
    preparing = util::own_thread("kjit-prepare", [&] {
      try {
        prepared = prepare();
      } catch (...) {
        error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    ahead.reset();
    speculation.skip("no thread to prepare on");
    return prepare();
  }
  speculation.compile();
  ahead.reset();  // its PTX named NVRTC's build, or the key context compiles its probe now
  preparing.join();
  if (error) {
    std::rethrow_exception(error);
  }
  return std::move(*prepared);
}

bool Speculation::is_for(const Program& program, const Arch& arch) const
{
  return arch == m_arch && program.name == m_program.name && program.source == m_program.source &&
         program.options == m_program.options && program.headers == m_program.headers &&
         program.name_expressions == m_program.name_expressions;
}

std::optional<Binary> Speculation::from_disk()
{
  m_taken = m_binary.has_value() || m_compile_error;
  if (m_compile_error) {
    std::rethrow_exception(m_error);
  }
  return m_binary;
}

std::string Speculation::unanswered(const deps::Resolver& resolver, Unheld* unheld) const
{
  const deps::SearchContext& context = resolver.context();
  deps::RealPaths real_paths;  // the folders of NVRTC's looks, each walked once
  std::map<std::string, const deps::DiskHeader*> by_real_path;  // made when first needed
  const auto header_at = [&](const std::string& path) -> const deps::DiskHeader* {
    if (const deps::DiskHeader* header = resolver.find(path)) {
      return header;
    }
    if (by_real_path.empty()) {
      for (const deps::DiskHeader& header : resolver.result().headers) {
        by_real_path.emplace(real_paths.real(header.path), &header);
      }
    }
    const auto it = by_real_path.find(real_paths.real(path));
    return it == by_real_path.end() ? nullptr : it->second;
  };
  const std::string main_real = deps::walk_path(resolver.main_path()).real;
  // Another spelling of the program's own name ends in its file name (NVRTC stats the name given;
  // a symlink by another name is taken as any file): the symlink-free path of the other looks
  // (2 300 stats of a vendored CCCL's searches, each folder walked: 3 ms) is not asked.
  const std::string main_name = resolver.main_path().substr(resolver.main_path().rfind('/') + 1);
  // (NVRTC stats the name as given, which with --no-source-include is not where main_path() is.)
  const std::string given = deps::join_path(context.cwd, m_program.name);
  const auto names_main = [&](const std::string& path) {
    return path == resolver.main_path() || path == given ||
           (path.size() > main_name.size() && path.compare(path.size() - main_name.size(), main_name.size(), main_name) == 0 &&
            path[path.size() - main_name.size() - 1] == '/' && real_paths.real(path) == main_real);
  };
  for (const rtc::FileAccess& access : m_accesses) {
    const std::string path =
      access.path.empty() || access.path.front() != '/' ? deps::join_path(context.cwd, access.path) : access.path;
    if (access.writes) {
      return "NVRTC changed " + path;
    }
    if (std::any_of(context.toolkit_dirs.begin(), context.toolkit_dirs.end(),
                    [&](const std::string& dir) { return path == dir || below(path, dir); })) {
      continue;  // the toolkit's: in the key by its fingerprint
    }
    if (!access.mine) {
      // Another thread's NVRTC (while this compile waited for NVRTC's one at a time): kjit's own
      // compile from a private folder is known by its paths, and every compile looks at folders and
      // NVRTC's own names; a user file can't be told from one this compile read.
      if (access.path.find("/kjit-includes-") != std::string::npos || (access.found && access.directory) ||
          (!access.found && nvrtc_own(path))) {
        continue;
      }
      return "another thread's NVRTC looked at " + access.path;
    }
    if (!access.opened && names_main(path)) {
      continue;  // NVRTC's stat of the program's own name, there or not: it compiles the text it was given
    }
    if (!access.found && nvrtc_own(path)) {
      continue;  // looked for on disk before NVRTC takes its built-in one; absent, as in a private folder
    }
    if (!access.found) {
      if (access.error != ENOENT && access.error != ENOTDIR) {
        return "NVRTC looked for " + path + ", which the key does not watch";
      }
      if (!resolver.absence_watched(path)) {
        // (named: a compile from the private folder finds it absent too, but the key must watch
        // it, or its appearance on disk would be served the binary of its absence)
        if (unheld == nullptr) {
          return "NVRTC looked for " + path + ", which the key does not watch";
        }
        named_once(unheld->absent, path);
        continue;
      }
      // Not found by NVRTC, but read by kjit, or there now: the folder it was looked for in led
      // elsewhere for NVRTC (a symlinked folder swapped, the working directory changed and back).
      // Absent now, it is no header of kjit's by another spelling (its symlink-free path leads to
      // no file; one kjit read and that is gone since fails resolver.unchanged()): only its own
      // spelling is asked, not header_at()'s map of every header's real path (a vendored CCCL:
      // 35 ms of lstat()s for NVRTC's look for cuda_runtime_api.h in the -I folder).
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 || resolver.find(path) != nullptr) {
        return "NVRTC did not find " + path + ", which kjit found";
      }
      continue;
    }
    if (access.directory) {
      // A folder's kind or stamp (NVRTC 13.0 compares $PWD with "." and looks at the -I folders):
      // what a search finds in it, or not, shows as the accesses of its files.
      continue;
    }
    const deps::DiskHeader* header = header_at(path);
    if (header == nullptr) {
      // Every such file is named (`unheld`): a second compile from the private folder answers a
      // probe of one it lacks as false (adopt(), compile_placed()).
      if (unheld == nullptr) {
        return "NVRTC read " + path + ", which the key does not hold";
      }
      named_once(unheld->found, path);
      continue;
    }
    // The file NVRTC found is the one kjit read there: not another put in its place meanwhile (a
    // symlinked folder retargeted, a file renamed over it, the working directory changed and back).
    if (access.inode != 0 && (access.inode != header->stamp.inode || access.device != header->stamp.device)) {
      return "NVRTC read another file at " + path + " than kjit did";
    }
  }
  if (unheld != nullptr && !unheld->found.empty()) {
    return "NVRTC read " + first_of(unheld->found) + ", which the key does not hold";
  }
  if (unheld != nullptr && !unheld->absent.empty()) {
    return "NVRTC looked for " + first_of(unheld->absent) + ", which the key does not watch";
  }
  return {};
}

bool Speculation::names_a_file(const deps::Resolver& resolver) const
{
  const deps::SearchContext& context = resolver.context();
  for (const rtc::FileAccess& access : m_accesses) {
    if (!access.mine || !access.opened || !access.found || access.path.empty() ||
        std::any_of(context.toolkit_dirs.begin(), context.toolkit_dirs.end(),
                    [&](const std::string& dir) { return below(access.path, dir); })) {
      continue;
    }
    if (deps::binary_holds(m_binary->ptx, access.path) || deps::binary_holds(m_binary->cubin, access.path)) {
      return true;
    }
  }
  return false;
}

std::optional<Binary> Speculation::adopt(deps::Resolver& resolver, std::string& why)
{
  if (m_error && !m_compile_error) {
    why = "the compile from the disk failed";
    return std::nullopt;
  }
  if (!m_blind.empty()) {
    why = m_blind;
    return std::nullopt;
  }
  m_unheld = {};
  if (why = unanswered(resolver, &m_unheld); !why.empty()) {
    return std::nullopt;
  }
  // NVRTC names files relative to the working directory; the key's paths are absolute from the
  // one the headers were resolved in. A host that changed it meanwhile had NVRTC read elsewhere.
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr || resolver.context().cwd != cwd) {
    why = "the working directory changed during the compile";
    return std::nullopt;
  }
  const deps::Resolution& resolution = resolver.result();
  for (const deps::DiskHeader& header : resolution.headers) {
    if (deps::too_new(header.stamp, m_start_ns)) {
      why = header.path + " changed while NVRTC read it";
      return std::nullopt;
    }
  }
  // (The compile checked it after NVRTC returned, compile_entry(): not made again.)
  if (!resolver.unchanged_since(m_compiled_ns)) {
    why = "a header changed while NVRTC read it";
    return std::nullopt;
  }
  for (const deps::ProbedDir& dir : resolution.dirs) {
    if (deps::folder_changed(dir, deps::folder_stamp_of(dir.path))) {
      why = "a file appeared in " + dir.path + " while NVRTC searched it";
      return std::nullopt;
    }
  }
  g_adopted.fetch_add(1, std::memory_order_relaxed);
  m_taken = true;
  if (m_error) {
    std::rethrow_exception(m_error);  // a CompileError of what the key holds
  }
  if (!resolver.names_files() && names_a_file(resolver)) {
    // What the private folder's way finds by its root in the binary (copies_named()): compiled
    // from the disk, which this was, and not cached.
    resolver.copies_named();
  }
  return m_binary;
}

bool entries_without_program_rows_may_serve(const Program& program, const Arch& arch, const store::Store& store)
{
  // A bundle's entries have none: its name's row says so (for any arch).
  if (store.visit(store::Table::meta, unmarked_name_row(program.name), [](std::string_view) {})) {
    return true;
  }
  // Entries stored before this store's first program row may have none: one of this name for
  // this arch keeps it from being compiled ahead (a record's first fields name its arch and time).
  const std::optional<std::int64_t> since = program_rows_since(store);
  bool unknown = false;
  if (since != 0) {
    std::vector<std::string> keys;
    const std::string prefix = store::names_prefix(program.name);
    store.for_each_prefix(store::Table::names, prefix, [&](std::string_view key, std::string_view name) {
      if (name == program.name) {
        keys.emplace_back(key.substr(prefix.size()));
      }
    });
    unknown = keys.size() > k_records_read;
    for (std::size_t i = 0; i < keys.size() && !unknown; ++i) {
      store.visit(store::Table::entries, keys[i], [&](std::string_view bytes) {
        const auto summary = store::summarize_record(bytes);
        try {
          unknown = unknown || !summary || (Arch::parse(summary->arch).number() == arch.number() &&
                                            (!since || summary->created_unix < *since));
        } catch (const Error&) {
          unknown = true;  // an arch this kjit can't read: may be anything
        }
      });
    }
  }
  // The same source under another name, stored by a kjit that wrote no program rows, or imported
  // from a bundle: a project that moved (its programs named by absolute paths) finds its entries
  // through its prediction, which a compile ahead would make wait.
  store.visit(store::Table::meta, source_row(program, arch), [&](std::string_view value) {
    unknown = unknown || value != store::k_source_with_program_rows;
  });
  return unknown;
}

Ahead may_speculate(const Program& program, const util::Sha256& digest, const Arch& arch, store::Store* store,
                    bool lower_tiers, bool known)
{
  if (store == nullptr || !store->writable() || lower_tiers || rtc::compile_delegated() || !program.headers.empty() ||
      !mentions_include(program)) {
    return Ahead::never;
  }
  if (std::any_of(program.options.begin(), program.options.end(), [](const std::string& option) {
        for (const char* prefix : {"-include", "--pre-include", "-time", "--time", "-fdevice-time-trace",
                                   "--fdevice-time-trace", "-pch", "--pch", "-create-pch", "--create-pch"}) {
          if (option.rfind(prefix, 0) == 0) {
            return true;
          }
        }
        return false;
      })) {
    return Ahead::never;
  }
  if (known) {
    return Ahead::if_outdated;
  }
  // An entry of this program for this arch may be a hit (through a manifest, a prediction of a
  // project that moved, under any name), or give its PTX (compute_XY for sm_XY): then the compile
  // would be wasted. Its program row says whether the store holds one (program_digest(): what of the
  // key the program alone decides). Another program, of the same name or source, can't serve it.
  bool unknown = false;
  try {
    unknown = store->visit(store::Table::meta, program_row(digest, arch), [](std::string_view) {}) ||
              entries_without_program_rows_may_serve(program, arch, *store);
  } catch (const Error&) {
    return Ahead::never;  // the lookup itself says what is wrong with the store
  }
  return unknown ? Ahead::if_outdated : Ahead::now;
}

std::string source_row(std::string_view source, const Arch& arch)
{
  return std::string(store::k_source_prefix) + std::to_string(arch.number()) + " " +
         util::to_hex(util::Sha256Hasher().update(source).finish());
}

std::string source_row(const Program& program, const Arch& arch)
{
  return source_row(program.source, arch);
}

std::string unmarked_name_row(const std::string& program_name)
{
  const std::string prefix = store::names_prefix(program_name);
  return std::string(store::k_unmarked_name_prefix) +
         util::to_hex(reinterpret_cast<const std::uint8_t*>(prefix.data()), prefix.size());
}

std::string program_row(const util::Sha256& digest, const Arch& arch)
{
  return std::string(store::k_program_prefix) + std::to_string(arch.number()) + " " + util::to_hex(digest);
}

void add_program_rows(const Program& program, const Arch& arch, const store::Store& store,
                      std::vector<store::Store::Row>& rows)
{
  rows.push_back({store::Table::meta, program_row(program_digest(program), arch), "stored"});
  rows.push_back({store::Table::meta, source_row(program, arch), std::string(store::k_source_with_program_rows)});
  if (!program_rows_since(store)) {
    // From now on every entry stored here has its program row; in a store without entries, all do.
    const bool empty = store.count(store::Table::entries) == 0;
    rows.push_back({store::Table::meta, std::string(store::k_program_rows_since),
                    empty ? std::string("0") : std::to_string(static_cast<std::int64_t>(::time(nullptr)))});
  }
}

bool KnownPrograms::contains(const util::Sha256& digest, const Arch& arch) const
{
  std::lock_guard lock(m_mutex);
  return m_programs.count({arch.number(), digest}) != 0;
}

void KnownPrograms::insert(const util::Sha256& digest, const Arch& arch)
{
  std::lock_guard lock(m_mutex);
  m_programs.insert({arch.number(), digest});
}

SpeculationScope::SpeculationScope(Speculation* speculation) noexcept : m_previous(t_current)
{
  t_current = speculation;
}

SpeculationScope::~SpeculationScope()
{
  t_current = m_previous;
}

SpeculationPrediction::SpeculationPrediction(std::shared_ptr<deps::Resolver>& slot) noexcept
{
  t_prediction = &slot;
}

SpeculationPrediction::~SpeculationPrediction()
{
  t_prediction = nullptr;
}

OutdatedManifestScope::OutdatedManifestScope() noexcept
{
  t_outdated_ends_prepare = true;
}

OutdatedManifestScope::~OutdatedManifestScope()
{
  t_outdated_ends_prepare = false;
}

bool outdated_manifest_ends_prepare() noexcept
{
  return t_outdated_ends_prepare;
}

OutdatedRowScope::OutdatedRowScope(const OutdatedRow& row) noexcept
{
  t_outdated_row = &row;
}

OutdatedRowScope::~OutdatedRowScope()
{
  t_outdated_row = nullptr;
}

const OutdatedRow* known_outdated_row() noexcept
{
  return t_outdated_row;
}

std::shared_ptr<deps::Resolver>* speculation_prediction() noexcept
{
  return t_prediction;
}

std::uint64_t speculations_adopted() noexcept
{
  return g_adopted.load(std::memory_order_relaxed);
}

std::uint64_t speculations_compiled() noexcept
{
  return g_compiled.load(std::memory_order_relaxed);
}

std::uint64_t blobs_encoded_ahead() noexcept
{
  return g_encoded.load(std::memory_order_relaxed);
}

void Speculation::keep_encoded_blobs(std::map<util::Sha256, std::string> blobs)
{
  g_encoded.fetch_add(blobs.size(), std::memory_order_relaxed);
  m_encoded_blobs = std::move(blobs);
}

Speculation* current_speculation(const Program& program, const Arch& arch)
{
  return t_current != nullptr && t_current->is_for(program, arch) ? t_current : nullptr;
}

} // namespace kjit::cache

