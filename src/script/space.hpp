// A script's tuning space: checks, the schedules (cartesian product), each schedule's program, and
// the canonical text whose SHA-256 is the script hash.
#pragma once

#include <kjit/program.hpp>
#include <kjit/script.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace kjit::script {

using Values = std::vector<std::pair<std::string, std::string>>;

// The most schedules a script may have (docs/scripts.md).
constexpr std::size_t k_max_schedules = 4096;

// Throws ScriptError for an empty space or parameter, a name that is not a C identifier or
// repeated, a value with a control character or ',' or given twice, more than k_max_schedules
// schedules, a pattern naming an unknown parameter, leaving out a parameter with several values or
// with an unmatched brace, size names that are empty, repeated or not identifiers, or a newline in
// a header name, an option or the pattern (each is one line of the hashed text).
void check(const Script& script);

// Every schedule's values, the first parameter varying slowest (index order).
std::vector<Values> schedules(const std::vector<TuningParameter>& space);

// `pattern` with each "{NAME}" replaced by the schedule's value ("kern<{BLOCK}>" → "kern<64>").
std::string expand(const std::string& pattern, const Values& values);

// The program that builds one schedule: macros -DNAME=value, or the expanded name expression.
Program schedule_program(const Script& script, const Values& values);

// What the script hash covers, one field per line (documented in docs/scripts.md).
std::string script_text(const Script& script, const Arch& arch);

} // namespace kjit::script
