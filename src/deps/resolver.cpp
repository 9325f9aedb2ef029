// Include resolution with stat() probes; user headers read and hashed once each.
#include "deps/resolver.hpp"

#include "deps/toolkit_headers.hpp"
#include "deps/formed_names.hpp"
#include "options/option_table.hpp"
#include "util/file.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <ctime>
#include <dirent.h>
#include <sys/stat.h>

namespace kjit::deps {

namespace {

std::function<void(const std::string&)> g_read_hook;
std::atomic<std::uint64_t> g_listings{0};

// One file's identity: a hard link or a symlinked folder gives it another path, not another identity.
std::string identity_of(const FileStamp& stamp)
{
  return std::to_string(stamp.device) + " " + std::to_string(stamp.inode) + " " + std::to_string(stamp.size) + " " +
         std::to_string(stamp.mtime_ns) + " " + std::to_string(stamp.ctime_ns);
}

} // namespace

void Resolver::copies_named()
{
  if (m_unfaithful.empty()) {
    refuse(UncachedReason::names_file,
           "the binary names a file through a macro kjit does not read (such as a toolkit header's __FILE__)");
  }
}

void Resolver::compiled_from_disk(UncachedReason why, const std::string& reason)
{
  refuse(why, reason);
}

void Resolver::refuse(UncachedReason why, std::string reason)
{
  if (m_unfaithful.empty()) {
    m_unfaithful = std::move(reason);
    m_unfaithful_reason = why;
  }
}

std::uint64_t folder_listings() noexcept
{
  return g_listings.load(std::memory_order_relaxed);
}

void set_read_hook(std::function<void(const std::string& path)> hook)
{
  g_read_hook = std::move(hook);
}

Resolver::Resolver(const Program& program, const SearchContext& context)
  : m_program(program), m_context(context), m_start_ns(stamp_clock_ns()), m_defines(defines_from_options(program.options)),
    m_names_files(program_names_files(program))
{
  if (program_uses_time(program)) {
    time_used();
  }
  // A -D value, an in-memory header or a name expression may hold a piece or the ## (issue 38).
  for (const auto& option : program.options) {
    m_pasted.read(option);
  }
  for (const auto& [name, content] : program.headers) {
    m_pasted.read(content);
  }
  for (const auto& expression : program.name_expressions) {
    m_pasted.read(expression);
  }
  read_pastes(program.source);
  m_once_by_macro = any_program_text(program, text_may_define_once) ||
                    std::any_of(program.options.begin(), program.options.end(), text_may_define_once);
  if (std::string option = options::file_reading(program.options); !option.empty()) {
    refuse(UncachedReason::file_option, std::move(option));
  }
  for (const auto& expression : program.name_expressions) {
    if (m_unfaithful.empty() && expression.find("include") != std::string::npos) {
      // __has_include("x.h") in the file NVRTC makes of the name expressions: a probe of the
      // disk kjit does not follow (nor can place: that file is not in the private folder).
      refuse(UncachedReason::probe, "the name expression '" + expression +
                                      "' names include: NVRTC probes files from it that kjit does not follow");
    }
  }
  for (const auto& [name, value] : m_defines) {
    m_scan.values[name].insert(value);
    if (value.find("include") != std::string::npos && m_unfaithful.empty()) {
      // -DHAS=__has_include("x.h") probes files from an #if kjit never sees it in: not followed.
      refuse(UncachedReason::probe,
             "the -D value of " + name + " names include (" + value + "): NVRTC probes files kjit does not follow");
    }
  }
  m_main_path = main_path_of(program, context);
  for (const auto& name : context.pre_includes) {
    // NVRTC looks for a pre-include in the working directory first, then in the -I folders; an
    // in-memory header of that name comes before both (found: none, so NVRTC gets the name).
    std::string found;
    for (const auto& candidate : program.headers.count(name) != 0
                                   ? std::vector<std::string>{}
                                   : user_candidates(context, name, IncludeKind::quoted, context.cwd)) {
      if (util::is_regular_file(candidate)) {
        found = candidate;
        break;
      }
      probe(candidate);
    }
    m_pre_paths.push_back(found);
    m_names.insert(name);
    check_name(context.cwd, name);
    if (!found.empty()) {
      add(name, found, {}, IncludeKind::quoted);
    }
  }
  for (const auto& dir : context.include_dirs) {
    // Listed whole for names like the toolkit's, and searched for names only NVRTC forms.
    watch_whole(dir);
    probe(dir + "/.", true);
    add_toolkit_namesakes(dir);
  }
  if (!context.source_dir.empty()) {
    probe(context.source_dir + "/.");
  }
}

std::string Resolver::main_path_of(const Program& program, const SearchContext& context)
{
  const std::string base = context.source_dir.empty() ? context.cwd : context.source_dir;
  const auto slash = program.name.rfind('/');
  return join_path(base, slash == std::string::npos ? program.name : program.name.substr(slash + 1));
}

void Resolver::probe(const std::string& candidate, bool whole)
{
  // A missing folder is watched through its deepest existing ancestor: creating anything below
  // changes that folder's stamp.
  std::string dir = dir_of(candidate);
  std::string entry = candidate;  // the entry of `dir` the candidate's path goes through
  const FileStamp* stamp = folder_stamp(dir);
  while (dir.size() > 1 && stamp == nullptr) {
    entry = dir;
    dir = dir_of(dir);
    stamp = folder_stamp(dir);
  }
  const std::string name = entry.substr(std::min(entry.size(), dir.size() + 1));
  const bool one_step = name != "." && name != ".." && !name.empty() && name.find('/') == std::string::npos;
  bool absent = false;
  if (one_step && m_index.count(entry) == 0) {
    // The entry is there but was not taken: what can change without the folder's stamp is watched
    // too. A symbolic link whose target is missing (a generated header not made yet): its target's
    // folder, where the target appears; an entry that is no readable file (unreadable, a folder):
    // its own stamp (chmod changes its ctime): the folder's stamp alone misses a target or a
    // permission that appears later. Whether the entry is there is asked of the
    // folder's listing when there is one (the closure's), else by one lstat: no listing is made
    // for it (a string program's working folder may be large).
    const auto listed = m_listings.find(dir);
    struct stat st {};
    if (listed != m_listings.end() ? listed->second && listed->second->count(name) != 0
                                   : ::lstat(entry.c_str(), &st) == 0) {
      watch_entry(entry);
    } else {
      absent = true;
    }
  }
  // "." and ".." name no entry: a change of the folder matters through its names or not at all.
  ProbedDir& watch = watched(dir, stamp != nullptr ? *stamp : stamp_of(dir), whole || name == "..");
  if (absent) {
    note_absent(watch, name);
  }
}

bool listed_absent(const ProbedDir& dir, std::string_view name)
{
  const std::string_view list = dir.absent;
  for (std::size_t at = list.find(name); at != std::string_view::npos; at = list.find(name, at + 1)) {
    if ((at == 0 || list[at - 1] == '\n') && at + name.size() < list.size() && list[at + name.size()] == '\n') {
      return true;
    }
  }
  return false;
}

void Resolver::note_absent(ProbedDir& dir, const std::string& name)
{
  if (name.find('\n') != std::string::npos) {
    mark_whole(dir);  // not in a list of lines (no #include can name it)
    return;
  }
  // `dir` is one of m_result.dirs (watched() gave it): its names are kept by its place there.
  if (m_absent_shed) {
    if (!listed_absent(dir, name)) {
      dir.absent.append(name).push_back('\n');
    }
    return;
  }
  const auto index = static_cast<std::size_t>(&dir - m_result.dirs.data());
  if (m_absent.size() <= index) {
    m_absent.resize(m_result.dirs.size());
  }
  if (m_absent[index].insert(name).second) {
    dir.absent.append(name).push_back('\n');
  }
}

bool Resolver::headers_name_program()
{
  for (; !m_headers_name_program && m_read_for_program < m_result.headers.size(); ++m_read_for_program) {
    m_headers_name_program = text_names_program(m_result.headers[m_read_for_program].content);
  }
  return m_headers_name_program;
}

void Resolver::shed_absent_index()
{
  m_absent_shed = true;
  std::vector<std::unordered_set<std::string>>().swap(m_absent);
}

ProbedDir& Resolver::watched(const std::string& path, const FileStamp& stamp, bool whole)
{
  auto it = m_probed.find(path);
  if (it == m_probed.end()) {
    // "Too new", as for headers: a folder changed within the timestamp tick of the start of the
    // resolution, or after it, may change again within that tick (coarse timestamps: kernels
    // before 6.13, filesystems of whole seconds) with the same stamp, and a file appearing there
    // would go unseen. A manifest does not take its stamp: every check asks its names again
    // (ProbedDir::too_new; mark_whole()).
    m_result.dirs.push_back({path, stamp, false, {}, too_new(stamp, m_start_ns)});
    it = m_probed.emplace(path, m_result.dirs.size() - 1).first;
  }
  ProbedDir& dir = m_result.dirs[it->second];
  if (whole || m_whole_dirs.count(path) != 0) {
    mark_whole(dir);
  }
  return dir;
}

void Resolver::mark_whole(ProbedDir& dir)
{
  dir.whole = true;
  if (dir.too_new) {
    m_result.recordable = false;  // any change matters, and its stamp can't show one
  }
}

void Resolver::watch_whole(const std::string& dir)
{
  if (m_whole_dirs.insert(dir).second) {
    if (const auto it = m_probed.find(dir); it != m_probed.end()) {
      mark_whole(m_result.dirs[it->second]);
    }
  }
}

void Resolver::watch_entry(const std::string& entry)
{
  struct stat st {};
  if (::lstat(entry.c_str(), &st) != 0) {
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    if (const std::string real = walk_path(entry).real; real != entry && m_watched_links.insert(entry).second) {
      // The deepest existing folder on the link's way (its target's folder, once there), and the
      // target itself when it is there but no readable file.
      probe(real);
    }
    return;
  }
  if (m_probed.count(entry) == 0) {
    watched(entry, stamp_of(entry), true);  // its own stamp: any change matters
  }
}

const FileStamp* Resolver::folder_stamp(const std::string& dir)
{
  // One stat per folder and resolution, not a listing: a folder's names are read only where a
  // name is looked up in it (listed_file), not for every folder watched (a string program's
  // working folder, on every miss). The stamp is the one taken when the folder was first seen,
  // so a change after it is never missed.
  auto it = m_folders.find(dir);
  if (it == m_folders.end()) {
    it = m_folders.emplace(dir, folder_stamp_of(dir)).first;
  }
  return it->second.exists ? &it->second : nullptr;
}

const std::set<std::string>* Resolver::listing(const std::string& dir)
{
  auto it = m_listings.find(dir);
  if (it == m_listings.end()) {
    std::optional<std::set<std::string>> names;
    g_listings.fetch_add(1, std::memory_order_relaxed);
    if (DIR* handle = ::opendir(dir.c_str())) {
      names.emplace();
      while (const dirent* entry = ::readdir(handle)) {
        names->insert(entry->d_name);
      }
      ::closedir(handle);
    }
    it = m_listings.emplace(dir, std::move(names)).first;
  }
  return it->second ? &*it->second : nullptr;
}

bool Resolver::listed_file(const std::string& path)
{
  const auto slash = path.rfind('/');
  const std::set<std::string>* names = listing(slash == 0 ? "/" : path.substr(0, slash));
  return names != nullptr && names->count(path.substr(slash + 1)) != 0 && util::is_regular_file(path);
}

bool Resolver::add(const std::string& name, const std::string& path, const std::string& includer, IncludeKind kind)
{
  if (m_index.count(path) != 0) {
    return true;
  }
  for (int attempt = 0;; ++attempt) {
    const FileStamp before = stamp_of(path);
    struct stat st {};
    if (!before.exists || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return false;
    }
    std::error_code error;
    auto content = util::read_file(path, error);
    if (!content) {
      return false;
    }
    if (g_read_hook) {
      g_read_hook(path);
    }
    const FileStamp after = stamp_of(path);
    if (!(after == before) && attempt < 3) {
      continue;  // changed while read: read it again
    }
    if (!(after == before) || too_new(after, m_start_ns)) {
      m_result.recordable = false;
    }
    m_spelled[path] = spell(path, name, kind, includer);
    m_index[path] = m_result.headers.size();
    if (text_uses_time(*content)) {
      time_used();
    }
    if (!m_names_files && text_names_files(*content)) {
      name_files();
    }
    m_result.headers.push_back({name, path, util::sha256(*content), before, std::move(*content),
                                m_names_files ? m_spelled[path] : std::string()});
    read_pastes(m_result.headers.back().content);
    // One file by two names (a hard link, a symlinked folder: one inode) must be one copy where
    // NVRTC must see one file: #pragma once (by inode), or one path (a symlinked folder); such a
    // copy can carry one name only. A hard-linked file without it gets a copy per name.
    if (const auto [first, added] = m_real_files.emplace(identity_of(before), path); !added) {
      check_one_file(first->second, path);
    }
    if (!m_once_by_macro && text_may_define_once(m_result.headers.back().content)) {
      once_through_macros();
    }
    m_pending.push_back(path);
    probe(path);
    return true;
  }
}

void Resolver::check_one_file(const std::string& first, const std::string& path)
{
  if (m_two_names.empty() && spelled(first) != spelled(path) &&
      (m_once_by_macro || must_be_one_copy(m_result.headers[m_index.at(path)].content) ||
       walk_path(path).real == walk_path(first).real)) {
    m_two_names = path + " is " + first + " by another name (" + spelled(first) + ", " + spelled(path) + ")";
  }
}

void Resolver::once_through_macros()
{
  m_once_by_macro = true;
  for (const DiskHeader& header : m_result.headers) {
    if (const std::string& first = m_real_files.at(identity_of(header.stamp)); first != header.path) {
      check_one_file(first, header.path);
    }
  }
}

void Resolver::name_files()
{
  m_names_files = true;
  for (DiskHeader& header : m_result.headers) {
    header.spelled = spelled(header.path);
  }
}

void Resolver::read_pastes(const std::string& text)
{
  m_pasted.read(text);
  for (const auto& word : m_pasted.formed()) {
    if (!m_pasted_seen.insert(word).second) {
      continue;
    }
    if (word == "__TIME__" || word == "__TIMESTAMP__" || word == "__DATE__") {
      time_used();
    } else if (word == "__FILE__" || word == "__builtin_FILE") {
      if (!m_names_files) {
        name_files();
      }
    } else if (m_unfaithful.empty()) {
      refuse(word == "__BASE_FILE__" || word == "__INCLUDE_LEVEL__" ? UncachedReason::names_file : UncachedReason::probe,
             "a token paste (##) may form " + word + " from pieces the texts hold; kjit does not follow it");
    }
  }
}

void Resolver::time_used()
{
  m_result.recordable = false;  // no manifest leads to it: its key stays provisional, never looked up
  if (m_unfaithful.empty()) {
    refuse(UncachedReason::time, "__TIME__, __TIMESTAMP__ or __DATE__ puts the time of each compile into the binary");
  }
}

bool Resolver::unchanged() const
{
  for (const DiskHeader& header : m_result.headers) {
    if (!(stamp_of(header.path) == header.stamp)) {
      return false;
    }
  }
  return true;
}

std::string Resolver::spell(const std::string& candidate, const std::string& name, IncludeKind kind,
                            const std::string& includer) const
{
  if (name.empty() || name.front() == '/') {
    return name.empty() ? candidate : name;
  }
  // NVRTC keeps the folder's text up to its last '/' and appends the name as written.
  const auto prefix = [](const std::string& spelled_file) {
    const auto slash = spelled_file.rfind('/');
    return slash == std::string::npos ? std::string() : spelled_file.substr(0, slash + 1);
  };
  const auto spelled_file = [&](const std::string& path) -> std::string {
    return path == m_main_path ? m_program.name : spelled(path);
  };
  const auto from = [&](const std::string& path) {
    return (path != m_main_path || !m_context.source_dir.empty()) && join_path(dir_of(path), name) == candidate;
  };
  if (kind == IncludeKind::quoted && includer.empty() && join_path(m_context.cwd, name) == candidate) {
    return name;  // a pre-include found in the working directory
  }
  if (kind == IncludeKind::quoted && !includer.empty() && from(includer)) {
    return prefix(spelled_file(includer)) + name;
  }
  for (std::size_t i = 0; i < m_context.include_dirs.size() && i < m_context.include_spelled.size(); ++i) {
    if (join_path(m_context.include_dirs[i], name) == candidate) {
      const std::string& dir = m_context.include_spelled[i];
      return (dir.back() == '/' ? dir : dir + "/") + name;
    }
  }
  if (from(m_main_path)) {
    return prefix(m_program.name) + name;
  }
  for (const DiskHeader& header : m_result.headers) {
    if (from(header.path)) {
      return prefix(spelled(header.path)) + name;
    }
  }
  return candidate;
}

const std::string& Resolver::spelled(const std::string& path) const
{
  const auto it = m_spelled.find(path);
  return it == m_spelled.end() ? path : it->second;
}

const DiskHeader* Resolver::find(const std::string& path) const
{
  const auto it = m_index.find(path);
  return it == m_index.end() ? nullptr : &m_result.headers[it->second];
}

std::string Resolver::add_next(const std::string& name, IncludeKind kind, const std::string& includer)
{
  m_names.insert(name);
  const bool main = includer == m_main_path;
  std::string includer_dir = includer.empty() ? m_context.cwd : dir_of(includer);
  if (main && m_context.source_dir.empty()) {
    includer_dir.clear();
  }
  check_include_name(includer_dir, name);
  const auto found_in = m_found_in.find(includer);
  for (const auto& candidate :
       user_candidates(m_context, name, kind, includer_dir, found_in == m_found_in.end() ? "" : found_in->second)) {
    if (m_index.count(candidate) != 0) {
      continue;
    }
    if (util::is_regular_file(candidate)) {
      for (const auto& dir : m_context.include_dirs) {
        if (join_path(dir, name) == candidate && m_found_in.count(candidate) == 0) {
          m_found_in[candidate] = dir;
        }
      }
      if (add(name, candidate, includer, kind)) {
        return candidate;
      }
    }
    probe(candidate);
  }
  return {};
}

void Resolver::follow(const std::string& text, const std::string& includer)
{
  if (text.find("?\?=") != std::string::npos || text.find("?\?/") != std::string::npos) {
    // Before C++17 NVRTC reads them as '#' and a backslash: a directive or a line splice this scanner
    // does not see (an absolute #include among them).
    refuse(UncachedReason::formed_name, includer + " has a trigraph (?\?= or ?\?/), which NVRTC reads as # or \\ before "
                                                   "C++17: directives kjit does not see");
  }
  for (const IncludeDirective& directive : scan_includes(text, m_defines, &m_scan)) {
    if (directive.macro) {
      // Followed by the macro's last definition in this text; another one (another branch or
      // file, a -D) may be what NVRTC expands: the texts are read for absolute names as for any
      // computed include.
      const bool sourceless = includer == m_main_path && m_context.source_dir.empty();
      m_computed_dirs.insert(sourceless ? std::string() : dir_of(includer));
      if (!sourceless) {
        watch_whole(dir_of(includer));  // NVRTC may form any name there
      }
    }
    if (directive.computed) {
      if (directive.probe) {
        m_operands.insert(directive.name);  // expanded by close() with every value it may have
        continue;
      }
      const bool sourceless = includer == m_main_path && m_context.source_dir.empty();
      const std::string dir = dir_of(includer);
      m_computed_dirs.insert(sourceless ? std::string() : dir);  // "": the -I folders only
      if (!sourceless) {
        watch_whole(dir);
      }
      if (!dir.empty() && !sourceless && m_namesake_dirs.insert(dir).second) {
        // An #include left to the compiler's answer (the retry loop) misses only what NVRTC can't
        // open: a file here named like a toolkit header would be found in the toolkit instead of
        // here (as the -I folders' are, they are passed).
        add_toolkit_namesakes(dir);
      }
      continue;
    }
    m_names.insert(directive.name);
    const IncludeKind kind = directive.next ? IncludeKind::next : directive.quoted ? IncludeKind::quoted : IncludeKind::angle;
    if (kind == IncludeKind::quoted && m_memory_includers.count(includer) != 0 &&
        m_program.headers.count(directive.name) == 0) {
      // NVRTC looks for it next to the in-memory header, relative to the working directory, and
      // opens what it finds there itself (strace, NVRTC 13.0), never kjit's copy: an edit during
      // the compile would be built under the key of the bytes kjit read.
      const std::string beside = join_path(dir_of(includer), directive.name);
      // One that appears there later is seen by the closure, which predicts again.
      if (m_unfaithful.empty() && util::is_regular_file(beside)) {
        refuse(UncachedReason::disk_name, "an in-memory header includes \"" + directive.name +
                                            "\", which NVRTC opens next to it on disk (" + beside + ") itself");
      }
    }
    std::string includer_dir = dir_of(includer);
    if (includer == m_main_path && m_context.source_dir.empty()) {
      includer_dir.clear();
    }
    check_include_name(includer_dir, directive.name);
    const auto found_in = m_found_in.find(includer);
    for (const auto& candidate : user_candidates(m_context, directive.name, kind, includer_dir,
                                                 found_in == m_found_in.end() ? "" : found_in->second)) {
      if (m_index.count(candidate) != 0) {
        const std::string spelled = spell(candidate, directive.name, kind, includer);
        if (m_two_names.empty() && spelled != this->spelled(candidate)) {
          m_two_names = candidate + " is included as " + this->spelled(candidate) + " and as " + spelled;
        }
        break;
      }
      if (util::is_regular_file(candidate)) {
        for (const auto& dir : m_context.include_dirs) {
          if (join_path(dir, directive.name) == candidate && m_found_in.count(candidate) == 0) {
            m_found_in[candidate] = dir;
          }
        }
        add(directive.name, candidate, includer, kind);
        break;
      }
      probe(candidate);
    }
  }
}

void Resolver::predict()
{
  follow(m_program.source, m_main_path);
  for (const auto& [name, content] : m_program.headers) {
    const std::string at = join_path(m_context.cwd, name);
    m_memory_includers.insert(at);
    follow(content, at);
  }
  while (!m_pending.empty()) {
    const std::string path = m_pending.back();
    m_pending.pop_back();
    follow(m_result.headers[m_index.at(path)].content, path);
  }
}

} // namespace kjit::deps
