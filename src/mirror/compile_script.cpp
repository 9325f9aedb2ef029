// module/compile.sh: the nvcc commands that reproduce an entry, for people who have nvcc.
#include "mirror/mirror.hpp"

#include <kjit/arch.hpp>

#include <vector>

namespace kjit::mirror {

namespace {

std::string shell_quote(const std::string& word)
{
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./:,") ==
                         std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char ch : word) {
    out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  }
  return out + "'";
}

// The -I folders the key names (options.txt's "option: -I…" lines, made absolute), in order.
std::vector<std::string> key_include_dirs(const std::string& options_txt)
{
  std::vector<std::string> dirs;
  const std::string marker = "\noption: -I";
  for (auto at = options_txt.find(marker); at != std::string::npos; at = options_txt.find(marker, at)) {
    at += marker.size();
    dirs.push_back(options_txt.substr(at, options_txt.find('\n', at) - at));
  }
  return dirs;
}

// The steps of the entry's compile path (docs/compile-paths.md).
std::string how_kjit_compiled(const std::string& cubin_path)
{
  if (cubin_path == "nvrtc") {
    return "with NVRTC: PTX and a whole-program cubin from one compile";
  }
  if (cubin_path == "nvjitlink-lto") {
    return "with NVRTC -dlto (LTO IR), then nvJitLink -lto (the cubin)";
  }
  if (cubin_path == "none") {
    return "with NVRTC: PTX only (the driver compiles it when the module is loaded)";
  }
  return "(compile path " + cubin_path + ")";
}

} // namespace

std::string compile_script(const store::Entry& entry)
{
  // The script runs in its own folder: a relative -I becomes the absolute folder of the key.
  const std::vector<std::string> absolute_dirs = key_include_dirs(entry.options_txt);
  std::size_t include_index = 0;
  std::string options;
  for (std::size_t i = 0; i < entry.options.size(); ++i) {
    const std::string& option = entry.options[i];
    if (option.rfind("-arch=", 0) == 0) {
      continue;  // nvcc gets -arch from the lines below
    }
    std::string dir;
    bool include = true;
    if ((option == "-I" || option == "--include-path") && i + 1 < entry.options.size()) {
      dir = entry.options[++i];
    } else if (option.rfind("--include-path=", 0) == 0) {
      dir = option.substr(15);
    } else if (option.rfind("-I", 0) == 0) {
      dir = option.substr(2);
    } else {
      include = false;
    }
    if (!include) {
      options += " " + shell_quote(option);
      continue;
    }
    if (!dir.empty() && dir.front() != '/' && include_index < absolute_dirs.size()) {
      dir = absolute_dirs[include_index];
    }
    ++include_index;
    options += " " + shell_quote("-I" + dir);
  }
  std::string script = "#!/bin/sh\n# kjit compiled this entry in-process " + how_kjit_compiled(entry.binary.cubin_path) +
                       ".\n"
    "# These nvcc commands do the same for people who have nvcc. Name expressions\n"
    "# (lowered_names.txt) need explicit template instantiations when compiled with nvcc.\n"
    "set -e\ncd \"$(dirname \"$0\")\"\n";
  const Arch arch = Arch::parse(entry.binary.arch.empty() ? "auto" : entry.binary.arch);
  if (arch.is_auto()) {
    return script;
  }
  script += "nvcc -ptx -arch=" + arch.virtual_name() + " -Iheaders" + options + " -o kernel.ptx source.cu\n";
  if (!arch.is_virtual()) {
    script += "nvcc -cubin -arch=" + arch.real_name() + " -Iheaders" + options + " -o kernel." + arch.real_name() +
              ".cubin source.cu\n";
  }
  return script;
}

} // namespace kjit::mirror
