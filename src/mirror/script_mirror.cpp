// Writing a script's mirror folder: built in a temp folder, then exchanged into place.
#include "mirror/script_mirror.hpp"

#include "mirror/mirror.hpp"
#include "store/script_store.hpp"
#include "util/file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace kjit::script {

namespace {

std::error_code last_error()
{
  return {errno, std::generic_category()};
}

std::string format_ms(double value)
{
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::string schedule_text(const ScriptRecord& script)
{
  std::string text = "index";
  for (const auto& parameter : script.space) {
    text += "\t" + parameter.name;
  }
  text += "\tstatus\tprogram\n";
  for (const auto& s : script.schedules) {
    text += std::to_string(s.index);
    for (const auto& value : s.values) {
      text += "\t" + value.second;
    }
    text += s.built ? "\tbuilt\t" + s.program_key + "\n" : "\tfailed\t-\n";
  }
  return text;
}

std::string table_text(const ScriptRecord& script, const TableRecord& table)
{
  std::string text;
  for (const auto& name : script.size_names) {
    text += name + "\t";
  }
  text += "choice\n";
  for (const auto& entry : table.entries) {
    for (const std::uint64_t k : entry.key) {
      text += std::to_string(k) + "\t";
    }
    text += std::to_string(entry.choice) + "\n";
  }
  return text;
}

std::string report_text(const ScriptRecord& script, const DispatchEntry& entry)
{
  std::string text = "# chosen: " + std::to_string(entry.choice) + " (" + entry.how + ")\n";
  text += entry.how == "timed" ? "schedule\tmedian_ms\n" : "schedule\tcost\n";
  for (const auto& [index, value] : entry.measured) {
    std::string values;
    if (index < script.schedules.size()) {
      for (const auto& [name, v] : script.schedules[index].values) {
        values += " " + name + "=" + v;
      }
    }
    text += std::to_string(index) + "\t" + format_ms(value) + "\t#" + values + "\n";
  }
  return text;
}

std::error_code write_files(int dir, const ScriptRecord& script, const std::optional<TableRecord>& table)
{
  std::error_code error;
  auto programs = mirror::open_path(dir, "programs", error);
  if (!programs) {
    return error;
  }
  for (const auto& s : script.schedules) {
    const std::string name = std::to_string(s.index);
    if (s.built) {
      if (::symlinkat(("../../../../programs/" + s.program_key).c_str(), programs->get(), name.c_str()) != 0) {
        return last_error();
      }
      continue;
    }
    auto failed = mirror::open_path(dir, "failed/building", error);
    if (!failed) {
      return error;
    }
    std::string text = "# schedule " + name + ":";
    for (const auto& [parameter, value] : s.values) {
      text += " " + parameter + "=" + value;
    }
    if (auto e = mirror::write_new_file(failed->get(), name + ".txt", text + "\n" + s.log + "\n", 0644)) {
      return e;
    }
  }
  if (auto e = mirror::write_new_file(dir, "schedule.txt", schedule_text(script), 0644)) {
    return e;
  }
  if (auto e = mirror::write_new_file(dir, "script.txt", script.script_txt, 0644)) {
    return e;
  }
  if (!table) {
    return {};
  }
  if (auto e = mirror::write_new_file(dir, "dispatch_table.txt", table_text(script, *table), 0644)) {
    return e;
  }
  if (auto e = mirror::write_new_file(dir, "fingerprint.txt", table->fingerprint.text() + "\n", 0644)) {
    return e;
  }
  for (const auto& entry : table->entries) {
    auto folder = mirror::open_path(dir, "latency/" + key_folder(script.size_names, entry.key), error);
    if (!folder) {
      return error;
    }
    if (auto e = mirror::write_new_file(folder->get(), "report.txt", report_text(script, entry), 0644)) {
      return e;
    }
    const std::string best = "../../programs/" + std::to_string(entry.choice);
    if (::symlinkat(best.c_str(), folder->get(), "best") != 0) {
      return last_error();
    }
  }
  return {};
}

} // namespace

std::string key_folder(const std::vector<std::string>& size_names, const std::vector<std::uint64_t>& key)
{
  std::string out;
  for (std::size_t i = 0; i < key.size(); ++i) {
    out += (i == 0 ? "" : "-") + (i < size_names.size() ? size_names[i] : "size") + "=" + std::to_string(key[i]);
  }
  return out;
}

std::error_code write_mirror(const std::string& cache_dir, const ScriptRecord& script,
                             const std::optional<TableRecord>& table)
{
  std::error_code error;
  // `cache_dir` may be /proc/self/fd/<n> (a checked descriptor): a magic link, so no O_NOFOLLOW here.
  util::UniqueFd root(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    return last_error();
  }
  auto parent = mirror::open_path(root.get(), "scripts/" + script_folder_name(script.name), error);
  if (!parent) {
    return error;
  }
  const std::string temp = mirror::temp_folder_name(script.hash);
  auto temp_dir = util::open_subdir(parent->get(), temp, true, util::mode_in(parent->get(), 0700, true), error);
  if (!temp_dir) {
    return error;
  }
  error = write_files(temp_dir->get(), script, table);
  if (!error) {
    std::ignore = ::fchmod(temp_dir->get(), static_cast<mode_t>(util::mode_in(parent->get(), 0755, true)));
    const int fd = parent->get();
    if (::renameat2(fd, temp.c_str(), fd, script.hash.c_str(), RENAME_NOREPLACE) != 0) {
      if (errno != EEXIST || ::renameat2(fd, temp.c_str(), fd, script.hash.c_str(), RENAME_EXCHANGE) != 0) {
        error = last_error();
      }
    }
  }
  mirror::remove_below(parent->get(), temp);
  return error;
}

std::size_t rebuild_mirror(const store::Store& store, const std::string& cache_dir, std::size_t& failed)
{
  std::size_t written = 0;
  try {
    const std::vector<ScriptRecord> scripts = all_scripts(store);
    mirror::remove_tree(cache_dir, "scripts");
    for (const ScriptRecord& script : scripts) {
      if (write_mirror(cache_dir, script, load_table(store, script.hash))) {
        ++failed;
      } else {
        ++written;
      }
    }
  } catch (const Error&) {
    ++failed;  // the store could not be read: the mirror is only a view
  }
  return written;
}

void forget_all(store::Store& store, const std::string& cache_dir)
{
  std::vector<std::string> keys;  // damaged records too: every "script/…" and "script-table/…" row
  store.for_each_prefix(store::Table::meta, "script", [&](std::string_view key, std::string_view) {
    keys.emplace_back(key);
  });
  store.erase(store::Table::meta, keys);
  mirror::remove_tree(cache_dir, "scripts");
}

} // namespace kjit::script
