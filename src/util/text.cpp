#include "util/text.hpp"

#include <algorithm>
#include <cstring>

namespace kjit::util {

std::string escape_line(std::string_view value)
{
  // Runs between the characters escaped are copied whole (a manifest's absent names: megabytes of
  // short names each ended by "\n", escaped on the caller's path after a miss's compile).
  std::string out;
  out.reserve(value.size() + value.size() / 8);
  std::size_t run = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char ch = value[i];
    const char escaped = ch == '\\' ? '\\' : ch == '\n' ? 'n' : ch == '\r' ? 'r' : ch == '\t' ? 't' : '\0';
    if (escaped != '\0') {
      out.append(value, run, i - run);
      out += '\\';
      out += escaped;
      run = i + 1;
    }
  }
  out.append(value, run, std::string::npos);
  return out;
}

std::string unescape_line(std::string_view line)
{
  // Runs between backslashes are copied whole: a manifest's absent names are megabytes of short
  // names each ended by "\n" (a warm hit of a vendored CCCL spent a third of its time here).
  std::string out;
  out.reserve(line.size());
  std::size_t at = 0;
  for (std::size_t slash; (slash = line.find('\\', at)) != std::string_view::npos && slash + 1 < line.size(); at = slash + 2) {
    out.append(line.substr(at, slash - at));
    const char next = line[slash + 1];
    out += next == 'n' ? '\n' : next == 'r' ? '\r' : next == 't' ? '\t' : next;
  }
  out.append(line.substr(at));
  return out;
}

std::size_t find_text(std::string_view text, std::string_view needle, std::size_t from)
{
  if (from > text.size() || needle.size() > text.size() - from) {
    return std::string_view::npos;
  }
  if (needle.empty()) {
    return from;
  }
  // memchr() for the first character that is not '_' (std::string::find looks for the first one,
  // and stops at every '_' of a header), then the whole needle compared.
  const std::size_t pivot = std::min(needle.find_first_not_of('_'), needle.size() - 1);
  const char* const begin = text.data();
  const char* const last = begin + text.size() - needle.size();  // the last place the needle may start
  for (const char* at = begin + from + pivot; at <= last + pivot;) {
    const void* hit = std::memchr(at, needle[pivot], static_cast<std::size_t>(last + pivot - at) + 1);
    if (hit == nullptr) {
      return std::string_view::npos;
    }
    const char* start = static_cast<const char*>(hit) - pivot;
    if (std::memcmp(start, needle.data(), needle.size()) == 0) {
      return static_cast<std::size_t>(start - begin);
    }
    at = static_cast<const char*>(hit) + 1;
  }
  return std::string_view::npos;
}

} // namespace kjit::util
