// Include resolution with stat() probes; user headers read and hashed once each.
#include "deps/resolver.hpp"

#include "util/file.hpp"

#include <kjit/error.hpp>

#include <ctime>
#include <sys/stat.h>

namespace kjit::deps {

namespace {

std::function<void(const std::string&)> g_read_hook;

bool is_file(const std::string& path)
{
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::int64_t coarse_now_ns()
{
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// The line `line` (1-based) of `text`, with continued lines joined.
std::string line_of(const std::string& text, int line)
{
  std::size_t at = 0;
  for (int i = 1; i < line && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    at = at == std::string::npos ? at : at + 1;
  }
  if (at == std::string::npos) {
    return {};
  }
  std::string out;
  for (; at < text.size() && text[at] != '\n'; ++at) {
    if (text[at] == '\\' && at + 1 < text.size() && text[at + 1] == '\n') {
      ++at;
      continue;
    }
    out += text[at];
  }
  return out;
}

} // namespace

void set_read_hook(std::function<void(const std::string& path)> hook)
{
  g_read_hook = std::move(hook);
}

FileStamp stamp_of(const std::string& path)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return {};
  }
  return {true, static_cast<std::int64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
          static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec,
          static_cast<std::uint64_t>(st.st_ino)};
}

Resolver::Resolver(const Program& program, const SearchContext& context)
  : m_program(program), m_context(context), m_start_ns(coarse_now_ns())
{
  const std::string base = context.source_dir.empty() ? context.cwd : context.source_dir;
  const auto slash = program.name.rfind('/');
  m_main_path = join_path(base, slash == std::string::npos ? program.name : program.name.substr(slash + 1));
  for (const auto& name : context.pre_includes) {
    // NVRTC looks for a pre-include in the working directory first, then in the -I folders.
    std::string found;
    for (const auto& candidate : user_candidates(context, name, IncludeKind::quoted, context.cwd)) {
      if (is_file(candidate)) {
        found = candidate;
        break;
      }
      probe(candidate);
    }
    m_pre_paths.push_back(found);
    if (!found.empty()) {
      add(name, found);
    }
  }
  for (const auto& dir : context.include_dirs) {
    probe(dir + "/.");
  }
  if (!context.source_dir.empty()) {
    probe(context.source_dir + "/.");
  }
}

void Resolver::probe(const std::string& candidate)
{
  const std::string dir = dir_of(candidate);
  if (m_probed.insert(dir).second) {
    m_result.dirs.push_back({dir, stamp_of(dir)});
  }
}

bool Resolver::add(const std::string& name, const std::string& path)
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
    if (!(after == before) || after.mtime_ns >= m_start_ns || after.ctime_ns >= m_start_ns) {
      m_result.recordable = false;
    }
    m_index[path] = m_result.headers.size();
    m_result.headers.push_back({name, path, util::sha256(*content), before, std::move(*content)});
    m_pending.push_back(path);
    probe(path);
    return true;
  }
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
  const auto found_in = m_found_in.find(includer);
  for (const auto& candidate :
       user_candidates(m_context, name, kind, includer_dir, found_in == m_found_in.end() ? "" : found_in->second)) {
    if (m_index.count(candidate) != 0) {
      continue;
    }
    if (is_file(candidate)) {
      for (const auto& dir : m_context.include_dirs) {
        if (join_path(dir, name) == candidate && m_found_in.count(candidate) == 0) {
          m_found_in[candidate] = dir;
        }
      }
      if (add(name, candidate)) {
        return candidate;
      }
    }
    probe(candidate);
  }
  return {};
}

void Resolver::follow(const std::string& text, const std::string& includer)
{
  for (const IncludeDirective& directive : scan_includes(text, defines_from_options(m_program.options))) {
    if (directive.computed) {
      continue;  // left to the compiler's answer
    }
    m_names.insert(directive.name);
    const IncludeKind kind = directive.next ? IncludeKind::next : directive.quoted ? IncludeKind::quoted : IncludeKind::angle;
    std::string includer_dir = dir_of(includer);
    if (includer == m_main_path && m_context.source_dir.empty()) {
      includer_dir.clear();
    }
    const auto found_in = m_found_in.find(includer);
    for (const auto& candidate : user_candidates(m_context, directive.name, kind, includer_dir,
                                                 found_in == m_found_in.end() ? "" : found_in->second)) {
      if (m_index.count(candidate) != 0) {
        break;
      }
      if (is_file(candidate)) {
        for (const auto& dir : m_context.include_dirs) {
          if (join_path(dir, directive.name) == candidate && m_found_in.count(candidate) == 0) {
            m_found_in[candidate] = dir;
          }
        }
        add(directive.name, candidate);
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
    follow(content, join_path(m_context.cwd, name));
  }
  while (!m_pending.empty()) {
    const std::string path = m_pending.back();
    m_pending.pop_back();
    follow(m_result.headers[m_index.at(path)].content, path);
  }
}

void Resolver::close()
{
  for (bool grew = true; grew;) {
    grew = false;
    predict();
    std::set<std::string> dirs(m_context.include_dirs.begin(), m_context.include_dirs.end());
    if (!m_context.source_dir.empty()) {
      dirs.insert(m_context.source_dir);
    }
    std::set<std::string> names = m_names;
    for (const auto& header : m_result.headers) {
      dirs.insert(dir_of(header.path));
    }
    for (const auto& header : m_result.headers) {
      for (const auto& dir : dirs) {
        if (header.path.compare(0, dir.size() + 1, dir + "/") == 0) {
          names.insert(header.path.substr(dir.size() + 1));
        }
      }
    }
    for (const auto& dir : dirs) {
      for (const auto& name : names) {
        if (name.empty() || name.front() == '/') {
          continue;
        }
        const std::string candidate = join_path(dir, name);
        if (m_index.count(candidate) != 0) {
          continue;
        }
        if (is_file(candidate) && add(name, candidate)) {
          grew = true;
        } else {
          probe(candidate);
        }
      }
    }
  }
}

// Exposed for the compile loop: which directive is at `line` of `text`.
IncludeKind directive_kind(const std::string& text, int line)
{
  const std::string directive = line_of(text, line);
  const auto at = directive.find("include");
  if (at == std::string::npos) {
    return IncludeKind::quoted;
  }
  if (directive.compare(at, 12, "include_next") == 0) {
    return IncludeKind::next;
  }
  const auto open = directive.find_first_not_of(" \t", at + 7);
  return open != std::string::npos && directive[open] == '<' ? IncludeKind::angle : IncludeKind::quoted;
}

} // namespace kjit::deps
