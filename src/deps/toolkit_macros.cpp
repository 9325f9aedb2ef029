// The macros the toolkit's headers define, for OpenEnds: a name no user text defines may still be
// defined empty by a toolkit header the program includes (CUDARTAPI in cuda_runtime_api.h).
#include "deps/formed_names.hpp"

#include "util/file.hpp"
#include "util/fork_safe.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

namespace kjit::deps {

namespace {

// Bounds on what is read: the CUDA 13.0 include tree is ≈ 2 000 files, 25 MB.
constexpr std::uintmax_t k_max_file_bytes = std::uintmax_t(8) << 20;
constexpr std::uintmax_t k_max_total_bytes = std::uintmax_t(256) << 20;

// Adds every #define of `text` to `macros` (one line each, splices joined by scan_includes' rules
// are not needed: a definition's first line decides whether it is empty).
void add_definitions(const std::string& text, ScanMacros& macros)
{
  for (std::size_t at = text.find('#'); at != std::string::npos; at = text.find('#', at + 1)) {
    std::size_t start = text.rfind('\n', at);
    start = start == std::string::npos ? 0 : start + 1;
    if (text.find_first_not_of(" \t", start) != at) {
      continue;  // not the line's first character: no directive
    }
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    std::size_t pos = line.find_first_not_of(" \t", 1);
    if (pos == std::string::npos || line.compare(pos, 6, "define") != 0) {
      continue;
    }
    pos = line.find_first_not_of(" \t", pos + 6);
    const std::size_t name_end = pos == std::string::npos ? pos : line.find_first_not_of(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", pos);
    if (pos == std::string::npos || name_end == pos) {
      continue;
    }
    const std::string name = line.substr(pos, name_end == std::string::npos ? std::string::npos : name_end - pos);
    const bool function_like = name_end != std::string::npos && line[name_end] == '(';
    std::size_t body = function_like ? line.find(')', name_end) : name_end;
    body = body == std::string::npos ? line.size() : body + (function_like ? 1 : 0);
    const std::size_t first = line.find_first_not_of(" \t\r", body);
    const std::size_t last = line.find_last_not_of(" \t\r");
    std::string value = first == std::string::npos || last < first ? std::string() : line.substr(first, last + 1 - first);
    (function_like ? macros.functions : macros.values)[name].insert(std::move(value));
  }
}

ScanMacros read_toolkit(const std::vector<std::string>& dirs)
{
  ScanMacros macros;
  std::uintmax_t total = 0;
  const auto inside_another = [&](const std::string& dir) {
    return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& other) {
      return dir.size() > other.size() && dir.compare(0, other.size(), other) == 0 && dir[other.size()] == '/';
    });
  };
  for (const std::string& dir : dirs) {
    if (inside_another(dir)) {
      continue;  // read with the folder it is in (include/cccl with include: 17 of the 42 MB read twice)
    }
    std::error_code error;
    for (std::filesystem::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      std::error_code ignored;
      if (!it->is_regular_file(ignored)) {
        continue;
      }
      const std::uintmax_t size = it->file_size(ignored);
      if (ignored || size > k_max_file_bytes || (total += size) > k_max_total_bytes) {
        continue;
      }
      if (const auto text = util::read_file(it->path().string(), ignored)) {
        add_definitions(*text, macros);
      }
    }
  }
  return macros;
}

// The toolkit macros read, by folders. Never freed: its destruction at the process's exit took
// 1.5 ms of a miss's wall time (a toolkit's 1.4 MB of definitions in small nodes), and a thread
// still using it then would read freed memory. Made afresh in a fork()ed child: a read takes
// ≈ 0.1 s under the lock, which a thread the child lacks may have held at fork().
struct Memo {
  std::mutex mutex;
  std::map<std::vector<std::string>, std::unique_ptr<const ScanMacros>> read;
};
const util::ForkFresh<Memo> g_memo;

} // namespace

const ScanMacros& toolkit_macros(const std::vector<std::string>& dirs)
{
  Memo& memo = *g_memo;
  std::lock_guard lock(memo.mutex);
  auto& macros = memo.read[dirs];
  if (!macros) {
    macros = std::make_unique<const ScanMacros>(read_toolkit(dirs));
  }
  return *macros;
}

} // namespace kjit::deps
