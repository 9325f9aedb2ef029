// Building the search context from a Program and listing where nvcc would look for a name.
#include "deps/search.hpp"

#include <kjit/error.hpp>

#include "util/text.hpp"

#include <algorithm>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::deps {

namespace {

std::string current_dir()
{
  char buffer[4096];
  return ::getcwd(buffer, sizeof buffer) != nullptr ? buffer : "/";
}

bool starts_with(const std::string& text, const char* prefix)
{
  return text.rfind(prefix, 0) == 0;
}

void check_include_dir(const std::string& dir, const std::string& as_written)
{
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    throw OptionError("include folder '" + as_written + "' does not exist");
  }
  if (!S_ISDIR(st.st_mode)) {
    throw OptionError("include folder '" + as_written + "' is not a folder");
  }
}

} // namespace

std::string join_path(const std::string& dir, const std::string& name)
{
  // Fast path: an absolute normalized folder and a plain relative name (no ".", "..", "//").
  if (!dir.empty() && dir.front() == '/' && dir.back() != '/' && !name.empty() && name.front() != '/' &&
      name.front() != '.' && name.find("/.") == std::string::npos && name.find("//") == std::string::npos &&
      name.back() != '/') {
    return dir == "/" ? "/" + name : dir + "/" + name;
  }
  const std::string raw = name.empty() || name.front() == '/' || dir.empty() ? name : dir + "/" + name;
  const bool absolute = !raw.empty() && raw.front() == '/';
  const auto real_dir = [](const std::vector<std::string>& so_far) {
    std::string path;
    for (const auto& part : so_far) {
      path += "/" + part;
    }
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= raw.size()) {
    auto slash = raw.find('/', at);
    if (slash == std::string::npos) {
      slash = raw.size();
    }
    const std::string part = raw.substr(at, slash - at);
    // ".." stays: after a symlinked folder it means the target's parent, not the text's (the
    // kernel, and NVRTC, resolve it through the file system; walk_path does too).
    if (part == ".." && absolute && !parts.empty() && parts.back() != ".." && real_dir(parts)) {
      // "d/.." after a folder that is no symlink is its parent, as the kernel has it: collapsed,
      // or the closure over every candidate piles up "../x/../x/..." once per folder level.
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    at = slash + 1;
  }
  std::string out = !raw.empty() && raw.front() == '/' ? "/" : "";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? "" : "/") + parts[i];
  }
  return out.empty() ? "." : out;
}

PathWalk walk_path(const std::string& path)
{
  PathWalk out;
  std::vector<std::string> pending;  // components still to follow, the next one last
  const auto push = [&pending](const std::string& text) {
    std::vector<std::string> parts;
    for (std::size_t at = 0; at <= text.size();) {
      const auto slash = std::min(text.find('/', at), text.size());
      parts.push_back(text.substr(at, slash - at));
      at = slash + 1;
    }
    pending.insert(pending.end(), parts.rbegin(), parts.rend());
  };
  push(path);
  std::string real;  // empty: "/"
  bool missing = false;
  int hops = 0;
  while (!pending.empty()) {
    const std::string part = std::move(pending.back());
    pending.pop_back();
    if (part.empty() || part == ".") {
      continue;
    }
    if (part == "..") {
      if (real.empty()) {
        out.climbed = true;  // the kernel stays at "/"; a copy of the tree elsewhere would not
      } else {
        real.erase(real.rfind('/'));
      }
      continue;
    }
    std::string next = real + "/" + part;
    struct stat st {};
    if (!missing && ::lstat(next.c_str(), &st) != 0) {
      missing = true;  // the rest is joined as text: nothing below exists
    } else if (!missing && S_ISLNK(st.st_mode)) {
      char buffer[4096];
      const ssize_t size = ::readlink(next.c_str(), buffer, sizeof buffer);
      if (size > 0 && ++hops <= 40) {
        std::string target(buffer, static_cast<std::size_t>(size));
        out.links.push_back(next);
        if (target.front() == '/') {
          real.clear();
        }
        push(target);
        continue;
      }
      missing = true;  // unreadable or a loop: the kernel fails here too
    }
    real = std::move(next);
  }
  out.real = real.empty() ? "/" : real;
  return out;
}

