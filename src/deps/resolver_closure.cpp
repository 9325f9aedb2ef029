// Closing a resolution: every known name looked up in every folder searched, the names checked
// for what only NVRTC would open on disk (absolute, climbing above /, formed by a computed include),
// and the user's folders named like the toolkit's passed whole.
#include "deps/resolver.hpp"

#include "deps/formed_names.hpp"
#include "deps/toolkit_headers.hpp"
#include "util/file.hpp"
#include "util/text.hpp"

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <set>

namespace kjit::deps {

namespace {

std::atomic<std::uint64_t> g_closure_passes{0};

// Names through one first step ("cub" for "cub/block/x.cuh", the name itself for "x.h").
struct NameGroup {
  std::string first;
  std::vector<const std::string*> names;  // in `names`' order
};

// `names` (sorted) grouped by first step; empty and absolute names left out (no folder searches them).
std::vector<NameGroup> grouped(const std::set<std::string>& names)
{
  std::vector<NameGroup> groups;
  for (const auto& name : names) {
    if (name.empty() || name.front() == '/') {
      continue;
    }
    const std::string_view first = std::string_view(name).substr(0, name.find('/'));
    if (groups.empty() || groups.back().first != first) {
      groups.push_back({std::string(first), {}});
    }
    groups.back().names.push_back(&name);
  }
  return groups;
}

} // namespace

void Resolver::add_toolkit_namesakes(const std::string& dir)
{
  for (const auto& toolkit : m_context.toolkit_dirs) {
    if (toolkit == dir) {
      return;  // the toolkit's own folder given as -I: its files are the toolkit's
    }
  }
  // A name a toolkit header includes or probes (`#if _CCCL_HAS_INCLUDE(<version>)`) finds this
  // folder's file before the toolkit's, or where the toolkit has none: passed, whether predicted or not.
  for (const auto& name : *toolkit_include_names(m_context.toolkit_dirs)) {
    const std::string candidate = join_path(dir, name);
    if (m_index.count(candidate) == 0 && !has_dot_dot(name)) {
      if (listed_file(candidate)) {
        m_names.insert(name);
        add(name, candidate);
      } else {
        probe(candidate);
      }
    }
  }
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) {
    return;
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(listing)) {
    names.emplace_back(entry->d_name);
  }
  ::closedir(listing);
  for (const auto& name : names) {
    if (name == "." || name == "..") {
      continue;
    }
    for (const auto& toolkit : m_context.toolkit_dirs) {
      if (util::is_regular_file(toolkit + "/" + name) && util::is_regular_file(dir + "/" + name)) {
        // <name> from a toolkit header finds this file first (the -I folders come before the
        // toolkit's): NVRTC must find its copy, so it is passed whether or not it is predicted.
        m_names.insert(name);
        add(name, dir + "/" + name);
        break;
      }
      if (util::is_directory(toolkit + "/" + name) && util::is_directory(dir + "/" + name)) {
        // A vendored tree over the toolkit's (cub/, thrust/, cuda/…): any include below it that
        // only NVRTC follows would otherwise fall through to the toolkit's copy. Pass all of it.
        add_tree(dir, name);
        break;
      }
    }
  }
}

void Resolver::add_tree(const std::string& dir, const std::string& relative)
{
  const std::string folder = dir + "/" + relative;
  probe(folder + "/.", true);  // passed whole: a file appearing anywhere in it is passed too
  DIR* handle = ::opendir(folder.c_str());
  if (handle == nullptr) {
    return;
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(handle)) {
    names.emplace_back(entry->d_name);
  }
  ::closedir(handle);
  for (const auto& name : names) {
    if (name == "." || name == "..") {
      continue;
    }
    const std::string below = relative + "/" + name;
    if (util::is_directory(dir + "/" + below)) {
      add_tree(dir, below);
    } else if (util::is_regular_file(dir + "/" + below)) {
      m_names.insert(below);
      add(below, dir + "/" + below);
    }
  }
}

std::uint64_t closure_passes() noexcept
{
  return g_closure_passes.load(std::memory_order_relaxed);
}

