// BuiltScript: schedules, binaries, dispatch through the table, explicit tables.
#include "mirror/script_mirror.hpp"
#include "store/script_store.hpp"
#include "script/state.hpp"

#include "config/log.hpp"
#include "util/fork_safe.hpp"

#include <algorithm>
#include <thread>
#include <unistd.h>

namespace kjit {

namespace {

// Taken by a fork()ed child's first use of a state (made afresh in each child: a thread of the
// parent may have held it at fork()).
struct AdoptMutex {
  std::mutex mutex;
};
const util::ForkFresh<AdoptMutex> g_adopt;

// The states whose schedules this thread is measuring (nested: a timer may tune another script).
thread_local std::vector<const BuiltScript::State*> t_measuring;

[[noreturn]] void throw_used_by_own_tuner(const BuiltScript::State& state)
{
  throw ScriptError("script '" + state.record.name +
                    "' is used by its own timer or cost function (choose(), the table calls and set_tuning "
                    "are refused while the tuning that runs it lasts): time the schedule given (TimingRun)");
}

} // namespace

BuiltScript::State::Measuring::Measuring(const State& state) { t_measuring.push_back(&state); }

BuiltScript::State::Measuring::~Measuring() { t_measuring.pop_back(); }

BuiltScript::State::Guard::Guard(State& state) : m_state(state)
{
  if (std::find(t_measuring.begin(), t_measuring.end(), &state) != t_measuring.end()) {
    throw_used_by_own_tuner(state);
  }
  const pid_t self = ::getpid();
  if (state.mutex_pid.load(std::memory_order_acquire) != self) {
    // The first use in a fork()ed child: the mutex is as the parent's threads left it at fork(),
    // and no thread of this process took it yet (each takes it here first). Free, it is this
    // process's from now on; held, no thread of this process will ever release it.
    const std::lock_guard adopt(g_adopt->mutex);
    if (state.mutex_pid.load(std::memory_order_acquire) != self) {
      if (!state.mutex.try_lock()) {
        throw ScriptError("script '" + state.record.name +
                          "' is used in a fork()ed child while a thread of its parent held it (a choose() or a "
                          "table call; without a store, a tuning): build it again in the child");
      }
      state.mutex_pid.store(self, std::memory_order_release);
      state.owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
      return;
    }
  }
  // Only this thread stores its own id there, and clears it before letting the mutex go.
  if (state.owner.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    throw_used_by_own_tuner(state);
  }
  state.mutex.lock();
  state.owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
}

BuiltScript::State::Guard::~Guard()
{
  m_state.owner.store(std::thread::id(), std::memory_order_relaxed);
  m_state.mutex.unlock();
}

const Fingerprint& BuiltScript::State::fingerprint()
{
  if (!current) {
    current = tuning.fingerprint.kjit_version.empty() ? current_fingerprint(arch) : tuning.fingerprint;
  }
  return *current;
}

void BuiltScript::State::reload_table()
{
  // Without a store, or once read from one this process can't write (its rows are never stored):
  // `table` in memory is all there is, and reading the store again would drop the rows made here.
  if (store && !(table_read && !store->writable())) {
    table = script::load_table(*store, record.hash).value_or(script::TableRecord{});
    table_read = true;
  }
  table_usable = !table.entries.empty() && table.fingerprint.accepts(fingerprint());
  check_rows();
}

const DispatchEntry* BuiltScript::State::find(const std::vector<std::uint64_t>& key) const
{
  if (!table_usable) {
    return nullptr;
  }
  const auto it = std::lower_bound(table.entries.begin(), table.entries.end(), key,
                                   [](const DispatchEntry& e, const std::vector<std::uint64_t>& k) { return e.key < k; });
  if (it == table.entries.end() || it->key != key) {
    return nullptr;
  }
  return servable[static_cast<std::size_t>(it - table.entries.begin())] ? &*it : nullptr;
}

void BuiltScript::State::check_rows()
{
  // A row made when the schedules built other programs (the hash covers neither the headers
  // found on the include path nor the toolkit) is never served, the key is tuned again: one whose
  // choice did not build this time, or one chosen among other programs (a header edit, a schedule
  // that failed then and builds now: a "single" row): it measured binaries that are not these.
  servable.assign(table.entries.size(), 0);
  for (std::size_t i = 0; i < table.entries.size(); ++i) {
    const script::TableRow& row = table.entries[i];
    const bool choice_built = row.choice < record.schedules.size() && record.schedules[row.choice].built;
    servable[i] = choice_built && (row.how == "given" || row.programs == programs_digest);
  }
}

void BuiltScript::State::save_table()
{
  std::sort(table.entries.begin(), table.entries.end(),
            [](const script::TableRow& a, const script::TableRow& b) { return a.key < b.key; });
  check_rows();
  table_usable = true;
  if (store) {
    script::save_table(*store, record.hash, table);
  }
  if (!mirror_dir.empty()) {
    if (const std::error_code e = script::write_mirror(mirror_dir, record, table)) {
      log::line("warning: the mirror of script '" + record.name + "' was not written: " + e.message());
    }
  }
}

const ScheduleInfo& BuiltScript::State::built(std::size_t index) const
{
  if (index >= record.schedules.size()) {
    throw ScriptError("script '" + record.name + "' has no schedule " + std::to_string(index) + " (it has " +
                      std::to_string(record.schedules.size()) + ")");
  }
  if (!record.schedules[index].built) {
    throw ScriptError("schedule " + std::to_string(index) + " of script '" + record.name + "' did not build");
  }
  return record.schedules[index];
}

const std::string& BuiltScript::name() const { return m_state->record.name; }
const std::string& BuiltScript::folder() const { return m_state->folder; }
const std::string& BuiltScript::hash() const { return m_state->record.hash; }
const Arch& BuiltScript::arch() const { return m_state->arch; }
const std::vector<std::string>& BuiltScript::size_names() const { return m_state->record.size_names; }
const std::vector<ScheduleInfo>& BuiltScript::schedules() const { return m_state->record.schedules; }

std::shared_ptr<const Binary> BuiltScript::binary(std::size_t index) const
{
  m_state->built(index);
  return m_state->binaries[index];
}

Kernel BuiltScript::kernel(std::size_t index, const Context& context, const std::string& kernel_name) const
{
  const ScheduleInfo& schedule = m_state->built(index);
  const std::string name = kernel_name.empty() ? schedule.kernel : kernel_name;
  if (name.empty()) {
    throw ScriptError("script '" + m_state->record.name + "' has no name-expression pattern: name the kernel");
  }
  const PreparedProgram prepared = m_state->cache->prepare(m_state->programs[index], m_state->arch);
  return context.load(prepared, *m_state->binaries[index]).kernel(name);
}

void BuiltScript::set_tuning(const TuningOptions& options)
{
  // As KJIT_COMPILE_LOCK_TIMEOUT, but 0 (don't wait) is allowed; NaN would wait for ever.
  if (!(options.lock_timeout_s >= 0 && options.lock_timeout_s <= 86400)) {
    throw ScriptError("script '" + m_state->record.name + "': lock_timeout_s " + std::to_string(options.lock_timeout_s) +
                      " is not a number of seconds from 0 to 86400 (a day)");
  }
  const State::Guard lock(*m_state);
  m_state->tuning = options;
  m_state->current.reset();
  m_state->table_usable = false;  // matched again under the new fingerprint
  m_state->reload_table();
}

std::size_t BuiltScript::choose(const std::vector<std::uint64_t>& sizes)
{
  State& s = *m_state;
  if (sizes.size() != s.record.size_names.size()) {
    throw ScriptError("script '" + s.record.name + "' takes " + std::to_string(s.record.size_names.size()) +
                      " sizes, not " + std::to_string(sizes.size()));
  }
  std::vector<std::uint64_t> key;
  for (const std::uint64_t n : sizes) {
    key.push_back(tuning_key(n));
  }
  {
    const State::Guard lock(s);
    if (const DispatchEntry* entry = s.find(key)) {
      return entry->choice;
    }
    s.reload_table();  // another process may have tuned it
    if (const DispatchEntry* entry = s.find(key)) {
      return entry->choice;
    }
  }
  return s.tune(key).choice;
}

std::shared_ptr<const Binary> BuiltScript::dispatch(const std::vector<std::uint64_t>& sizes)
{
  return m_state->binaries[choose(sizes)];
}

Kernel BuiltScript::dispatch_kernel(const Context& context, const std::vector<std::uint64_t>& sizes,
                                    const std::string& kernel_name)
{
  return kernel(choose(sizes), context, kernel_name);
}

void BuiltScript::set_table(const std::vector<DispatchEntry>& entries, const Fingerprint& fingerprint)
{
  State& s = *m_state;
  script::TableRecord table;
  table.fingerprint = fingerprint;
  for (DispatchEntry entry : entries) {
    if (entry.key.size() != s.record.size_names.size()) {
      throw ScriptError("a table row of script '" + s.record.name + "' has " + std::to_string(entry.key.size()) +
                        " keys, not " + std::to_string(s.record.size_names.size()));
    }
    for (const std::uint64_t k : entry.key) {
      if (tuning_key(k) != k) {
        throw ScriptError(std::to_string(k) + " is not a tuning key (" + std::to_string(tuning_key(k)) + " is)");
      }
    }
    s.built(entry.choice);
    entry.how = "given";
    table.entries.push_back({std::move(entry), ""});
  }
  std::sort(table.entries.begin(), table.entries.end(),
            [](const script::TableRow& a, const script::TableRow& b) { return a.key < b.key; });
  const auto twice = std::adjacent_find(table.entries.begin(), table.entries.end(),
                                        [](const script::TableRow& a, const script::TableRow& b) { return a.key == b.key; });
  if (twice != table.entries.end()) {
    throw ScriptError("a table of script '" + s.record.name + "' has two rows for " +
                      script::key_folder(s.record.size_names, twice->key));
  }
  // Not while another process or thread tunes the script: its row would be written over the
  // given table. The lock first, then the mutex (as a tuner takes them).
  std::optional<cache::CompileLock> tuning_lock;
  s.lock_table(tuning_lock);
  const State::Guard lock(s);
  s.table = std::move(table);
  // As read: a store this process can't write never holds the given rows, and reading it at the
  // next miss (or set_tuning) would drop them.
  s.table_read = true;
  s.save_table();
  s.table_usable = s.table.fingerprint.accepts(s.fingerprint());
}

std::vector<DispatchEntry> BuiltScript::table() const
{
  const State::Guard lock(*m_state);
  m_state->reload_table();
  return m_state->table.rows();
}

Fingerprint BuiltScript::table_fingerprint() const
{
  const State::Guard lock(*m_state);
  m_state->reload_table();
  return m_state->table.fingerprint;
}

} // namespace kjit
