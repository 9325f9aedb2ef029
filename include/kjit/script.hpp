// Scripts (the tilus model): a kernel family built for every schedule of a tuning space, and a
// dispatch table from tuning keys of dynamic sizes to the schedule that serves them (docs/scripts.md).
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/cache.hpp>
#include <kjit/error.hpp>
#include <kjit/module.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kjit {

// A script can't be built or used as asked: a bad tuning space or pattern, no schedule that
// compiles (the message lists each one's first error), a size that has no key, a dispatch miss
// with no way to choose, a script that is not stored.
class ScriptError : public Error {
public:
  using Error::Error;
};

// One tuning parameter: a name (a C identifier, used as the macro name and in patterns) and its
// values in order.
struct TuningParameter {
  std::string name;
  std::vector<std::string> values;
};

// Where a dispatch table was made. A field saved as "*" matches anything; a table whose saved
// fingerprint does not match the current one is ignored and tuned again.
struct Fingerprint {
  std::string kjit_version;
  std::string arch;                // the script's target, "sm_90"
  std::string gpu;                 // device name, "none" without a usable driver
  std::string compute_capability;  // "9.0", "none" without a usable driver
  std::string cuda_version;        // the CUDA toolkit kjit was built with, "13.0"

  // True when a table saved with this fingerprint may serve `current` (fields equal, or "*" here).
  bool accepts(const Fingerprint& current) const;
  // "kjit_version=0.1.0 arch=sm_90 gpu=… compute_capability=… cuda_version=13.0"
  std::string text() const;
};

// This process's fingerprint for `arch` (loads the driver to read the device of the calling
// thread's current context, device 0's primary context when none is current; never throws).
Fingerprint current_fingerprint(const Arch& arch);

// tilus's tuning key: `n` rounded up to one of four buckets per octave
// (block = 1 << max(bit_length(n) - 3, 0), key = ceil(n / block) * block): the octave [1024, 2048)
// has the keys 1024, 1280, 1536, 1792; 1000 → 1024, 1100 → 1280, 1025 → 1280, 0..8 stay.
// Throws ScriptError above 2^63 (the key would not fit).
std::uint64_t tuning_key(std::uint64_t n);

// The folder name of a script under scripts/: snake_case ("MatmulF16" → "matmul_f16"), with every
// character outside [a-z0-9_] (slashes, dots, controls…) turned into '_', runs of '_' merged and
// trimmed, at most 96 bytes (longer names keep a head and a hash); "script" when nothing is left.
std::string script_folder_name(const std::string& name);

// One schedule of a built script.
struct ScheduleInfo {
  std::size_t index = 0;                                   // in the space's cartesian order
  std::vector<std::pair<std::string, std::string>> values;  // parameter → value, in space order
  std::string kernel;       // the name expression (pattern mode), empty in macro mode
  bool built = false;
  std::string program_key;  // the program's key (64 hex) when built
  std::string log;          // the compiler's log or the error, when not built
};

// One row of a dispatch table.
struct DispatchEntry {
  std::vector<std::uint64_t> key;  // one tuning key per size parameter
  std::size_t choice = 0;          // schedule index
  std::string how;                 // "timed", "cost", "given" or "single"
  // What the choice was made from: (schedule, median ms or cost), best first; empty for "given".
  std::vector<std::pair<std::size_t, double>> measured;
};

// The estimated cost of running `schedule` at tuning key `key` (lower is better; must be
// deterministic if tables are to agree across processes). NaN counts as +infinity.
using CostFunction = std::function<double(const ScheduleInfo& schedule, const std::vector<std::uint64_t>& key)>;

// One timed run of a schedule: launch it for `key` (e.g. BuiltScript::kernel) and return the
// elapsed milliseconds.
struct TimingRun {
  const ScheduleInfo& schedule;
  const Binary& binary;
  const std::vector<std::uint64_t>& key;
};
using Timer = std::function<double(const TimingRun& run)>;

// How a miss in the dispatch table is resolved: a timer (warm-up runs, then the median of
// `repeat` runs) is preferred to a cost function; with neither, a miss is a ScriptError (unless
// only one schedule built: it serves every key without timing).
// Both are called on the choosing thread with the script's lock held: they may call
// BuiltScript::kernel() and binary(), not choose() or dispatch().
struct TuningOptions {
  Timer timer;
  CostFunction cost;
  unsigned warmup = 2;
  unsigned repeat = 5;
  // The fingerprint tables are made and matched under; empty kjit_version: current_fingerprint().
  Fingerprint fingerprint;
  // How long to wait for another process tuning the same script before tuning anyway: 0 to 86400
  // seconds (set_tuning throws ScriptError otherwise).
  double lock_timeout_s = 600;
};

class BuiltScript;

