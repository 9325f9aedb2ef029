// Script::build: every schedule compiled as one batch, the outcome stored in one transaction and
// mirrored.
#include "script/space.hpp"
#include "mirror/script_mirror.hpp"
#include "store/script_store.hpp"
#include "script/state.hpp"

#include <kjit/driver.hpp>

#include "config/log.hpp"
#include "util/hash.hpp"

#include <ctime>

namespace kjit {

namespace {

Arch resolve_arch(Cache& cache, const Arch& requested)
{
  if (!requested.is_auto()) {
    return requested;
  }
  const Arch configured = Arch::parse(cache.config().arch);
  if (!configured.is_auto()) {
    return configured;
  }
  return current_device_arch([&] { return cache.supported_archs(); });
}

std::string error_text(const BatchResult& result)
{
  try {
    std::rethrow_exception(result.error);
  } catch (const CompileError& e) {
    return e.log().empty() ? e.what() : e.log();
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string values_text(const script::Values& values)
{
  std::string text;
  for (const auto& [name, value] : values) {
    text += (text.empty() ? "" : ",") + name + "=" + value;
  }
  return text;
}

// What a table row chosen among this schedule depends on: the program as its key names it, but for
// the working directory that a key of a program built with -lineinfo or -G holds (its
// "named-from" line, which only the line tables name). Processes working in two folders build the
// same programs; with the key itself, each tuned the script's rows again on every run.
std::string tuned_program(const PreparedProgram& prepared)
{
  std::string text = prepared.program_txt();
  // Every value before the source is one escaped line: the first "source-bytes" line is the key's.
  const std::size_t source = text.find("\nsource-bytes: ");
  const std::size_t named = text.find("\nnamed-from: ");
  if (named != std::string::npos && named < source) {
    text.erase(named + 1, text.find('\n', named + 1) - named);
  }
  return util::to_hex(util::Sha256Hasher().update(text).update(prepared.options_txt()).finish());
}

// Whether two records describe the same build (the creation time aside).
bool same_build(const script::ScriptRecord& a, const script::ScriptRecord& b)
{
  if (a.schedules.size() != b.schedules.size() || a.script_txt != b.script_txt) {
    return false;
  }
  for (std::size_t i = 0; i < a.schedules.size(); ++i) {
    const ScheduleInfo& x = a.schedules[i];
    const ScheduleInfo& y = b.schedules[i];
    if (x.built != y.built || x.program_key != y.program_key || x.log != y.log) {
      return false;
    }
  }
  return true;
}

} // namespace

BuiltScript Script::build(Cache& cache, const BatchOptions& batch) const
{
  script::check(*this);
  auto state = std::make_shared<BuiltScript::State>();
  state->cache = &cache;
  state->arch = resolve_arch(cache, arch);
  state->folder = script_folder_name(name);
  state->store = script::store_of(cache);
  if (state->store && cache.config().mirror && cache.writable()) {
    state->mirror_dir = cache.config().cache_dir;
  }
  script::ScriptRecord& record = state->record;
  record.name = name;
  record.arch = state->arch.str();
  record.name_expression = name_expression;
  record.script_txt = script::script_text(*this, state->arch);
  record.hash = util::to_hex(util::sha256(record.script_txt));
  record.space = space;
  record.size_names = size_names;

  std::vector<BatchItem> items;
  const std::vector<script::Values> all = script::schedules(space);
  for (const auto& values : all) {
    state->programs.push_back(script::schedule_program(*this, values));
    items.push_back({state->programs.back(), state->arch});
  }
  const std::vector<BatchResult> results = cache.get_many(items, batch);
  std::string failures;
  std::size_t built = 0;
  std::vector<std::pair<std::size_t, std::string>> tuned_programs;  // each built schedule's
  for (std::size_t i = 0; i < results.size(); ++i) {
    ScheduleInfo info;
    info.index = i;
    info.values = all[i];
    info.kernel = name_expression.empty() ? std::string() : state->programs[i].name_expressions[0];
    if (results[i].binary) {
      info.built = true;
      const PreparedProgram prepared = cache.prepare(state->programs[i], state->arch);
      info.program_key = prepared.key();
      tuned_programs.emplace_back(i, tuned_program(prepared));
      ++built;
    } else {
      info.log = error_text(results[i]);
      if (failures.size() < 2000) {
        failures += "\n  schedule " + std::to_string(i) + " (" + values_text(all[i]) + "): " +
                    info.log.substr(0, 300);
      }
    }
    state->binaries.push_back(results[i].binary);
    record.schedules.push_back(std::move(info));
  }

  // What a row chosen now is chosen among: each built schedule's program (its key covers the
  // headers found on the include path and the toolkit, which the script hash does not).
  state->programs_digest = script::programs_digest(tuned_programs);

  std::optional<script::TableRecord> table;
  if (state->store) {
    const auto stored = script::load_script(*state->store, record.hash);
    record.created_unix = stored ? stored->created_unix : static_cast<std::int64_t>(std::time(nullptr));
    if (!stored || !same_build(*stored, record)) {
      script::save_script(*state->store, record);
    }
    table = script::load_table(*state->store, record.hash);
  }
  if (!state->mirror_dir.empty()) {
    cache.flush_mirror();  // the schedules' links lead to programs/<key>, written by the mirror's thread
    if (const std::error_code e = script::write_mirror(state->mirror_dir, record, table)) {
      log::line("warning: the mirror of script '" + name + "' was not written: " + e.message());
    }
  }
  if (built == 0) {
    throw ScriptError("script '" + name + "': none of its " + std::to_string(results.size()) +
                      " schedules built" + failures);
  }
  return BuiltScript(state);
}

} // namespace kjit
