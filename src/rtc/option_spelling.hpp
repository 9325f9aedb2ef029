// Program options as NVRTC reads them: every part of kjit that looks at an option sees that.
#pragma once

#include <kjit/program.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kjit::rtc {

// Whether NVRTC reads `options` otherwise than written: white space (" \t\n\v\f\r") at either end
// of one (NVRTC trims it: "-include=pre.h " is pre.h, " -Iinc" the folder inc), spaces after
// -I, -D or -U ("-I inc" is "-I" "inc"), or an '=' after them ("-I=inc" is the folder inc).
// Cheap: a look at each option's ends.
bool spelled_otherwise(const std::vector<std::string>& options) noexcept;

// The options as NVRTC reads them (measured, NVRTC 13.0): each trimmed, "-I dir", "-D X=1" and
// "-U X" split in two, "-I=dir", "-D=X" and "-U=X" (NVRTC drops the '=') in their long forms
// "--include-path=dir", "--define-macro=X", "--undefine-macro=X". The binaries are the same byte
// for byte (-G and -lineinfo too). A value given apart ("-I" "-I inc", "-Xptxas" "-D x") is only
// trimmed, and one that starts with other white space than a space ("-I \tinc": the folder
// "\tinc", which NVRTC would trim given apart) stays with its flag ("-I\tinc"). What this returns
// is read alike by it again.
std::vector<std::string> as_nvrtc_reads(const std::vector<std::string>& options);

// The last of a program's `options` when it takes its value from the next option ("-I",
// "-Xptxas", "-maxrregcount" given alone) and is not itself a value: NVRTC would take kjit's own
// "-arch=..." after it as the value, and compile for its default arch. nullptr otherwise.
const std::string* option_missing_its_value(const std::vector<std::string>& options);

// The first of `options` (the whole list NVRTC is given) that NVRTC 13.0 ends the process on: it
// throws std::out_of_range through nvrtcCompileProgram (std::terminate) for -Xptxas=,
// --ptxas-options=, -Xnvvm=, -Xcudafe=, -dopt=, --dopt=, -Ofc= and --Ofast-compile= with nothing
// after the '=' (trimmed; the value of an option before, "-I" "-Xptxas=", is read as a value), and
// for -jtd, -split-compile and their long forms with a value (after '=' or apart) that is not an
// int ("-": std::stoi throws through it) or, for -split-compile, more than 1024 threads (NVRTC
// 13.0: SIGSEGV at 2147483647, killed for memory at 65536), and -fdevice-time-trace=X when
// X.json can't be written (its folder is missing or not writable: NVRTC aborts on it; for X "-"
// the file is "<program_name>.json"). nullptr when there is none.
const std::string* option_that_aborts_nvrtc(const std::vector<std::string>& options,
                                            const std::string& program_name);

// `options` (as NVRTC reads them) without NVRTC's automatic PCH (-pch, --pch) where no PCH folder
// is named (-pch-dir=, --pch-dir=): NVRTC 13.0 uses a PCH it made in this process as it made it
// after the headers in it changed (measured: an in-memory header's other content, a disk header
// edited; the old values came out), so a program compiled after another with other header contents
// got the other's, and the cache stored that under its own key. The binaries are the same without
// it. kjit's batch workers name a folder per set of options and in-memory headers.
std::vector<std::string> without_unfoldered_pch(const std::vector<std::string>& options);

// `program` when NVRTC reads its options as written, else a copy in `storage` with them as NVRTC
// reads them. Throws OptionError for -Xcudafe (options for NVRTC's front end, which can name
// include folders and pre-includes no key would hold), for an option with a NUL byte (NVRTC reads up to it: "-lineinfo\0"
// is -lineinfo to NVRTC, and kjit would key it as another option), and Error for a name expression
// with a line break or a NUL byte (NVRTC writes each on a line of a file it compiles: "k<1>\n#include
// \"x.h\"" reads x.h, a file no key holds). Options are compared as NVRTC reads them because an
// option kjit did not recognise for its white space would reach NVRTC as a pre-include, an -I
// folder or -lineinfo no key holds.
const Program& as_nvrtc_reads(const Program& program, std::optional<Program>& storage);

} // namespace kjit::rtc
