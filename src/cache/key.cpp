// program.txt and options.txt: stable, documented texts (docs/cache-format.md) hashed into the key.
#include "cache/key.hpp"

#include "cache/direct_index.hpp"
#include "deps/search.hpp"
#include "options/option_table.hpp"
#include "rtc/compile_options.hpp"
#include "store/record.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace kjit::cache {

namespace {

std::atomic<std::uint64_t> g_keys_made{0};

std::string current_dir()
{
  char buffer[4096];
  return ::getcwd(buffer, sizeof buffer) != nullptr ? buffer : "/";
}

// The working directory as NVRTC names it in a binary (-lineinfo's .file, -G's compile directory;
// measured, NVRTC 13.0, as gcc's getpwd): $PWD as it is when it is absolute and names this folder
// (a shell's cd through a symlink leaves the link's path there), else getcwd().
std::string named_dir()
{
  const char* pwd = std::getenv("PWD");
  struct stat here {};
  struct stat there {};
  if (pwd != nullptr && pwd[0] == '/' && ::stat(pwd, &there) == 0 && ::stat(".", &here) == 0 &&
      here.st_dev == there.st_dev && here.st_ino == there.st_ino) {
    return pwd;
  }
  return current_dir();
}

// Absolute and normalized, as deps::search_context makes the folders it searches.
std::string absolute_dir(const std::string& dir)
{
  return dir.empty() ? dir : deps::join_path(dir.front() == '/' ? std::string() : current_dir(), dir);
}

bool starts_with(const std::string& text, const char* prefix)
{
  return text.rfind(prefix, 0) == 0;
}

// The part of `path` below `dir` ("" when it is not below it).
std::string below(const std::string& dir, const std::string& path)
{
  if (dir.empty() || path.size() <= dir.size() || path.compare(0, dir.size(), dir) != 0) {
    return {};
  }
  if (dir == "/") {
    return path.substr(1);
  }
  return path[dir.size()] == '/' ? path.substr(dir.size() + 1) : std::string();
}

std::vector<std::string> components(const std::string& path)
{
  std::vector<std::string> out;
  for (std::size_t at = 0; at < path.size();) {
    const auto slash = std::min(path.find('/', at), path.size());
    if (slash > at) {
      out.push_back(path.substr(at, slash - at));
    }
    at = slash + 1;
  }
  return out;
}

// The last path component of a program name: a file's folder is not part of its identity.
std::string base_name(const std::string& name)
{
  const auto slash = name.find_last_of('/');
  return slash == std::string::npos || slash + 1 == name.size() ? name : name.substr(slash + 1);
}

KeyRoots roots_of(const std::string& name, const std::vector<std::string>& normalized)
{
  KeyRoots roots;
  bool source_include = true;
  for (const auto& option : normalized) {
    if (starts_with(option, "-I")) {
      roots.include_dirs.push_back(option.substr(2));
    }
    source_include = source_include && option != "--no-source-include" && option != "-no-source-include";
  }
  if (source_include) {
    roots.source_dir = deps::dir_of(deps::join_path(current_dir(), name));
  }
  return roots;
}

// An option as a key names it: -I folders by their place in the -I list, absolute pre-include
// paths by portable_path.
std::string portable_option(const KeyRoots& roots, const std::string& option, std::size_t& include_index)
{
  if (starts_with(option, "-I")) {
    return "-I{I" + std::to_string(++include_index) + "}";
  }
  for (const char* prefix : {"--pre-include=", "-include="}) {
    const std::size_t size = std::char_traits<char>::length(prefix);
    if (starts_with(option, prefix) && option.size() > size && option[size] == '/') {
      return prefix + portable_path(roots, deps::join_path("", option.substr(size)));
    }
  }
  return option;
}

} // namespace

struct ToolkitHeaders::State {
  std::once_flag once;
  std::function<std::string()> find;
  std::string value;
};

ToolkitHeaders::ToolkitHeaders(std::string known) : m_state(std::make_shared<State>())
{
  std::call_once(m_state->once, [&] { m_state->value = std::move(known); });
}

ToolkitHeaders::ToolkitHeaders(std::function<std::string()> find) : m_state(std::make_shared<State>())
{
  m_state->find = std::move(find);
}

const std::string& ToolkitHeaders::value() const
{
  static const std::string none;
  if (!m_state) {
    return none;
  }
  std::call_once(m_state->once, [this] { m_state->value = m_state->find(); });
  return m_state->value;
}

std::uint64_t keys_made() noexcept
{
  return g_keys_made.load(std::memory_order_relaxed);
}

