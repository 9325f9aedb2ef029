// Toolchain fingerprint: versions remembered under the libraries' file identity.
#include "cache/toolchain.hpp"

#include "cache/cache_dir.hpp"
#include "deps/toolkit_headers.hpp"
#include "config/config_internal.hpp"
#include "remote/remote_tier.hpp"
#include "rtc/build_id.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_library.hpp"
#include "rtc/toolkit.hpp"
#include "store/meta_keys.hpp"

#include <kjit/error.hpp>

#include <ctime>
#include <map>
#include <mutex>
#include <sstream>

namespace kjit::cache {

namespace {

// "path size mtime inode" of a file, or "path missing"; `present` says which, `saw` what the stat
// saw. One stat, unless find_toolkit() stat()ed the file just before (`seen`).
std::string file_identity(const std::string& path, bool* present = nullptr, const rtc::FileSeen& seen = {},
                          rtc::FileSeen* saw = nullptr)
{
  const rtc::FileSeen now = seen.state == rtc::FileSeen::State::not_seen ? rtc::stat_file(path) : seen;
  const bool found = now.state == rtc::FileSeen::State::present;
  if (present != nullptr) {
    *present = found;
  }
  if (saw != nullptr) {
    *saw = now;
  }
  if (!found) {
    return path + " missing";
  }
  return path + " " + std::to_string(now.size) + " " + std::to_string(now.mtime_sec) + "." +
         std::to_string(now.mtime_nsec) + " " + std::to_string(now.inode);
}

struct Versions {
  std::string nvrtc;
  std::string nvjitlink;
  std::string archs;  // "75 80 86 …"
};

std::vector<int> parse_archs(const std::string& text)
{
  std::vector<int> archs;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t used = 0;
    archs.push_back(std::stoi(text.substr(at), &used));
    at += used;
  }
  return archs;
}

// The toolkit include folders relative to its root ("include", "include/cccl").
std::vector<std::string> relative_to_root(const rtc::Toolkit& toolkit)
{
  std::vector<std::string> out;
  for (const auto& dir : toolkit.include_dirs) {
    out.push_back(dir.rfind(toolkit.root + "/", 0) == 0 ? dir.substr(toolkit.root.size() + 1) : dir);
  }
  return out;
}

// The key's toolchain part, as the store remembers it for a process that can't load NVRTC:
// nvrtc, nvjitlink, archs, toolkit-headers, then the include folders (one per line). The part
// before the fingerprint and the part after it, apart.
struct ContextText {
  std::string before;  // nvrtc, nvjitlink, archs
  std::string after;   // the include folders

  explicit ContextText(const KeyContext& context)
  {
    std::string archs;
    for (int arch : context.supported_archs) {
      archs += (archs.empty() ? "" : " ") + std::to_string(arch);
    }
    before = context.nvrtc_identity + "\n" + context.nvjitlink_identity + "\n" + archs + "\n";
    for (const auto& name : context.toolkit_include_names) {
      after += name + "\n";
    }
  }

  std::string with(const std::string& fingerprint) const { return before + fingerprint + "\n" + after; }

  // Whether the value of a context row ("unix time\n" then the text) is of this toolchain, with
  // any fingerprint.
  bool matches(std::string_view row) const
  {
    const auto start = row.find('\n') + 1;  // npos + 1 == 0: no time line, never a match below
    if (start == 0 || row.size() < start + before.size() + after.size() ||
        row.compare(start, before.size(), before) != 0 || row.substr(row.size() - after.size()) != after) {
      return false;
    }
    const auto fingerprint = row.substr(start + before.size(), row.size() - after.size() - start - before.size());
    return !fingerprint.empty() && fingerprint.find('\n') == fingerprint.size() - 1;
  }

