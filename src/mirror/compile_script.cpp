// module/compile.sh: the nvcc commands that reproduce an entry, for people who have nvcc.
#include "mirror/mirror.hpp"

#include <kjit/arch.hpp>

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

} // namespace

std::string compile_script(const store::Entry& entry)
{
  std::string options;
  for (const auto& option : entry.options) {
    if (option.rfind("-arch=", 0) == 0) {
      continue;  // nvcc gets -arch from the lines below
    }
    options += " " + shell_quote(option);
  }
  std::string script =
    "#!/bin/sh\n"
    "# kjit compiled this entry in-process: NVRTC (source -> PTX) then nvJitLink (PTX -> cubin).\n"
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
