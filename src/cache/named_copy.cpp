// Naming a header's copy by #line (named_copy.hpp).
#include "cache/named_copy.hpp"

namespace kjit::cache {

std::string named(const std::string& path, const std::string& content)
{
  std::string line = "#line 1 \"";
  for (const char ch : path) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      return content;
    }
    if (ch == '"' || ch == '\\') {
      line += '\\';
    }
    line += ch;
  }
  line += "\"\n";
  const bool bom = content.compare(0, 3, "\xEF\xBB\xBF") == 0;
  return bom ? content.substr(0, 3) + line + content.substr(3) : line + content;
}

} // namespace kjit::cache
