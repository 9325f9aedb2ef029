// Tuning keys (four buckets per octave) and the folder names of scripts under scripts/.
#include <kjit/script.hpp>

#include "util/hash.hpp"

#include <bit>

namespace kjit {

namespace {
constexpr std::size_t k_max_folder_bytes = 96;
constexpr std::uint64_t k_max_size = std::uint64_t(1) << 63;
} // namespace

std::uint64_t tuning_key(std::uint64_t n)
{
  if (n > k_max_size) {
    throw ScriptError("size " + std::to_string(n) + " is above 2^63: it has no tuning key");
  }
  const int bits = std::bit_width(n);  // Python's int.bit_length()
  const std::uint64_t block = std::uint64_t(1) << (bits > 3 ? bits - 3 : 0);
  return (n / block + (n % block != 0 ? 1 : 0)) * block;
}

std::string script_folder_name(const std::string& name)
{
  std::string out;
  char previous = '\0';
  for (const char c : name) {
    const bool upper = c >= 'A' && c <= 'Z';
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (upper) {
      // CamelCase boundary: "MatmulF16" → "matmul_f16" (as tilus names a script class's folder).
      if ((previous >= 'a' && previous <= 'z') || (previous >= '0' && previous <= '9')) {
        out += '_';
      }
      out += static_cast<char>(c - 'A' + 'a');
    } else if (keep) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';  // '/', '.', controls, spaces, bytes ≥ 0x80: never a path of their own
    }
    previous = c;
  }
  while (!out.empty() && out.back() == '_') {
    out.pop_back();
  }
  if (out.size() > k_max_folder_bytes) {
    out = out.substr(0, 64) + "_" + util::to_hex(util::sha256(name)).substr(0, 16);
  }
  return out.empty() ? "script" : out;
}

} // namespace kjit