  // The fingerprint in a row that matches().
  std::string fingerprint_in(std::string_view row) const
  {
    const auto start = row.find('\n') + 1 + before.size();
    return std::string(row.substr(start, row.size() - after.size() - start - 1));
  }
};

// The meta row that remembers the context of this toolchain with `fingerprint`.
store::Store::Row context_row(const ContextText& text, const std::string& fingerprint)
{
  const std::string part = text.with(fingerprint);
  return {store::Table::meta, k_context_prefix + util::to_hex(util::checksum(part)),
          std::to_string(::time(nullptr)) + "\n" + part};
}

// Remembers the context of this toolchain with `fingerprint` in the store (one read when known).
void remember_context(store::Store& store, const ContextText& text, const std::string& fingerprint)
{
  store::Store::Row row = context_row(text, fingerprint);
  if (!store.get(store::Table::meta, row.key)) {
    store.put({std::move(row)});
  }
}

// The fingerprint of a context of this toolchain the store remembers (any one of them), or
// nullopt: with one, processes without NVRTC find the toolchain, and this one needs no fingerprint
// to remember it.
std::optional<std::string> remembered_fingerprint(const store::Store& store, const ContextText& text)
{
  std::optional<std::string> found;
  store.for_each_prefix(store::Table::meta, k_context_prefix, [&](std::string_view, std::string_view value) {
    if (!found && text.matches(value)) {
      found = text.fingerprint_in(value);
    }
  });
  return found;
}

// The fingerprint of `dirs`, kept in `store`; with a writable store, the context `text` is
// remembered with it there (called when the first key that needs it is made).
std::string find_fingerprint(const std::vector<std::string>& dirs, store::Store* store, const ContextText& text)
{
  try {
    std::string fingerprint = deps::toolkit_headers_fingerprint(dirs, store);
    if (store != nullptr && store->writable()) {
      remember_context(*store, text, fingerprint);
    }
    return fingerprint;
  } catch (const StoreError& e) {
    // Not kept or not remembered (disk full…): found again next time, never fatal.
    warn_once(std::string("cannot remember the toolkit headers' fingerprint: ") + e.what());
    return deps::toolkit_headers_fingerprint(dirs, nullptr);
  }
}

// (major, minor) of an NVRTC identity line ("13.0 V13.0.88 CL-…"); (0, 0) when unreadable.
std::pair<int, int> nvrtc_version(const std::string& identity)
{
  int major = 0;
  int minor = 0;
  std::ignore = std::sscanf(identity.c_str(), "%d.%d", &major, &minor);
  return {major, minor};
}

std::mutex g_memo_mutex;
std::map<std::string, Versions> g_memo;  // file identity → versions, for this process

} // namespace

std::optional<KeyContext> remembered_toolchain(const store::Store& store)
{
  std::vector<std::string> keys;
  store.for_each_prefix(store::Table::meta, k_context_prefix, [&](std::string_view key, std::string_view) {
    keys.emplace_back(key);
  });
  std::optional<KeyContext> best;
  std::tuple<int, int, long long> best_rank{-1, -1, -1};
  for (const std::string& key : keys) {
    const auto value = store.get(store::Table::meta, key);
    if (!value) {
      continue;
    }
    std::istringstream lines(*value);
    std::string recorded;
    KeyContext context;
    std::string archs;
    std::string fingerprint;
    if (!std::getline(lines, recorded) || !std::getline(lines, context.nvrtc_identity) ||
        !std::getline(lines, context.nvjitlink_identity) || !std::getline(lines, archs) ||
        !std::getline(lines, fingerprint) || context.nvrtc_identity.empty()) {
      continue;
    }
    context.toolkit_headers = fingerprint;
    for (std::string name; std::getline(lines, name);) {
      context.toolkit_include_names.push_back(name);
    }
    try {
      context.supported_archs = parse_archs(archs);
    } catch (const std::exception&) {
      continue;  // a foreign row: never a key part
    }
    const auto [major, minor] = nvrtc_version(context.nvrtc_identity);
    const std::tuple<int, int, long long> rank{major, minor, std::atoll(recorded.c_str())};
    if (rank > best_rank) {
      best_rank = rank;
      best = std::move(context);
    }
  }
  return best;
}