void Resolver::check_include_name(const std::string& dir, const std::string& name)
{
  if (m_unfaithful.empty() && !name.empty() && name.front() == '/') {
    // NVRTC opens an absolute name itself, never the copy: what it reads (and what that file
    // includes from its own folder) would not be what kjit hashed.
    refuse(UncachedReason::disk_name, "the include name '" + name + "' is absolute (NVRTC opens it on disk itself)");
  }
  check_name(dir, name);
}

void Resolver::check_name(const std::string& dir, const std::string& name)
{
  if (!m_unfaithful.empty() || !has_dot_dot(name)) {
    return;
  }
  // From the private folder, a ".." that stops at "/" on disk would climb out of it.
  std::vector<std::string> dirs = m_context.include_dirs;
  dirs.push_back(dir.empty() ? m_context.cwd : dir);
  for (const auto& from : dirs) {
    if (walk_path(join_path(from, name)).climbed) {
      refuse(UncachedReason::disk_name, "the include name '" + name + "' climbs above / from " + from);
      return;
    }
  }
}

namespace {

// Whether `definition` uses __has_include (or __has_include_next) as a name, not as a call: an
// alias (`#define HI __has_include`) that a text then calls as `HI("x.h")`.
bool names_probe_without_call(const std::string& definition)
{
  for (std::size_t at = definition.find("__has_include"); at != std::string::npos;
       at = definition.find("__has_include", at + 1)) {
    std::size_t end = at + 13;
    if (definition.compare(end, 5, "_next") == 0) {
      end += 5;
    }
    if (end < definition.size() && (std::isalnum(static_cast<unsigned char>(definition[end])) != 0 || definition[end] == '_')) {
      continue;  // a longer name
    }
    while (end < definition.size() && std::isspace(static_cast<unsigned char>(definition[end])) != 0) {
      ++end;
    }
    if (end >= definition.size() || definition[end] != '(') {
      return true;
    }
  }
  return false;
}

} // namespace

void Resolver::check_probe_aliases()
{
  // The scanner follows __has_include( and the calls of wrappers that hand it a parameter; a
  // macro standing for the word itself (`#define HI __has_include`, then `HI("opt.h")`, or
  // `W(x) HI(x)`) makes probes it never sees: opt.h was left out of the private folder and the
  // probe was false where NVRTC's on disk is true (a review's reproducer).
  for (const auto* table : {&m_scan.values, &m_scan.functions}) {
    for (const auto& [name, definitions] : *table) {
      for (const auto& definition : definitions) {
        if (m_unfaithful.empty() && names_probe_without_call(definition)) {
          refuse(UncachedReason::probe, "the macro " + name + " stands for __has_include (" + definition +
                                          "): NVRTC probes files through it that kjit does not follow");
        }
      }
    }
  }
}

void Resolver::check_formed_names()
{
  if (m_computed_dirs.empty() || !m_unfaithful.empty()) {
    return;  // no #include that only NVRTC expands
  }
  // Whether a name may expand to nothing depends on every definition scanned: when a text scanned
  // since the last check let a name the texts read so far asked about end open, they are read again.
  const OpenEnds ends(m_scan, [this] { return &toolkit_macros(m_context.toolkit_dirs); });
  for (const auto& [name, was_empty] : m_formed_asked) {
    const bool call = name.size() > 2 && name.compare(name.size() - 2, 2, "()") == 0;
    if (!was_empty && (call ? ends.ask_call(name.substr(0, name.size() - 2)) : ends.ask(name))) {
      m_formed_source = false;
      m_formed_checked = 0;
      break;
    }
  }
  std::string where;
  if (!m_formed_source) {
    m_formed_source = true;
    where = may_form_absolute_name(m_program.source, ends) ? m_program.name : where;
    for (const auto& [name, content] : m_program.headers) {
      where = where.empty() && may_form_absolute_name(content, ends) ? name : where;
    }
    for (const auto& [name, value] : m_defines) {
      // A value is a macro argument and a #define body ("EMPTY /abs/x.h": after a name).
      const bool forms =
        may_form_absolute_name("(" + value, ends) || may_form_absolute_name("#define " + name + " " + value, ends);
      where = where.empty() && forms ? "-D" + name : where;
    }
  }
  for (; m_formed_checked < m_result.headers.size() && where.empty(); ++m_formed_checked) {
    const DiskHeader& header = m_result.headers[m_formed_checked];
    where = may_form_absolute_name(header.content, ends) ? header.path : where;
  }
  m_formed_asked = ends.asked();
  if (!where.empty()) {
    // NVRTC would open such a name on disk itself, a file kjit never hashed (nor sees).
    refuse(UncachedReason::formed_name, "an #include only NVRTC expands, and " + where + " may form an absolute name for it");
  }
}

