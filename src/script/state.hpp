// BuiltScript::State: what a built script holds, shared by build.cpp, built_script.cpp and tune.cpp.
#pragma once

#include <kjit/script.hpp>

#include "cache/compile_lock.hpp"
#include "store/script_record.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <sys/types.h>
#include <unistd.h>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kjit {

struct BuiltScript::State {
  Cache* cache = nullptr;
  std::shared_ptr<store::Store> store;  // null without a disk tier: the table lives in memory only
  std::string mirror_dir;               // empty: no mirror (off, or nothing to write to)
  Arch arch;
  std::string folder;
  script::ScriptRecord record;
  std::vector<Program> programs;                          // one per schedule
  std::vector<std::shared_ptr<const Binary>> binaries;    // null for a failed schedule
  std::string programs_digest;  // script::programs_digest() of this build's programs: a row chosen now

  std::mutex mutex;  // guards everything below; taken through Guard
  // The process whose threads take `mutex`: the one that made the state, or a fork()ed child whose
  // first use found it free. (Not who holds it now: a holder recorded after taking the mutex, or
  // cleared before letting it go, left a window in which a child forked found it held by no one
  // it knew of, and waited for ever.)
  std::atomic<pid_t> mutex_pid{::getpid()};
  // The thread holding `mutex` (none: std::thread::id()): one that asks again, from its timer or
  // cost function, gets a ScriptError, not a wait for itself for ever.
  std::atomic<std::thread::id> owner{};

  // Holds `mutex`. In a fork()ed child whose parent had a thread holding it at fork() (a
  // choose() or table call; without a store, tuning: for as long as the timer or cost function
  // runs), throws ScriptError: no thread of the child will ever release it; so does a thread that
  // holds it already or is measuring this script's schedules (a timer or cost function calling its
  // own script).
  class Guard {
  public:
    explicit Guard(State& state);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

  private:
    State& m_state;
  };
  // For its lifetime, this thread measures this script's schedules (runs its timer or cost
  // function): a Guard this thread takes on the state meanwhile throws ScriptError, whether or not
  // the tuning holds `mutex` (with a store it doesn't: the lock keeps other tuners out).
  class Measuring {
  public:
    explicit Measuring(const State& state);
    ~Measuring();
    Measuring(const Measuring&) = delete;
    Measuring& operator=(const Measuring&) = delete;
  };
  TuningOptions tuning;
  std::optional<Fingerprint> current;  // the fingerprint tables are matched under, made on first need
  script::TableRecord table;           // the table as last read or written
  bool table_read = false;             // read from the store once
  bool table_usable = false;           // its fingerprint accepts `current`
  std::vector<char> servable;          // per row of `table`: check_rows() found it may be served

  // The fingerprint to match and make tables under. Caller holds `mutex`.
  const Fingerprint& fingerprint();
  // Reads the stored table (once only from a store this process can't write: the rows tuned here
  // live in memory); usable if its fingerprint accepts this process's. Caller holds `mutex`.
  void reload_table();
  // Marks the rows of `table` that may be served (see find()). Caller holds `mutex`.
  void check_rows();
  // The table row for `key`, if the usable table has one and it may be served: its choice built
  // this time and, unless given, it was chosen among this build's programs. Caller holds `mutex`.
  const DispatchEntry* find(const std::vector<std::uint64_t>& key) const;
  // Stores the table (one transaction) and rewrites the mirror. Caller holds `mutex`.
  void save_table();
  // The script's cross-process lock (a byte of store/compile.lock; none without a store), taken
  // to tune a key and to set a table, before `mutex`, waited for as long as the tuning options say
  // (then taken anyway), into `lock`. Caller holds no `mutex`.
  void lock_table(std::optional<cache::CompileLock>& lock);
  // tune.cpp: chooses a schedule for `key` with the tuning options: under the script's lock, then
  // `mutex`, which it lets go while measuring where there is a store. Caller holds neither.
  DispatchEntry tune(const std::vector<std::uint64_t>& key);
  // The built schedule `index`, or ScriptError.
  const ScheduleInfo& built(std::size_t index) const;
};

} // namespace kjit
