// Tuning one key: under a cross-process lock per script, the table is read again, then each built
// schedule is timed (warm-up, median of repeats) or costed, and the winner stored in one transaction.
#include "mirror/script_mirror.hpp"
#include "script/state.hpp"

#include "util/hash.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace kjit {

namespace {

double median(std::vector<double> values)
{
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double finite_or_worst(double value)
{
  return std::isnan(value) ? std::numeric_limits<double>::infinity() : value;
}

} // namespace

void BuiltScript::State::lock_table(std::optional<cache::CompileLock>& lock)
{
  double timeout_s = 0;
  {
    const Guard guard(*this);
    timeout_s = tuning.lock_timeout_s;
  }
  if (store) {
    lock.emplace(store->io_path(), util::sha256(script::table_row(record.hash)), timeout_s);
  }
}

DispatchEntry BuiltScript::State::tune(const std::vector<std::uint64_t>& key)
{
  // One process (and one thread: OFD locks exclude both) tunes a script at a time; the others
  // wait, then find its row. The lock first, then the mutex (as set_table): a thread waiting for
  // the lock holds nothing another thread needs.
  std::optional<cache::CompileLock> lock;
  lock_table(lock);
  std::optional<Guard> guard(std::in_place, *this);
  reload_table();
  if (const DispatchEntry* entry = find(key)) {
    return *entry;
  }
  const TuningOptions options = tuning;  // as set now: a set_tuning meanwhile applies to the next key
  std::vector<std::size_t> built;
  for (const auto& schedule : record.schedules) {
    if (schedule.built) {
      built.push_back(schedule.index);
    }
  }
  if (built.size() > 1 && !options.timer && !options.cost) {
    throw ScriptError("script '" + record.name + "': the dispatch table has no row for " +
                      script::key_folder(record.size_names, key) +
                      " and nothing to choose with: give a timer or a cost function (set_tuning) or a table (set_table)");
  }
  DispatchEntry entry;
  entry.key = key;
  {
    // Measured without the mutex where the lock keeps other tuners out: other threads' choose()
    // of keys with rows, and the table calls, go on meanwhile. (Without a store there is no lock:
    // the mutex keeps this process's tuners one at a time.) The schedules and binaries measured
    // never change after build().
    if (lock) {
      guard.reset();
    }
    const Measuring measuring(*this);
    if (built.size() == 1) {
      entry.how = "single";
      entry.measured.emplace_back(built[0], 0.0);
    } else if (options.timer) {
      entry.how = "timed";
      for (const std::size_t index : built) {
        const TimingRun run{record.schedules[index], *binaries[index], key};
        for (unsigned i = 0; i < options.warmup; ++i) {
          std::ignore = options.timer(run);
        }
        std::vector<double> times;
        for (unsigned i = 0; i < std::max(options.repeat, 1u); ++i) {
          times.push_back(finite_or_worst(options.timer(run)));
        }
        entry.measured.emplace_back(index, median(times));
      }
    } else {
      entry.how = "cost";
      for (const std::size_t index : built) {
        entry.measured.emplace_back(index, finite_or_worst(options.cost(record.schedules[index], key)));
      }
    }
  }
  if (!guard) {
    guard.emplace(*this);
  }
  // Best first; a tie goes to the lower schedule index.
  std::stable_sort(entry.measured.begin(), entry.measured.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  entry.choice = entry.measured.front().first;
  // Read again: rows stored meanwhile (a set_table, a tuner whose wait for the lock ran out) are
  // kept, not overwritten by the table as it was before measuring.
  reload_table();
  if (!table_usable) {
    table = script::TableRecord{};  // none, or made elsewhere: replaced by this environment's
    table.fingerprint = fingerprint();
  }
  // A row for the key that find() did not serve (its schedule no longer builds) is replaced.
  std::erase_if(table.entries, [&](const script::TableRow& row) { return row.key == key; });
  table.entries.push_back({entry, programs_digest});
  save_table();
  return entry;
}

} // namespace kjit
