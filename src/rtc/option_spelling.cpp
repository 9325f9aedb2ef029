// Trimming and splitting program options as NVRTC does, so that keys and include resolution see
// the options NVRTC acts on.
#include "rtc/option_spelling.hpp"

#include "options/option_table.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::rtc {

namespace {

bool is_space(char ch) noexcept
{
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r';
}

// "-I", "-D", "-U" followed by a space: NVRTC skips the spaces (only spaces: "-I\tinc" is the
// folder "\tinc") and reads the rest as the option's value, as if given apart ("-I =x" is "=x").
bool short_with_space(const std::string& option) noexcept
{
  return option.size() > 2 && option[0] == '-' && (option[1] == 'I' || option[1] == 'D' || option[1] == 'U') &&
         option[2] == ' ';
}

// "-I=dir", "-D=X", "-U=X": NVRTC drops the one '=' after the short flag ("-I=inc" is the folder
// inc, "-I==inc" the folder "=inc", "-D=V=5" defines V as 5; measured, NVRTC 13.0). The long form
// with the rest is read alike, with no '=' to drop ("--include-path==inc" is "=inc", "-I= inc" and
// "--include-path= inc" the folder " inc"); nullptr when `option` is no such option.
const char* long_of_short_with_equals(const std::string& option) noexcept
{
  if (option.size() < 3 || option[0] != '-' || option[2] != '=') {
    return nullptr;
  }
  switch (option[1]) {
  case 'I': return "--include-path=";
  case 'D': return "--define-macro=";
  case 'U': return "--undefine-macro=";
  default: return nullptr;
  }
}

// `option` without the white space NVRTC trims off its ends; a view of it (no copy: the check on
// every get() looks at each option with this).
std::string_view trimmed_view(std::string_view option) noexcept
{
  std::size_t begin = 0;
  std::size_t end = option.size();
  while (begin < end && is_space(option[begin])) {
    ++begin;
  }
  while (end > begin && is_space(option[end - 1])) {
    --end;
  }
  return option.substr(begin, end - begin);
}

std::string trimmed_of(const std::string& option)
{
  return std::string(trimmed_view(option));
}

// Whether NVRTC reads `value` (trimmed) of an int option without ending the process: empty (NVRTC
// ignores it), or an int ("-" and numbers out of int's range throw through stoi) up to `most`.
// Other text NVRTC refuses itself ("expects an integer value"), and so does this.
bool int_value_ok(const std::string& given, long long most)
{
  const std::string value = trimmed_of(given);
  if (value.empty()) {
    return true;
  }
  int number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  return error == std::errc{} && end == value.data() + value.size() && number <= most;
}

// Whether NVRTC can make the file of -fdevice-time-trace=`value` ("<value>.json"): it aborts the
// process when it can't ("Program aborted due to an unhandled Error: Could not open X.json").
// Its folder must be a folder kjit may write in, and the file, if there is one, a file it may write.
// "-fdevice-time-trace=-" names the file by the program: NVRTC writes "<program name>.json"
// (measured, NVRTC 13.0: a program "dir/k.cu" writes dir/k.cu.json, and aborts without dir).
bool time_trace_writable(const std::string& value, const std::string& program_name)
{
  if (value.empty()) {
    return true;  // NVRTC writes none
  }
  const std::string file = (value == "-" ? program_name : value) + ".json";
  const std::size_t slash = file.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::access(folder.c_str(), W_OK | X_OK) != 0) {
    return false;
  }
  return ::stat(file.c_str(), &st) != 0 ? errno == ENOENT : S_ISREG(st.st_mode) && ::access(file.c_str(), W_OK) == 0;
}

} // namespace

std::vector<std::string> without_unfoldered_pch(const std::vector<std::string>& options)
{
  std::vector<std::string> out;
  bool folder = false;
  bool value = false;
  for (const std::string& option : options) {
    const bool is_value = value;
    value = !is_value && options::takes_verbatim_value(option);
    if (!is_value && (option == "-pch" || option == "--pch")) {
      continue;  // kept only where a folder is named (below)
    }
    folder = folder || (!is_value && (option.rfind("-pch-dir=", 0) == 0 || option.rfind("--pch-dir=", 0) == 0));
    out.push_back(option);
  }
  return folder ? options : out;
}

const std::string* option_missing_its_value(const std::vector<std::string>& options)
{
  const std::string* open = nullptr;
  for (const std::string& option : options) {
    open = open == nullptr && options::takes_value_apart(trimmed_of(option)) ? &option : nullptr;
  }
  return open;
}