std::vector<std::string> normalize_options(const std::vector<std::string>& options)
{
  std::vector<std::string> out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    const bool has_next = i + 1 < options.size();
    if ((option == "-I" || option == "--include-path") && has_next) {
      out.push_back("-I" + absolute_dir(options[++i]));
    } else if (starts_with(option, "--include-path=")) {
      out.push_back("-I" + absolute_dir(option.substr(15)));
    } else if (starts_with(option, "-I")) {
      out.push_back("-I" + absolute_dir(option.substr(2)));
    } else if ((option == "-D" || option == "--define-macro") && has_next) {
      out.push_back("-D" + options[++i]);
    } else if (starts_with(option, "--define-macro=")) {
      out.push_back("-D" + option.substr(15));
    } else if ((option == "-U" || option == "--undefine-macro") && has_next) {
      out.push_back("-U" + options[++i]);
    } else if (starts_with(option, "--undefine-macro=")) {
      out.push_back("-U" + option.substr(17));
    } else if (starts_with(option, "-std=")) {
      // One option to NVRTC (the same binaries, -G too); --std= is CompileOptions::render()'s.
      out.push_back("-" + option);
    } else if (option == "-Xnvvm" && has_next) {
      // Its value goes to NVVM as it is, never read as an NVRTC option: NVVM takes "-w" but
      // refuses "--disable-warnings", takes "--device-c" but refuses "-dc" (NVRTC 13.0), so a
      // long name given to it would be another program's key.
      out.push_back(option);
      out.push_back(options[++i]);
    } else if (const std::string joined = options::joined_prefix(option); !joined.empty() && has_next) {
      out.push_back(joined + options[++i]);  // "-Xptxas" "-v" as --ptxas-options=-v
    } else {
      out.push_back(options::keyed_name(option));  // one key for both names (the same binaries)
    }
  }
  return out;
}

KeyRoots key_roots(const Program& program)
{
  return roots_of(program.name, normalize_options(program.options));
}

std::string portable_path(const KeyRoots& roots, const std::string& path)
{
  for (std::size_t i = 0; i < roots.include_dirs.size(); ++i) {
    if (const std::string rest = below(roots.include_dirs[i], path); !rest.empty()) {
      return "{I" + std::to_string(i + 1) + "}/" + rest;
    }
  }
  if (roots.source_dir.empty() || path.empty() || path.front() != '/') {
    return path;
  }
  if (const std::string rest = below(roots.source_dir, path); !rest.empty()) {
    return "{src}/" + rest;
  }
  const std::vector<std::string> from = components(roots.source_dir);
  const std::vector<std::string> to = components(path);
  std::size_t common = 0;
  while (common < from.size() && common < to.size() && from[common] == to[common]) {
    ++common;
  }
  std::string out = "{src}";
  for (std::size_t i = common; i < from.size(); ++i) {
    out += "/..";
  }
  for (std::size_t i = common; i < to.size(); ++i) {
    out += "/" + to[i];
  }
  return out;
}

std::string local_places(const KeyRoots& roots, std::string text)
{
  const auto replace = [&text](const std::string& token, const std::string& folder) {
    for (auto at = text.find(token); !folder.empty() && at != std::string::npos; at = text.find(token, at + folder.size())) {
      text.replace(at, token.size(), folder);
    }
  };
  for (std::size_t i = roots.include_dirs.size(); i > 0; --i) {  // {I12} before {I1}
    replace("{I" + std::to_string(i) + "}", roots.include_dirs[i - 1]);
  }
  replace("{src}", roots.source_dir);
  return text;
}

std::vector<std::string> absolute_include_options(const std::vector<std::string>& options)
{
  std::vector<std::string> out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    if ((option == "-I" || option == "--include-path") && i + 1 < options.size()) {
      out.push_back(option);
      out.push_back(absolute_dir(options[++i]));
    } else if (starts_with(option, "--include-path=")) {
      out.push_back("--include-path=" + absolute_dir(option.substr(15)));
    } else if (starts_with(option, "-I") && option.size() > 2) {
      out.push_back("-I" + absolute_dir(option.substr(2)));
    } else {
      out.push_back(option);
    }
  }
  return out;
}

util::Sha256 program_digest(const Program& program)
{
  util::Sha256Hasher hasher;
  const auto field = [&](std::string_view text) { hasher.update(std::to_string(text.size())).update(":").update(text); };
  field("kjit program digest 1");
  field(base_name(program.name));
  const std::vector<std::string> options = normalize_options(program.options);
  const KeyRoots roots = roots_of(program.name, options);
  std::size_t include_index = 0;
  for (const auto& option : options) {
    field("option");
    field(portable_option(roots, option, include_index));
  }
  for (const auto& [name, content] : program.headers) {
    field("header");
    field(name);
    field(content);
  }
  for (const auto& expression : program.name_expressions) {
    field("name-expression");
    field(expression);
  }
  field("source");
  field(program.source);
  return hasher.finish();
}