// A kernel family: one source, built once per schedule (the cartesian product of `space`).
// Plain value type. The script hash covers name, source, headers, space, pattern, options, sizes
// and arch.
struct Script {
  std::string name;    // names the scripts/ folder (see script_folder_name)
  std::string source;  // CUDA C++
  std::map<std::string, std::string> headers;  // in-memory headers, as Program::headers
  std::vector<TuningParameter> space;
  // Name-expression pattern such as "kern<{BLOCK},{UNROLL}>": each schedule's program asks for it
  // with the values substituted. Empty: the values are passed as macros (-DBLOCK=64 …).
  std::string name_expression;
  std::vector<std::string> options;  // as Program::options
  Arch arch;                         // auto: config.arch, then the current device
  std::vector<std::string> size_names{"n"};  // the dynamic sizes dispatch() takes, in order
  // The name of each schedule's Program (its folder is searched for quoted includes, as for
  // program_from_file). Empty: `name`.
  std::string program_name;

  // Compiles every schedule as one batch (Cache::get_many, worker processes), records the
  // schedules (failures with their logs) in the store in one transaction, and writes the mirror
  // scripts/<folder>/<hash>/. Throws ScriptError for a bad space or pattern, or when no schedule
  // builds (nothing usable; the failures are still recorded); what Cache::prepare throws.
  BuiltScript build(Cache& cache, const BatchOptions& batch = {}) const;
};

// A built script: its schedules, binaries and dispatch table. Copies share state; thread-safe.
// The Cache it was built with must outlive it. A key with a row is served while another thread
// tunes a new key (with a disk tier; without one, every call waits for the tuning). In a fork()ed
// child, choose() and the table calls throw ScriptError where a thread of the parent held the
// script at fork() (inside choose() or a table call; without a disk tier, for longest while
// tuning), never hang; a miss there is refused as the parent's store is (StoreError): build the
// script again in a child. A timer or cost function that calls choose(), set_tuning or a table
// call of the script it tunes gets a ScriptError.
class BuiltScript {
public:
  struct State;

  const std::string& name() const;
  const std::string& folder() const;  // script_folder_name(name())
  const std::string& hash() const;    // 64 hex digits
  const Arch& arch() const;
  const std::vector<std::string>& size_names() const;
  const std::vector<ScheduleInfo>& schedules() const;
  // The binary of a built schedule. Throws ScriptError for a bad or failed index.
  std::shared_ptr<const Binary> binary(std::size_t index) const;
  // The schedule's kernel loaded in `context` (`kernel_name` for macro mode; the pattern's name
  // expression otherwise). Throws ScriptError, CudaError.
  Kernel kernel(std::size_t index, const Context& context, const std::string& kernel_name = {}) const;

  // Throws ScriptError for a lock_timeout_s that is not 0 to 86400 seconds.
  void set_tuning(const TuningOptions& options);
  // The schedule for these sizes (one per size name): from the table, else from the table as
  // another process may have stored it, else tuned under a cross-process lock (one process tunes
  // a script at a time) and stored in one transaction. Throws ScriptError.
  std::size_t choose(const std::vector<std::uint64_t>& sizes);
  // binary(choose(sizes)).
  std::shared_ptr<const Binary> dispatch(const std::vector<std::uint64_t>& sizes);
  template <typename... Sizes>
  std::shared_ptr<const Binary> dispatch_sizes(Sizes... sizes)
  {
    return dispatch({static_cast<std::uint64_t>(sizes)...});
  }
  // kernel(choose(sizes), context, kernel_name).
  Kernel dispatch_kernel(const Context& context, const std::vector<std::uint64_t>& sizes,
                         const std::string& kernel_name = {});

  // Replaces the table with `entries` (their keys are tuning keys, one row each; each choice a built schedule),
  // saved under `fingerprint` (use "*" fields to make it valid everywhere), under the script's
  // cross-process lock (not while another process tunes it). Throws ScriptError.
  void set_table(const std::vector<DispatchEntry>& entries, const Fingerprint& fingerprint);
  // The stored table and the fingerprint it was made under (empty when none is stored).
  std::vector<DispatchEntry> table() const;
  Fingerprint table_fingerprint() const;

private:
  friend struct Script;
  explicit BuiltScript(std::shared_ptr<State> state) : m_state(std::move(state)) {}
  std::shared_ptr<State> m_state;
};

// A stored script, as `kjit script list` and `show` describe it.
struct ScriptSummary {
  std::string name;
  std::string folder;
  std::string hash;
  std::string arch;
  std::string name_expression;
  std::vector<TuningParameter> space;
  std::vector<std::string> size_names;
  std::vector<ScheduleInfo> schedules;
  std::int64_t created_unix = 0;
  Fingerprint fingerprint;  // of the table; empty without one
  std::vector<DispatchEntry> table;
};

// Every script stored in the cache's store, sorted by name then hash (damaged records left out).
std::vector<ScriptSummary> stored_scripts(const Cache& cache);

} // namespace kjit
