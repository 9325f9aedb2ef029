// Include resolution with stat() probes; user headers read and hashed once each.
#include "deps/resolver.hpp"

#include "deps/toolkit_headers.hpp"
#include "deps/formed_names.hpp"
#include "options/option_table.hpp"
#include "util/file.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <sys/stat.h>

namespace kjit::deps {

namespace {

std::function<void(const std::string&)> g_read_hook;

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

bool Resolver::headers_name_program()
{
  for (; !m_headers_name_program && m_read_for_program < m_result.headers.size(); ++m_read_for_program) {
    m_headers_name_program = text_names_program(m_result.headers[m_read_for_program].content);
  }
  return m_headers_name_program;
}

bool Resolver::add(const std::string& name, const std::string& path, const std::string& includer, IncludeKind kind)
{
  ++m_changes;
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

bool Resolver::check_unchanged()
{
  const std::int64_t began = steady_now_ns();
  if (!unchanged()) {
    return false;
  }
  m_held.emplace(m_changes, began);
  return true;
}

bool Resolver::unchanged_since(std::int64_t since) const
{
  return (m_held && m_held->first == m_changes && m_held->second >= since) || unchanged();
}

std::int64_t Resolver::steady_now_ns()
{
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
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
  ++m_changes;
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
  ++m_changes;
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
