// Mirror writing through O_NOFOLLOW folder descriptors and atomic files.
#include "mirror/mirror.hpp"

#include "util/file.hpp"

#include <fcntl.h>
#include <vector>

namespace kjit::mirror {

namespace {

using util::UniqueFd;

// Opens (creating) each component of `relative` below `base` without following symlinks.
std::optional<UniqueFd> open_path(int base, const std::string& relative, std::error_code& error)
{
  std::optional<UniqueFd> current;
  int fd = base;
  std::size_t start = 0;
  while (start < relative.size()) {
    const auto slash = relative.find('/', start);
    const std::string part = relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? relative.size() : slash + 1;
    auto next = util::open_subdir(fd, part, true, 0700, error);
    if (!next) {
      return std::nullopt;
    }
    current = std::move(next);
    fd = current->get();
  }
  return current;
}

// The mirror is a view rebuilt from LMDB at will: atomic renames, but no fsync per file.
std::error_code write_view_file(int dir, const std::string& name, const std::string& content, int mode = 0644)
{
  return util::write_file_atomic(dir, name, content, mode, util::Durability::none);
}

std::string lowered_names_text(const Binary& binary)
{
  std::string text;
  for (const auto& [expression, lowered] : binary.lowered_names) {
    text += expression + "\t" + lowered + "\n";
  }
  return text;
}

std::string log_text(const store::Entry& entry)
{
  std::string text = "# nvrtc options:";
  for (const auto& option : entry.options) {
    text += " " + option;
  }
  text += "\n# result: ";
  text += entry.kind == store::EntryKind::binary ? "ok" : "compile error";
  text += "\n" + entry.binary.log + (entry.binary.log.empty() ? "" : "\n");
  return text;
}

} // namespace

std::string safe_relative_path(const std::string& name)
{
  std::string out;
  std::size_t start = 0;
  while (start <= name.size()) {
    const auto slash = name.find('/', start);
    std::string part = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? name.size() + 1 : slash + 1;
    if (part.empty() || part == ".") {
      continue;
    }
    if (part == "..") {
      part = "_up_";
    }
    out += (out.empty() ? "" : "/") + part;
  }
  return out.empty() ? "_unnamed_" : out;
}

std::error_code write_entry(const std::string& cache_dir, const std::string& hex_key, const store::Entry& entry)
{
  std::error_code error;
  UniqueFd root(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    return {errno, std::generic_category()};
  }
  auto entry_dir = open_path(root.get(), "programs/" + hex_key, error);
  auto module_dir = entry_dir ? open_path(entry_dir->get(), "module", error) : std::nullopt;
  if (!module_dir) {
    return error;
  }
  struct File {
    int dir;
    std::string name;
    const std::string& content;
  };
  const std::string lowered = lowered_names_text(entry.binary);
  const std::string log = log_text(entry);
  const std::string script = compile_script(entry);
  std::vector<File> files{
    {entry_dir->get(), "program.txt", entry.program_txt},
    {entry_dir->get(), "options.txt", entry.options_txt},
    {module_dir->get(), "source.cu", entry.source},
    {module_dir->get(), "nvrtc_log.txt", log},
    {module_dir->get(), "compile.sh", script},
  };
  if (entry.kind == store::EntryKind::binary) {
    files.push_back({module_dir->get(), "kernel.ptx", entry.binary.ptx});
    files.push_back({module_dir->get(), "lowered_names.txt", lowered});
    if (!entry.binary.cubin.empty()) {
      files.push_back({module_dir->get(), "kernel." + entry.binary.arch + ".cubin", entry.binary.cubin});
    }
  }
  for (const File& file : files) {
    if (auto e = write_view_file(file.dir, file.name, file.content, file.name == "compile.sh" ? 0755 : 0644)) {
      return e;
    }
  }
  for (const auto& [name, content] : entry.headers) {
    const std::string relative = "headers/" + safe_relative_path(name);
    const auto slash = relative.rfind('/');
    auto dir = open_path(module_dir->get(), relative.substr(0, slash), error);
    if (!dir) {
      return error;
    }
    if (auto e = write_view_file(dir->get(), relative.substr(slash + 1), content)) {
      return e;
    }
  }
  if (!entry.ltoir.empty()) {
    auto ir_dir = open_path(entry_dir->get(), "ir", error);
    if (!ir_dir) {
      return error;
    }
    if (auto e = write_view_file(ir_dir->get(), "kernel.ltoir", entry.ltoir)) {
      return e;
    }
  }
  return {};
}

} // namespace kjit::mirror
