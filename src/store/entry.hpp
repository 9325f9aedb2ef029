// What one cache entry holds: the key texts, the inputs, and either a binary or a remembered failure.
#pragma once

#include <kjit/binary.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kjit::store {

enum class EntryKind : std::uint32_t {
  binary = 1,   // a successful compile
  failure = 2,  // the compiler rejected the program; `binary.log` holds its log
};

struct Entry {
  EntryKind kind = EntryKind::binary;
  std::string program_name;
  std::string program_txt;
  std::string options_txt;
  std::string source;
  std::map<std::string, std::string> headers;
  std::vector<std::string> options;  // exactly what NVRTC was given
  Binary binary;
  std::string ltoir;                 // only when dump_ir was on
  std::int64_t created_unix = 0;
};

} // namespace kjit::store