std::string RealPaths::real(const std::string& path)
{
  const auto slash = path.rfind('/');
  if (slash == std::string::npos || path.front() != '/') {
    return walk_path(path).real;
  }
  const std::string leaf = path.substr(slash + 1);
  if (leaf.empty() || leaf == "." || leaf == "..") {
    return walk_path(path).real;
  }
  const std::string folder = slash == 0 ? "/" : path.substr(0, slash);
  auto [it, fresh] = m_folders.try_emplace(folder);
  if (fresh) {
    it->second = walk_path(folder).real;
  }
  std::string next = (it->second == "/" ? "" : it->second) + "/" + leaf;
  struct stat st {};
  if (::lstat(next.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return walk_path(path).real;  // followed as walk_path follows it
  }
  return next;  // there, or missing (the rest joined as text, as walk_path joins it)
}

bool has_dot_dot(const std::string& path)
{
  return path == ".." || path.rfind("../", 0) == 0 || path.find("/../") != std::string::npos ||
         (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0);
}

std::string dir_of(const std::string& path)
{
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : (slash == 0 ? "/" : path.substr(0, slash));
}

std::string SearchContext::text() const
{
  std::string out = "source-dir: " + util::escape_line(source_dir) + "\n";
  for (const auto& dir : include_dirs) {
    out += "include-dir: " + util::escape_line(dir) + "\n";
  }
  for (const auto& name : pre_includes) {
    out += "pre-include: " + util::escape_line(name) + "\n";
  }
  if (!pre_includes.empty()) {
    out += "cwd: " + util::escape_line(cwd) + "\n";
  }
  for (const auto& dir : toolkit_dirs) {
    out += "toolkit-dir: " + util::escape_line(dir) + "\n";
  }
  // The names as written, which a manifest's "spelled" names come from: a manifest made by another
  // spelling of the same files would give a key that no compile here stores (missed every time).
  out += "named-as: " + util::escape_line(program_spelled) + "\n";
  for (const auto& dir : include_spelled) {
    out += "include-as: " + util::escape_line(dir) + "\n";
  }
  return out;
}

SearchContext search_context(const Program& program, const std::vector<std::string>& toolkit_dirs)
{
  if (program.source.find('\0') != std::string::npos) {
    throw Error("the source of " + program.name + " contains a NUL byte (NVRTC would silently compile only the text before it)");
  }
  SearchContext context;
  context.program_spelled = program.name;
  context.cwd = current_dir();
  context.toolkit_dirs = toolkit_dirs;
  bool source_include = true;
  const std::vector<std::string>& options = program.options;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    const auto value = [&](const char* what) {
      if (i + 1 >= options.size()) {
        throw OptionError("option '" + option + "' of " + program.name + " needs a " + what);
      }
      return options[++i];
    };
    std::string dir;
    bool is_dir = false;
    if (option == "-I" || option == "--include-path") {
      dir = value("folder");
      is_dir = true;
    } else if (starts_with(option, "--include-path=")) {
      dir = option.substr(15);
      is_dir = true;
    } else if (starts_with(option, "-I")) {
      // NVRTC reads "-I=dir" as the folder "dir" (but "-I =dir" and "--include-path==dir" as "=dir").
      dir = option.substr(option.size() > 2 && option[2] == '=' ? 3 : 2);
      is_dir = true;
    }
    if (is_dir) {
      if (dir.empty()) {
        throw OptionError("option '" + option + "' of " + program.name + " names no include folder");
      }
      check_include_dir(dir, dir);
      context.include_dirs.push_back(join_path(context.cwd, dir));
      context.include_spelled.push_back(dir);
      continue;
    }
    if (option == "-include" || option == "--pre-include") {
      context.pre_includes.push_back(value("header name"));
      continue;
    }
    if (starts_with(option, "-include=") || starts_with(option, "--pre-include=")) {
      const std::string name = option.substr(option.find('=') + 1);
      if (name.empty()) {
        throw OptionError("option '" + option + "' of " + program.name + " names no header");
      }
      context.pre_includes.push_back(name);
      continue;
    }
    std::string define;
    const bool takes_value = option == "-D" || option == "--define-macro" || option == "-U" || option == "--undefine-macro";
    if (takes_value) {
      define = value("macro");
    } else if (starts_with(option, "--define-macro=")) {
      define = option.substr(15);
    } else if (starts_with(option, "-D")) {
      define = option.substr(2);
    } else {
      define = "x";
    }
    if (define.empty() || define.front() == '=') {
      throw OptionError("option " + std::string(option.rfind("-U", 0) == 0 || option.rfind("--undef", 0) == 0 ? "-U" : "-D") +
                        " of " + program.name + " names no macro: '" + option + "'");
    }
    if (option == "--no-source-include" || option == "-no-source-include") {
      source_include = false;
    }
    context.nvrtc_options.push_back(option);
    if (takes_value) {
      context.nvrtc_options.push_back(options[i]);
    }
  }
  if (source_include) {
    context.source_dir = dir_of(join_path(context.cwd, program.name));
  }
  return context;
}

std::vector<std::string> user_candidates(const SearchContext& context, const std::string& name, IncludeKind kind,
                                         const std::string& includer_dir, const std::string& found_in)
{
  std::vector<std::string> out;
  if (name.empty()) {
    return out;
  }
  if (name.front() == '/') {
    out.push_back(join_path("", name));
    return out;
  }
  if (kind == IncludeKind::quoted && !includer_dir.empty()) {
    out.push_back(join_path(includer_dir, name));
  }
  bool after = kind != IncludeKind::next || found_in.empty();
  if (!after) {
    bool known = false;
    for (const auto& dir : context.include_dirs) {
      known = known || dir == found_in;
    }
    after = !known;
  }
  for (const auto& dir : context.include_dirs) {
    if (after) {
      out.push_back(join_path(dir, name));
    } else if (dir == found_in) {
      after = true;
    }
  }
  return out;
}

} // namespace kjit::deps