const std::string* option_that_aborts_nvrtc(const std::vector<std::string>& options, const std::string& program_name)
{
  bool value = false;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    const std::string trimmed = trimmed_of(option);
    const bool is_value = value;
    value = !is_value && options::takes_verbatim_value(trimmed);
    if (is_value) {
      continue;
    }
    const std::size_t equals = trimmed.find('=');
    const options::Option* known = options::find(std::string_view(trimmed).substr(0, equals));
    if (known != nullptr && (known->traits & options::aborts_when_empty) != 0 && equals + 1 == trimmed.size()) {
      return &option;
    }
    for (const char* name : {"-fdevice-time-trace=", "--fdevice-time-trace="}) {
      const std::size_t size = std::char_traits<char>::length(name);
      if (trimmed.compare(0, size, name) == 0 && !time_trace_writable(trimmed.substr(size), program_name)) {
        return &option;
      }
    }
    if (known != nullptr && (known->traits & options::int_value) != 0) {
      if (equals == std::string::npos) {
        if (i + 1 < options.size() && !int_value_ok(options[i + 1], known->most)) {
          return &options[i + 1];
        }
        ++i;  // its value
      } else if (!int_value_ok(trimmed.substr(equals + 1), known->most)) {
        return &option;
      }
    }
  }
  return nullptr;
}

bool spelled_otherwise(const std::vector<std::string>& options) noexcept
{
  for (const std::string& option : options) {
    if (!option.empty() && (is_space(option.front()) || is_space(option.back()) || short_with_space(option) ||
                            long_of_short_with_equals(option) != nullptr)) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> as_nvrtc_reads(const std::vector<std::string>& options)
{
  std::vector<std::string> out;
  out.reserve(options.size());
  bool value = false;  // the option before takes this one as its value
  for (const std::string& option : options) {
    std::string trimmed = trimmed_of(option);
    const bool is_value = value;
    value = !is_value && options::takes_verbatim_value(trimmed);
    if (!is_value && short_with_space(trimmed)) {
      const std::size_t at = trimmed.find_first_not_of(' ', 2);  // not npos: trimmed ends in no space
      if (is_space(trimmed[at])) {
        // "-I \tinc" is the folder "\tinc", which NVRTC would trim given apart: kept with its flag.
        out.push_back(trimmed.substr(0, 2) + trimmed.substr(at));
      } else {
        out.push_back(trimmed.substr(0, 2));
        out.push_back(trimmed.substr(at));
      }
    } else if (const char* long_form = is_value ? nullptr : long_of_short_with_equals(trimmed)) {
      out.push_back(long_form + trimmed.substr(3));
    } else {
      out.push_back(std::move(trimmed));
    }
  }
  return out;
}

const Program& as_nvrtc_reads(const Program& program, std::optional<Program>& storage)
{
  // -Xcudafe gives NVRTC's front end options of its own ("-Xcudafe=-I<dir>", "--preinclude=<file>"):
  // files read through them are in no key. Not as the value of an option before ("-I" "-Xcudafe").
  bool value = false;
  for (const std::string& option : program.options) {
    if (option.find('\0') != std::string::npos) {
      std::string shown = option;
      std::replace(shown.begin(), shown.end(), '\0', '?');
      throw OptionError("option '" + shown + "' of " + program.name +
                        " contains a NUL byte (NVRTC would read only the text before it)");
    }
    const std::string_view trimmed = trimmed_view(option);
    if (!value && (trimmed == "-Xcudafe" || trimmed.substr(0, 9) == "-Xcudafe=")) {
      throw OptionError("option '" + option + "' of " + program.name +
                        " passes options to NVRTC's front end, where kjit can't see the files they make it read "
                        "(include folders, pre-includes); use -I, -D, -include instead");
    }
    value = !value && options::takes_verbatim_value(trimmed);
  }
  for (const std::string& expression : program.name_expressions) {
    // NVRTC writes each on a line of a file it compiles with the program: a line break would
    // start a line of the program's own ("#include" a file no key holds).
    if (expression.find_first_of(std::string_view("\n\0", 2)) != std::string::npos) {
      throw Error("a name expression of " + program.name + " contains a line break or a NUL byte");
    }
  }
  if (!spelled_otherwise(program.options)) {
    return program;
  }
  storage.emplace(program);
  storage->options = as_nvrtc_reads(program.options);
  return *storage;
}

} // namespace kjit::rtc