namespace {

// Versions as the memo rows hold them: "nvrtc\nnvjitlink\narchs".
std::string memo_text(const Versions& versions)
{
  return versions.nvrtc + "\n" + versions.nvjitlink + "\n" + versions.archs;
}

// The versions at the head of a memo row (memo_text()), and what follows them (the fleet memo's
// fingerprint line, "" for none); nullopt without three lines.
std::optional<std::pair<Versions, std::string>> versions_in(const std::string& text)
{
  const auto first = text.find('\n');
  const auto second = first == std::string::npos ? first : text.find('\n', first + 1);
  if (second == std::string::npos) {
    return std::nullopt;
  }
  const auto third = text.find('\n', second + 1);
  Versions versions{text.substr(0, first), text.substr(first + 1, second - first - 1),
                    text.substr(second + 1, third == std::string::npos ? std::string::npos : third - second - 1)};
  return std::pair{std::move(versions), third == std::string::npos ? std::string() : text.substr(third + 1)};
}

// What the stats of toolchain_file_identity() saw of the three libraries.
struct LibrariesSeen {
  rtc::FileSeen nvrtc;
  rtc::FileSeen builtins;
  rtc::FileSeen nvjitlink;
};

// toolchain_file_identity(), also saying whether the NVRTC library file is there (one stat each;
// none for the files a fresh find_toolkit() already stat()ed, `fresh`).
std::string file_identities(const rtc::Toolkit& toolkit, bool& has_nvrtc, bool fresh, LibrariesSeen* saw = nullptr)
{
  const rtc::FileSeen none;
  LibrariesSeen seen;
  std::string identity =
    "nvrtc " + file_identity(toolkit.nvrtc_path, &has_nvrtc, fresh ? toolkit.nvrtc_seen : none, &seen.nvrtc) +
    "\nbuiltins " +
    file_identity(toolkit.nvrtc_builtins_path, nullptr, fresh ? toolkit.nvrtc_builtins_seen : none, &seen.builtins) +
    "\nnvjitlink " + file_identity(toolkit.nvjitlink_path, nullptr, none, &seen.nvjitlink) + "\nheaders " +
    file_identity(toolkit.root + "/version.json") + "\n";
  if (saw != nullptr) {
    *saw = seen;
  }
  return identity;
}

// The libraries' GNU build IDs ("nvrtc <id>\nbuiltins <id>\nnvjitlink <id>\n"; "builtins none"
// when the toolkit has no builtins library), each read from the file `seen` describes: the name
// of the fleet's memo of their versions. nullopt when one of them has no build ID.
std::optional<std::string> build_identity(const rtc::Toolkit& toolkit, const LibrariesSeen& seen)
{
  const auto nvrtc = rtc::gnu_build_id(toolkit.nvrtc_path, seen.nvrtc);
  const auto nvjitlink = rtc::gnu_build_id(toolkit.nvjitlink_path, seen.nvjitlink);
  const bool no_builtins = toolkit.nvrtc_builtins_path.empty();
  const auto builtins = no_builtins ? std::optional<std::string>("none")
                                    : rtc::gnu_build_id(toolkit.nvrtc_builtins_path, seen.builtins);
  if (!nvrtc || !nvjitlink || !builtins) {
    return std::nullopt;
  }
  return "nvrtc " + *nvrtc + "\nbuiltins " + *builtins + "\nnvjitlink " + *nvjitlink + "\n";
}

// The name of the fleet's memo row for the libraries whose build IDs are `build`.
std::string fleet_memo_name(const std::string& build)
{
  return "toolchain:v1:" + util::to_hex(util::checksum(build));
}

// The store's meta row of the versions of the libraries whose build IDs are `build`: found on
// another machine too (the files' identity rows name inodes), and carried by bundles ("toolchain ").
std::string build_memo_key(const std::string& build)
{
  return std::string(store::k_toolchain_prefix) + "build " + util::to_hex(util::checksum(build));
}

// The store's meta row of the versions of the library files whose identity is `identity`
// (file_identities(); meta rows are named by XXH3-128: a hit runs no SHA-256, util/hash.cpp).
std::string identity_memo_key(const std::string& identity)
{
  return std::string(store::k_toolchain_prefix) + util::to_hex(util::checksum(identity));
}

// The fleet's memo: the versions, then (when the node that learned them knew it) a line with the
// fingerprint of its toolkit headers, which a new node remembers its context with, as a bundle's
// context row gives one: never a fingerprint of this node's keys, which find their own.
struct FleetMemo {
  Versions versions;
  std::string fingerprint;  // may be empty
};

// A fleet memo's text; nullopt unless it has the three lines of versions, an NVRTC identity that
// starts with its version ("13.0 …") and a list of archs (a fleet's row could be planted or damaged).
std::optional<FleetMemo> parse_fleet_memo(const std::string& text)
{
  auto parsed = versions_in(text);
  if (parsed && !parsed->second.empty() && parsed->second.back() == '\n') {
    parsed->second.pop_back();  // a line's own end
  }
  if (!parsed || parsed->second.find('\n') != std::string::npos) {
    return std::nullopt;
  }
  FleetMemo memo{std::move(parsed->first), std::move(parsed->second)};
  try {
    if (nvrtc_version(memo.versions.nvrtc).first <= 0 || memo.versions.nvjitlink.empty() ||
        parse_archs(memo.versions.archs).empty()) {
      return std::nullopt;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return memo;
}

} // namespace

void remember_build_memo(const Config& config, store::Store& store)
{
  const rtc::Toolkit toolkit = rtc::remember_toolkit(config);
  bool has_nvrtc = false;
  LibrariesSeen seen;
  const std::string identity = file_identities(toolkit, has_nvrtc, true, &seen);
  const auto known = store.get(store::Table::meta, identity_memo_key(identity));
  const auto build = known ? build_identity(toolkit, seen) : std::nullopt;
  if (build && !store.get(store::Table::meta, build_memo_key(*build))) {
    if (const auto parsed = versions_in(*known); parsed && !parsed->first.nvrtc.empty()) {
      store.put({{store::Table::meta, build_memo_key(*build), memo_text(parsed->first)}});
    }
  }
}

std::string toolchain_file_identity(const rtc::Toolkit& toolkit)
{
  bool has_nvrtc = false;
  return file_identities(toolkit, has_nvrtc, false);
}

KeyContext toolchain_context(const Config& config, store::Store* store, remote::RemoteTier* remote,
                             std::vector<store::Store::Row>* deferred, bool fingerprint_later, bool* unknown)
{
  KeyContext context;
  const rtc::Toolkit toolkit = rtc::remember_toolkit(config);  // once per Cache: its misses stat nothing
  context.toolkit_include_dirs = toolkit.include_dirs;
  context.toolkit_include_names = relative_to_root(toolkit);
  bool has_nvrtc = false;
  LibrariesSeen seen;
  const std::string identity = file_identities(toolkit, has_nvrtc, true, &seen);  // found just now
  if (store != nullptr && !has_nvrtc) {
    // No NVRTC here: the keys of the toolchain that made the store's entries (hits only; a miss
    // fails with the ToolchainError of the missing library).
    if (auto remembered = remembered_toolchain(*store)) {
      remembered->toolkit_include_dirs = toolkit.include_dirs;
      remembered->compiler_environment = compiler_environment();
      return *remembered;
    }
  }
  const std::string meta_key = identity_memo_key(identity);
  std::unique_lock lock(g_memo_mutex);
  Versions& versions = g_memo[identity];  // (a map's elements stay where they are)
  // Read even when this process knows the versions: a store that lacks them gets them below, or
  // every later process there would load NVRTC to learn them (one read when known).
  const std::optional<std::string> stored =
    store != nullptr ? store->get(store::Table::meta, meta_key) : std::nullopt;
  if (versions.nvrtc.empty() && stored) {
    if (auto parsed = versions_in(*stored)) {
      versions = std::move(parsed->first);
    }
  }
  // Versions not known for these files: known for their bytes? The libraries' build IDs, which
  // the linker derives from their bytes, name them in the store (a bundle made on another machine
  // brings that row) and in the fleet's memo; a node of another toolkit never finds this one's.
  const std::optional<std::string> build =
    versions.nvrtc.empty() && (store != nullptr || remote != nullptr) ? build_identity(toolkit, seen) : std::nullopt;
  const std::optional<std::string> by_build =
    build && store != nullptr ? store->get(store::Table::meta, build_memo_key(*build)) : std::nullopt;
  if (by_build) {
    if (auto parsed = parse_fleet_memo(*by_build)) {
      versions = std::move(parsed->versions);
    }
  }
  std::string fleet_fingerprint;
  if (build && versions.nvrtc.empty() && remote != nullptr) {
    if (const auto shared = remote->get_meta(fleet_memo_name(*build))) {
      if (auto parsed = parse_fleet_memo(*shared)) {
        versions = std::move(parsed->versions);
        fleet_fingerprint = std::move(parsed->fingerprint);
      }
    }
  }
  const bool probed = versions.nvrtc.empty();
  if (probed && unknown != nullptr) {
    *unknown = true;
    return context;
  }
  if (probed) {
    // Probed with this toolkit's libraries only: never record another toolkit's versions here.
    // Not holding the memo: the probe may wait for a speculating compile's PTX (seconds), and
    // another Cache's context may be remembered in its store.
    lock.unlock();
    rtc::nvrtc_for(config);
    // Before NVRTC's build, which may wait for a speculating compile's PTX: nvJitLink's pages
    // (loaded to be asked, then let go) are gone before that compile's peak, not at its end.
    const rtc::NvJitLinkVersion nvjitlink = rtc::nvjitlink_version(config);
    std::string archs;
    for (int arch : kjit::supported_archs()) {
      archs += (archs.empty() ? "" : " ") + std::to_string(arch);
    }
    Versions learned{rtc::nvrtc_build_identity(config),
                     std::to_string(nvjitlink.major) + "." + std::to_string(nvjitlink.minor), archs};
    lock.lock();
    if (versions.nvrtc.empty()) {
      versions = std::move(learned);
    }
  }
  std::vector<store::Store::Row> rows;  // written in one commit at the end
  if (store != nullptr && !stored && (probed || store->writable())) {
    rows = {{store::Table::meta, meta_key, memo_text(versions)}, {store::Table::meta, meta_key + " files", identity}};
  }
  if (store != nullptr && build && !by_build && (probed || store->writable())) {
    rows.push_back({store::Table::meta, build_memo_key(*build), memo_text(versions)});
  }
  context.nvrtc_identity = versions.nvrtc;
  context.nvjitlink_identity = versions.nvjitlink;
  context.compiler_environment = compiler_environment();
  context.supported_archs = parse_archs(versions.archs);
  // The toolkit headers' fingerprint is found when the first key that holds it is made (a
  // program that may include a header): then the context is remembered with it.
  const ContextText text(context);
  context.toolkit_headers = ToolkitHeaders(
    [dirs = toolkit.include_dirs, store, text] { return find_fingerprint(dirs, store, text); });
  std::optional<std::string> fingerprint =
    store != nullptr && store->writable() ? remembered_fingerprint(*store, text) : std::nullopt;
  if (store != nullptr && store->writable() && !fingerprint) {
    // Processes without NVRTC need a remembered context of this toolchain, whatever keys are made
    // here: the first process of a toolchain remembers it (now, or with its first entry), with the
    // fleet's fingerprint on a new node of a fleet (reading the toolkit's headers costs ≈ 0.1 s),
    // else with this one's.
    if (!fleet_fingerprint.empty()) {
      rows.push_back(context_row(text, fleet_fingerprint));  // with the versions: one fdatasync
    } else if (!fingerprint_later) {
      fingerprint = context.toolkit_headers.value();
    }
  }
  if (!rows.empty()) {
    if (deferred != nullptr) {
      deferred->insert(deferred->end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    } else {
      store->put(rows);
    }
  }
  if (probed && build && remote != nullptr) {
    // The next new node of the fleet loads nothing.
    remote->put_meta(fleet_memo_name(*build), memo_text(versions) + (fingerprint ? "\n" + *fingerprint : ""));
  }
  return context;
}

} // namespace kjit::cache
