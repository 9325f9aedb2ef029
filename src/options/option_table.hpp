// What kjit knows of NVRTC's options, in one table (as ccache's compopt.cpp keeps gcc's): each
// option's two names, whether and how it takes a value, how the key names it, and what it makes
// the compiler read or the binary name. Spelling (rtc/option_spelling), keys (cache/key), the
// include resolution (deps), the link step and the driver's JIT options all ask it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit::options {

// What an option does; a set of these is an option's traits.
enum Trait : unsigned {
  // Takes a value, after '=' ("-maxrregcount=32") or, given alone, in the next option
  // ("-maxrregcount" "32"; measured, NVRTC 13.0).
  value_apart = 1u << 0,
  // That next option is a value, trimmed, never split nor renamed ("-I" "-I inc" is the folder
  // "-I inc"; "-Xptxas" "-D x" is ptxas's "-D x").
  value_verbatim = 1u << 1,
  // The key names it by its long name, so both spellings are one key (the binaries are the same
  // byte for byte). -I, -D, -U, -lineinfo and -G are keyed by their short names instead.
  keyed_long = 1u << 2,
  // The key joins a value given apart to its long name: "-Xptxas" "-v" is "--ptxas-options=-v".
  keyed_joined = 1u << 3,
  // The binary names files: -lineinfo's .file lines.
  line_info = 1u << 4,
  // The binary names files and holds debug information: -G's DWARF.
  device_debug = 1u << 5,
  // Its value goes to ptxas (the link step and the driver's JIT take it as -Xptxas).
  ptxas_value = 1u << 6,
  // NVRTC 13.0 ends the process when "<name>=" has nothing after the '=' (std::out_of_range
  // thrown through nvrtcCompileProgram).
  aborts_when_empty = 1u << 7,
  // NVRTC reads its value with std::stoi: a value that is no int ends the process.
  int_value = 1u << 8,
  // A math option that nvJitLink -lto spells otherwise (not passed on to it yet).
  math = 1u << 9,
  // A register limit: the link step and the driver's JIT take it too.
  max_registers = 1u << 10,
};

struct Option {
  std::string_view short_name;  // "-ftz"; empty when there is none
  std::string_view long_name;   // "--ftz"; empty when there is none
  unsigned traits = 0;
  long long most = 0;  // int_value: the largest value kjit passes on
};

// The table, sorted by long name (then short name).
const std::vector<Option>& table();

// The option `name` names exactly (no "=value"): "-ftz", "--ftz", "-I"; nullptr when none.
const Option* find(std::string_view name);
// The option `option` is, with or without "=value" ("-ftz=true", "--ftz"); nullptr when none, and
// for a flag given a value ("-G=1").
// -I, -D and -U also match with their value joined ("-Iinc"); `value` is then what follows.
const Option* parse(std::string_view option, std::string_view* value = nullptr);

// Whether `name` is given alone and takes the next option as its value (value_apart).
bool takes_value_apart(std::string_view name);
// Whether the next option after `name` is a value taken as it is (value_verbatim).
bool takes_verbatim_value(std::string_view name);
// Whether `option` has `trait`.
bool has(std::string_view option, Trait trait);
// Whether any of `options` has `trait`.
bool any(const std::vector<std::string>& options, Trait trait);

// `option` as the key names it when it is one token: "-ftz=true" as "--ftz=true", "-w" as
// "--disable-warnings" (keyed_long); as it is otherwise.
std::string keyed_name(const std::string& option);
// The "<long name>=" that a value given apart after `name` is joined to in the key (keyed_joined):
// "-Xptxas" → "--ptxas-options="; empty when the key keeps them apart.
std::string joined_prefix(std::string_view name);

// The reason `options` make the compiler read a file that no key holds, or empty: ptxas reads
// -Xptxas=--options-file=F (-optf) itself, NVRTC --use-pch=F and --pch-dir=D. Looked for anywhere
// in an option (inside a value given to ptxas too).
std::string file_reading(const std::vector<std::string>& options);

} // namespace kjit::options
