// program.txt and options.txt: stable, documented texts (docs/cache-format.md) hashed into the key.
#include "cache/key.hpp"

#include "rtc/compile_options.hpp"
#include "store/record.hpp"

#include <unistd.h>

namespace kjit::cache {

namespace {

std::string absolute_dir(const std::string& dir)
{
  if (dir.empty() || dir.front() == '/') {
    return dir;
  }
  char buffer[4096];
  return ::getcwd(buffer, sizeof buffer) != nullptr ? std::string(buffer) + "/" + dir : dir;
}

bool starts_with(const std::string& text, const char* prefix)
{
  return text.rfind(prefix, 0) == 0;
}

} // namespace

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
    } else {
      out.push_back(option);
    }
  }
  return out;
}

std::string escape_line(const std::string& value)
{
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else {
      out += ch;
    }
  }
  return out;
}

KeyTexts make_key(const Program& program, const Arch& arch, const KeyContext& context,
                  const std::vector<deps::DiskHeader>& includes)
{
  KeyTexts key;
  std::string& p = key.program_txt;
  p.reserve(program.source.size() + 256 + 80 * program.headers.size());
  p += "kjit-program 1\n";
  p += "name: " + escape_line(program.name) + "\n";
  for (const auto& [name, content] : program.headers) {  // std::map: sorted by name
    p += "header: " + util::to_hex(util::sha256(content)) + " " + escape_line(name) + "\n";
  }
  for (const auto& include : includes) {
    p += "include: " + util::to_hex(include.hash) + " " + escape_line(include.name) + "\t" + escape_line(include.path) + "\n";
  }
  for (const auto& expression : program.name_expressions) {
    p += "name-expression: " + escape_line(expression) + "\n";
  }
  p += "source-bytes: " + std::to_string(program.source.size()) + "\n";
  p += "source:\n";
  p += program.source;
  p += "\n";

  std::string& o = key.options_txt;
  o += "kjit-options 1\n";
  o += "arch: " + arch.str() + "\n";
  o += "cubin-path: " + std::string(rtc::cubin_path_name(rtc::cubin_path(program, arch))) + "\n";
  for (const auto& option : normalize_options(program.options)) {
    o += "option: " + escape_line(option) + "\n";
  }
  for (const auto& dir : context.toolkit_include_dirs) {
    o += "toolkit-include: " + escape_line(dir) + "\n";
  }
  if (!context.toolkit_headers.empty()) {
    o += "toolkit-headers: " + context.toolkit_headers + "\n";
  }
  o += "nvrtc: " + context.nvrtc_identity + "\n";
  o += "nvjitlink: " + context.nvjitlink_identity + "\n";
  o += "record-format: " + std::to_string(store::k_record_format) + "\n";  // in every key

  util::Sha256Hasher hasher;
  key.digest = hasher.update(p).update(o).finish();
  return key;
}

} // namespace kjit::cache