void Resolver::close()
{
  // Every known name × every folder searched: NVRTC's own search over the private folder then
  // meets, for a known name, exactly the files nvcc meets on disk, whichever folder it starts
  // from (#include_next from any includer, pre-includes, __has_include, wrong predictions).
  if (m_seeded) {
    return;  // closed when it was recorded, and unchanged since
  }
  if (m_closed_at == m_changes) {
    return;  // closed, and nothing added since
  }
  for (bool grew = true; grew;) {
    if (!m_unfaithful.empty()) {
      // The program is compiled from the disk anyway; and a name climbing above "/" would meet the
      // same file under ever longer "/../../" paths from every folder it adds (endless).
      return;
    }
    grew = false;
    g_closure_passes.fetch_add(1, std::memory_order_relaxed);
    predict();
    check_formed_names();
    check_probe_aliases();
    if (!m_unfaithful.empty()) {
      return;
    }
    if (m_scan.wrappers.size() != m_wrappers_followed) {
      // A wrapper of __has_include defined in a file scanned after one that calls it: each text
      // that names a wrapper is scanned again. (Counted from the last such pass, not from this
      // pass's start: the prediction before close() learns most wrappers, and a header that
      // called one before its definition was scanned kept its probe unseen — a review's wrong
      // binary: the private folder, without the probed file, answered false.)
      m_wrappers_followed = m_scan.wrappers.size();
      const auto names_a_wrapper = [&](const std::string& text) {
        return std::any_of(m_scan.wrappers.begin(), m_scan.wrappers.end(),
                           [&](const std::string& wrapper) { return util::find_text(text, wrapper) != std::string::npos; });
      };
      if (names_a_wrapper(m_program.source)) {
        follow(m_program.source, m_main_path);
      }
      for (std::size_t i = 0; i < m_result.headers.size(); ++i) {
        const std::string path = m_result.headers[i].path;  // follow() may add headers
        if (names_a_wrapper(m_result.headers[i].content)) {
          follow(m_result.headers[i].content, path);
        }
      }
      predict();
      grew = m_scan.wrappers.size() != m_wrappers_followed;  // a wrapper of a wrapper: once more
    }
    for (const std::string& operand : m_operands) {
      // Every value the operand may have (conditionals are not evaluated): each must be a name.
      std::set<std::string> seen;
      std::vector<std::string> pending{operand};
      while (!pending.empty() && m_unfaithful.empty()) {
        const std::string macro = pending.back();
        pending.pop_back();
        const auto values = m_scan.values.find(macro);
        if (!seen.insert(macro).second) {
          continue;
        }
        if (values == m_scan.values.end()) {
          refuse(UncachedReason::probe, "__has_include(" + operand + "): " + macro + " is not defined in a file kjit reads");
          break;
        }
        for (const auto& value : values->second) {
          const bool quoted = value.size() >= 2 && value.front() == '"' && value.back() == '"';
          const bool angle = value.size() >= 2 && value.front() == '<' && value.back() == '>';
          std::size_t end = 0;
          while (end < value.size() && (std::isalnum(static_cast<unsigned char>(value[end])) || value[end] == '_')) {
            ++end;
          }
          if (quoted || angle) {
            const std::string name = value.substr(1, value.size() - 2);
            grew = m_names.insert(name).second || grew;
            check_include_name(m_context.source_dir, name);
          } else if (end == value.size() && end != 0) {
            pending.push_back(value);
          } else {
            refuse(UncachedReason::probe, "__has_include(" + operand + "): " + macro + " is defined as '" + value + "'");
            break;
          }
        }
      }
    }
    std::set<std::string> dirs(m_context.include_dirs.begin(), m_context.include_dirs.end());
    if (!m_context.source_dir.empty()) {
      dirs.insert(m_context.source_dir);
    }
    std::set<std::string> names = m_names;
    for (const auto& header : m_result.headers) {
      dirs.insert(dir_of(header.path));
    }
    // Each header's path below each folder of `dirs` it is in (its folders' few prefixes looked
    // up, not every folder compared: 1 691 headers × 200 folders for a vendored CCCL).
    for (const auto& header : m_result.headers) {
      for (std::size_t slash = header.path.find('/', 1); slash != std::string::npos;
           slash = header.path.find('/', slash + 1)) {
        if (dirs.count(header.path.substr(0, slash)) != 0) {
          names.insert(header.path.substr(slash + 1));
        }
      }
    }
    // Only pairs not tried before: a new folder with every name, a new name in every folder (the
    // new names found once: a second close() asked each of 3 000 names in each of 200 folders).
    std::set<std::string> new_names;
    for (const auto& name : names) {
      if (m_closed_names.count(name) == 0) {
        new_names.insert(name);
      }
    }
    // The names grouped by their first step (sorted names through one first step follow each
    // other): a folder without that entry answers the whole group at once (a vendored CCCL asks
    // ≈ 8 000 names in each of ≈ 110 folders, most through a first step the folder lacks).
    const std::vector<NameGroup> all_groups = grouped(names);
    const std::vector<NameGroup> new_groups = grouped(new_names);
    for (const auto& dir : dirs) {
      const bool new_dir = m_closed_dirs.insert(dir).second;
      if (!new_dir && new_names.empty()) {
        continue;
      }
      const std::set<std::string>& asked = new_dir ? names : new_names;
      const std::vector<NameGroup>& groups = new_dir ? all_groups : new_groups;
      // Most pairs are missing at their first step (a CCCL tree: thousands of names, hundreds of
      // folders): for those the folder's listing answers, and its stamp, taken by the first such
      // probe, watches every one of them (what probe() would record for each). Only for a folder
      // that a name of one step makes listed anyway: no folder is listed that was not before (a
      // string program's working folder is the user's, of any size).
      const bool listed_anyway = std::any_of(asked.begin(), asked.end(), [&](const std::string& name) {
        return !name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
               m_index.count(join_path(dir, name)) == 0;
      });
      const std::set<std::string>* entries = listed_anyway ? listing(dir) : nullptr;
      bool missing_probed = false;
      for (const NameGroup& group : groups) {
        if (entries != nullptr && group.first != "." && group.first != ".." && entries->count(group.first) == 0) {
          if (!missing_probed) {
            probe(join_path(dir, *group.names.front()));
            missing_probed = true;
          }
          if (const FileStamp* stamp = folder_stamp(dir); stamp != nullptr) {
            note_absent(watched(dir, *stamp, false), group.first);
          }
          continue;
        }
        for (const std::string* name : group.names) {
          const std::string candidate = join_path(dir, *name);
          if (m_index.count(candidate) != 0) {
            continue;
          }
          if (listed_file(candidate) && add(*name, candidate)) {
            grew = true;
          } else {
            probe(candidate);
          }
        }
      }
    }
    m_closed_names.insert(new_names.begin(), new_names.end());
  }
  if (m_unfaithful.empty()) {
    m_closed_at = m_changes;  // (what this pass added counted in it)
  }
}

bool Resolver::absence_watched(const std::string& path) const
{
  // As probe() watched it: the deepest existing folder, and the entry of it the path goes through.
  // From the folders of the result (a seeded resolution has no probe() of its own).
  const auto watched_dir = [&](const std::string& dir) -> const ProbedDir* {
    for (const ProbedDir& probed : m_result.dirs) {
      if (probed.path == dir) {
        return &probed;
      }
    }
    return nullptr;
  };
  std::string entry = path;
  for (std::string dir = dir_of(path); !dir.empty(); entry = dir, dir = dir_of(dir)) {
    if (const ProbedDir* probed = watched_dir(dir)) {
      return probed->whole || listed_absent(*probed, entry.substr(std::min(entry.size(), dir.size() + 1)));
    }
    const auto known = m_folders.find(dir);
    if ((known != m_folders.end() && known->second.exists) || dir == "/") {
      return false;  // a folder that exists and is not watched
    }
  }
  return false;
}

} // namespace kjit::deps
