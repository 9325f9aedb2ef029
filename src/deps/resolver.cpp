// Include resolution with stat() probes; disk headers are read and hashed once each.
#include "deps/resolver.hpp"

#include "cache/key.hpp"
#include "deps/include_scan.hpp"
#include "util/file.hpp"

#include <kjit/error.hpp>

#include <deque>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::deps {

namespace {

std::string join(const std::string& dir, const std::string& name)
{
  if (name.empty() || name.front() == '/') {
    return name;
  }
  std::string path = dir.empty() ? name : (dir.back() == '/' ? dir + name : dir + "/" + name);
  for (std::size_t at; (at = path.find("/./")) != std::string::npos;) {
    path.erase(at, 2);
  }
  for (std::size_t at; (at = path.find("//")) != std::string::npos;) {
    path.erase(at, 1);
  }
  return path;
}

std::string dirname(const std::string& path)
{
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : (slash == 0 ? "/" : path.substr(0, slash));
}

std::string cwd()
{
  char buffer[4096];
  return ::getcwd(buffer, sizeof buffer) != nullptr ? buffer : ".";
}

struct Includer {
  std::string display;  // for error messages
  std::string dir;      // folder for "…" includes
  const std::string* text;
  std::string owned_text;
};

class Resolver {
public:
  Resolver(const Program& program, const Arch& arch, const std::vector<std::string>& toolkit_dirs)
    : m_program(program), m_arch(arch), m_toolkit_dirs(toolkit_dirs),
      m_defines(defines_from_options(cache::normalize_options(program.options)))
  {
    for (const auto& option : cache::normalize_options(program.options)) {
      if (option.rfind("-I", 0) == 0) {
        m_include_dirs.push_back(option.substr(2));
      }
    }
  }

  Resolution run()
  {
    const std::string here = cwd();
    m_queue.push_back({m_program.name, dirname(join(here, m_program.name)), &m_program.source, {}});
    while (!m_queue.empty()) {
      Includer includer = std::move(m_queue.front());
      m_queue.pop_front();
      const std::string& text = includer.text != nullptr ? *includer.text : includer.owned_text;
      for (const IncludeDirective& directive : scan_includes(text, m_defines)) {
        resolve(directive, includer, here);
      }
    }
    return std::move(m_result);
  }

private:
  void probe_failed(const std::string& candidate)
  {
    const std::string dir = dirname(candidate);
    if (m_probed.insert(dir).second) {
      m_result.dirs.push_back({dir, stamp_of(dir)});
    }
  }

  bool is_file(const std::string& path)
  {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }

  void resolve(const IncludeDirective& directive, const Includer& includer, const std::string& here)
  {
    const std::string& name = directive.name;
    if (const auto memory = m_program.headers.find(name); memory != m_program.headers.end()) {
      if (m_memory_seen.insert(name).second) {
        m_queue.push_back({name, dirname(join(here, name)), &memory->second, {}});
      }
      return;
    }
    std::vector<std::string> user_candidates;
    if (name.front() == '/') {
      user_candidates.push_back(name);
    } else {
      if (directive.quoted) {
        user_candidates.push_back(join(includer.dir, name));
      }
      for (const auto& dir : m_include_dirs) {
        user_candidates.push_back(join(dir, name));
      }
    }
    for (const auto& candidate : user_candidates) {
      if (is_file(candidate)) {
        found_on_disk(name, candidate, includer);
        return;
      }
      probe_failed(candidate);
    }
    for (const auto& dir : m_toolkit_dirs) {
      if (name.front() != '/' && is_file(join(dir, name))) {
        return;  // a toolkit header: identified by the toolchain fingerprint
      }
    }
    if (!directive.conditional) {
      std::string searched;
      for (const auto& candidate : user_candidates) {
        searched += "\n  " + candidate;
      }
      for (const auto& dir : m_toolkit_dirs) {
        searched += "\n  " + join(dir, name);
      }
      throw CompileError(m_program.name, m_arch.str(),
                         includer.display + "(" + std::to_string(directive.line) + "): cannot find include file \"" +
                           name + "\" (included from " + includer.display + "); searched:" + searched,
                         m_program.options);
    }
  }

  void found_on_disk(const std::string& name, const std::string& path, const Includer& includer)
  {
    if (!m_paths_seen.insert(path).second) {
      return;
    }
    std::error_code error;
    auto content = util::read_file(path, error);
    if (!content) {
      throw CompileError(m_program.name, m_arch.str(),
                         "cannot read include file " + path + " (included from " + includer.display +
                           "): " + error.message(),
                         m_program.options);
    }
    DiskHeader header{name, path, util::sha256(*content), stamp_of(path), std::move(*content)};
    m_result.headers.push_back(std::move(header));
    m_queue.push_back({path, dirname(path), nullptr, m_result.headers.back().content});
  }

  const Program& m_program;
  const Arch& m_arch;
  const std::vector<std::string>& m_toolkit_dirs;
  std::map<std::string, std::string> m_defines;
  std::vector<std::string> m_include_dirs;
  std::deque<Includer> m_queue;
  std::set<std::string> m_memory_seen;
  std::set<std::string> m_paths_seen;
  std::set<std::string> m_probed;
  Resolution m_result;
};

} // namespace

FileStamp stamp_of(const std::string& path)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return {};
  }
  return {true, static_cast<std::int64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
          static_cast<std::uint64_t>(st.st_ino)};
}

Resolution resolve_includes(const Program& program, const Arch& arch, const std::vector<std::string>& toolkit_dirs)
{
  return Resolver(program, arch, toolkit_dirs).run();
}

} // namespace kjit::deps