KeyTexts make_key_texts(const Program& program, const Arch& arch, const KeyContext& context,
                  const std::vector<deps::DiskHeader>& includes)
{
  g_keys_made.fetch_add(1, std::memory_order_relaxed);
  KeyTexts key;
  std::string& p = key.program_txt;
  p.reserve(program.source.size() + 256 + 80 * program.headers.size());
  p += "kjit-program 1\n";
  const std::vector<std::string> options = normalize_options(program.options);
  const KeyRoots roots = roots_of(program.name, options);
  p += "name: " + util::escape_line(base_name(program.name)) + "\n";
  for (const auto& [name, content] : program.headers) {  // std::map: sorted by name
    p += "header: " + util::to_hex(util::sha256(content)) + " " + util::escape_line(name) + "\n";
  }
  // One file by two names (a hard link, a symlink) is one file to #pragma once, a copy of it is
  // two: the line of the second name says which earlier place it is (the identity the private
  // folder links by, include_compile.cpp), so the two programs get different keys.
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t, std::int64_t>, std::string> first_place;
  for (const auto& include : includes) {
    const std::string place = portable_path(roots, include.path);
    p += "include: " + util::to_hex(include.hash) + " " + util::escape_line(include.name) + "\t" + util::escape_line(place);
    if (include.stamp.exists && include.stamp.inode != 0) {
      const auto identity = std::make_tuple(include.stamp.device, include.stamp.inode, include.stamp.size,
                                            include.stamp.mtime_ns, include.stamp.ctime_ns);
      if (const auto [first, added] = first_place.emplace(identity, place); !added) {
        p += "\tsame file as " + util::escape_line(first->second);
      }
    }
    p += "\n";
  }
  // A binary that names files (-lineinfo, -G, __FILE__, assert) holds each file by the name NVRTC
  // gives it, the program's name as given and, for -lineinfo and -G, the working directory: then
  // they are part of the key. Other keys leave them out (portable: docs/cache-format.md).
  bool names_files = deps::program_names_files(program);
  for (const auto& include : includes) {
    names_files = names_files || !include.spelled.empty();
  }
  if (names_files) {
    p += "named-as: " + util::escape_line(program.name) + "\n";
    if (deps::options_name_files(program.options)) {
      p += "named-from: " + util::escape_line(named_dir()) + "\n";
      // -lineinfo's .file lines and -G's DWARF name toolkit headers by where they are here (a
      // link to the toolkit is another name), when the program may read one (as for the
      // toolkit-headers line below). Other keys leave the root out; a binary that names it anyway
      // is not stored (include_compile.cpp, toolkit_named()).
      for (const auto& dir : direct_eligible(program) ? std::vector<std::string>{} : context.toolkit_include_dirs) {
        p += "named-toolkit: " + util::escape_line(dir) + "\n";
      }
    }
    for (const auto& option : program.options) {
      p += "named-option: " + util::escape_line(option) + "\n";
    }
    for (const auto& include : includes) {
      p += "named-include: " + util::escape_line(include.spelled) + "\t" + util::escape_line(portable_path(roots, include.path)) + "\n";
    }
  }
  for (const auto& expression : program.name_expressions) {
    p += "name-expression: " + util::escape_line(expression) + "\n";
  }
  p += "source-bytes: " + std::to_string(program.source.size()) + "\n";
  p += "source:\n";
  p += program.source;
  p += "\n";

  std::string& o = key.options_txt;
  o += "kjit-options 1\n";
  o += "arch: " + arch.str() + "\n";
  o += "cubin-path: " + std::string(rtc::cubin_path_name(rtc::cubin_path(program, arch))) + "\n";
  std::size_t include_index = 0;
  for (const auto& option : options) {
    o += "option: " + util::escape_line(portable_option(roots, option, include_index)) + "\n";
  }
  for (const auto& dir : context.toolkit_include_names) {
    o += "toolkit-include: " + util::escape_line(dir) + "\n";
  }
  // A program that names no disk header (no "include" anywhere, no -I, no pre-include) reads no
  // toolkit header: NVRTC 13.0 opens nothing under the toolkit's include folders for it (strace),
  // so its key does not depend on them (docs/cache-format.md).
  if (!direct_eligible(program)) {
    if (const std::string& fingerprint = context.toolkit_headers.value(); !fingerprint.empty()) {
      o += "toolkit-headers: " + fingerprint + "\n";
    }
  }
  // NVRTC reads NV_NVVM_VERSION itself (another NVVM: other PTX and cubin). Only when set, so
  // every other key is as before.
  for (std::size_t at = 0, end; at < context.compiler_environment.size(); at = end + 1) {
    end = context.compiler_environment.find('\n', at);
    end = end == std::string::npos ? context.compiler_environment.size() : end;
    o += "nvrtc-environment: " + util::escape_line(context.compiler_environment.substr(at, end - at)) + "\n";
  }
  o += "nvrtc: " + context.nvrtc_identity + "\n";
  o += "nvjitlink: " + context.nvjitlink_identity + "\n";
  o += "record-format: " + std::to_string(store::k_record_format) + "\n";  // in every key

  util::Sha256Hasher hasher;
  key.entry_key = hasher.update(p).update(o).finish();
  return key;
}

} // namespace kjit::cache
