// kjit script tune: times every schedule of a script on the GPU for the sizes given, and stores
// the winners in its dispatch table; without a GPU, says so and fails (exit 1).
#include "script_commands.hpp"

#include "cache_args.hpp"
#include "script_args.hpp"

#include <kjit/driver.hpp>
#include <kjit/stream.hpp>

#include <cstdio>
#include <cstring>
#include <memory>

namespace kjit::cli {

namespace {

constexpr const char* k_synopsis =
  "kjit script tune FILE --name NAME --space NAME=V1,V2 [--space …] [--name-expr PATTERN] [--sizes N,M]\n"
  "                 --arch ARCH [-D…] [-I…] [-X…] --at SIZES [--at …] --grid X[,Y,Z] --block X[,Y,Z]\n"
  "                 [--arg TYPE:VALUE …] [--shared BYTES] [--kernel NAME] [--warmup N] [--repeat N] [--cache-dir DIR]";

// What names a number in a launch: the sizes of the key being tuned and the schedule's values.
struct Names {
  const std::vector<std::string>& size_names;
  const std::vector<std::uint64_t>& key;
  const ScheduleInfo& schedule;
};

std::uint64_t term_value(const std::string& term, const Names& names)
{
  if (!term.empty() && term.find_first_not_of("0123456789") == std::string::npos && term.size() <= 19) {
    return std::stoull(term);
  }
  for (std::size_t i = 0; i < names.size_names.size(); ++i) {
    if (names.size_names[i] == term) {
      return names.key[i];
    }
  }
  for (const auto& [name, value] : names.schedule.values) {
    if (name == term && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
      return std::stoull(value);
    }
  }
  throw UsageError{"'" + term + "' is neither a number, nor a size name, nor a tuning parameter with a number", ""};
}

// "n/BLOCK", "BLOCK*4", "256": terms joined by * and / (rounding up), left to right.
std::uint64_t value_of(const std::string& expression, const Names& names)
{
  std::uint64_t value = 0;
  char op = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= expression.size(); ++i) {
    if (i < expression.size() && expression[i] != '*' && expression[i] != '/') {
      continue;
    }
    const std::uint64_t term = term_value(expression.substr(start, i - start), names);
    if (op == 0) {
      value = term;
    } else if (op == '*') {
      value *= term;
    } else if (term == 0) {
      throw UsageError{"'" + expression + "' divides by 0", ""};
    } else {
      value = (value + term - 1) / term;
    }
    op = i < expression.size() ? expression[i] : 0;
    start = i + 1;
  }
  return value;
}

Dim3 dim3_of(const std::string& text, const Names& names)
{
  const std::vector<std::string> parts = split(text, ',');
  if (parts.size() > 3) {
    throw UsageError{"'" + text + "': at most three dimensions (X,Y,Z)", ""};
  }
  unsigned d[3] = {1, 1, 1};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    d[i] = static_cast<unsigned>(value_of(parts[i], names));
  }
  return Dim3(d[0], d[1], d[2]);
}

// Times one schedule's launch for one key: the kernel arguments made from --arg (each buffer a
// zeroed device allocation of its bytes), CUDA events around each launch.
class LaunchTimer {
public:
  LaunchTimer(const po::variables_map& vm, const BuiltScript& built) : m_vm(vm), m_built(built) {}

  double operator()(const TimingRun& run)
  {
    const Names names{m_built.size_names(), run.key, run.schedule};
    if (m_schedule != run.schedule.index || m_key != run.key) {
      prepare(names);
    }
    LaunchConfig config;
    config.grid = dim3_of(m_vm["grid"].as<std::string>(), names);
    config.block = dim3_of(m_vm["block"].as<std::string>(), names);
    config.shared_bytes = m_vm.count("shared") != 0 ? static_cast<unsigned>(value_of(m_vm["shared"].as<std::string>(), names)) : 0;
    Event start(m_context);
    Event end(m_context);
    start.record_default();
    m_kernel->launch_raw(config, m_pointers.data(), m_slots.size());
    end.record_default();
    return elapsed_ms(start, end);
  }

private:
  void prepare(const Names& names)
  {
    m_kernel = std::make_unique<Kernel>(m_built.kernel(names.schedule.index, m_context,
                                                       m_vm.count("kernel") != 0 ? m_vm["kernel"].as<std::string>() : ""));
    m_buffers.clear();
    m_slots.clear();
    const auto specs = m_vm.count("arg") != 0 ? m_vm["arg"].as<std::vector<std::string>>() : std::vector<std::string>{};
    m_slots.resize(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const std::string& spec = specs[i];
      const auto colon = spec.find(':');
      const std::string type = spec.substr(0, colon);
      const std::string value = colon == std::string::npos ? "" : spec.substr(colon + 1);
      std::uint64_t& slot = m_slots[i];
      if (type == "buffer") {
        const std::size_t bytes = value_of(value, names);
        m_buffers.emplace_back(m_context, bytes);
        m_buffers.back().upload(std::vector<char>(bytes).data(), bytes);
        slot = m_buffers.back().pointer();
      } else if (type == "i32" || type == "u32") {
        const auto v = static_cast<std::uint32_t>(value_of(value, names));
        std::memcpy(&slot, &v, sizeof v);
      } else if (type == "i64" || type == "u64") {
        slot = value_of(value, names);
      } else if (type == "f32") {
        const float v = std::stof(value);
        std::memcpy(&slot, &v, sizeof v);
      } else {
        throw UsageError{"--arg " + spec + ": expected buffer:BYTES, i32:, u32:, i64:, u64: or f32:VALUE", ""};
      }
    }
    m_pointers.clear();
    for (std::uint64_t& slot : m_slots) {
      m_pointers.push_back(&slot);
    }
    m_pointers.push_back(nullptr);
    m_schedule = names.schedule.index;
    m_key = names.key;
  }

  const po::variables_map& m_vm;
  const BuiltScript& m_built;
  Context m_context = Context::current();
  std::unique_ptr<Kernel> m_kernel;
  std::vector<DeviceBuffer> m_buffers;
  std::vector<std::uint64_t> m_slots;  // one 8-byte, 8-aligned slot per argument
  std::vector<void*> m_pointers;
  std::size_t m_schedule = SIZE_MAX;
  std::vector<std::uint64_t> m_key;
};

} // namespace

int script_tune(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  po::options_description hidden;
  po::positional_options_description positional;
  add_script_options(visible, hidden, positional);
  visible.add_options()
    ("at", po::value<std::vector<std::string>>()->composing()->required(), "sizes to tune for, one per size name: N[,M]")
    ("grid", po::value<std::string>()->required(), "grid: X[,Y,Z], each a product or quotient (rounded up) of numbers, sizes and parameters (n/BLOCK)")
    ("block", po::value<std::string>()->required(), "block: X[,Y,Z], as --grid")
    ("arg", po::value<std::vector<std::string>>()->composing(), "a kernel argument, in order: buffer:BYTES (zeroed), i32:, u32:, i64:, u64: or f32:VALUE")
    ("shared", po::value<std::string>(), "dynamic shared memory in bytes, as --grid")
    ("kernel", po::value<std::string>(), "the kernel's name (without --name-expr: the values are macros)")
    ("warmup", po::value<unsigned>()->default_value(2), "untimed runs per schedule")
    ("repeat", po::value<unsigned>()->default_value(5), "timed runs per schedule (the median counts)");
  po::variables_map vm;
  if (!parse_arguments(args, k_synopsis, visible, hidden, positional, vm)) {
    return 0;
  }
  // Before anything is built: tuning times launches, and there is nothing to launch them on.
  if (const DriverStatus& driver = driver_status(); !driver.available) {
    throw ScriptError("no GPU is present (" + driver.reason + "): tuning times each schedule on a GPU; give the "
                      "table instead with `kjit script set-table`, or tune with a cost function through the API "
                      "(docs/scripts.md)");
  }
  std::vector<std::vector<std::uint64_t>> at;
  for (const std::string& text : vm["at"].as<std::vector<std::string>>()) {
    std::vector<std::uint64_t> sizes;
    for (const std::string& size : split(text, ',')) {
      if (size.empty() || size.find_first_not_of("0123456789") != std::string::npos || size.size() > 19) {
        throw UsageError{"--at " + text + ": expected sizes, one per size name (e.g. 4096 or 4096,512)", ""};
      }
      sizes.push_back(std::stoull(size));
    }
    at.push_back(std::move(sizes));
  }
  BuiltScript built = build_from_arguments(vm);
  LaunchTimer timer(vm, built);
  TuningOptions tuning;
  tuning.timer = [&timer](const TimingRun& run) { return timer(run); };
  tuning.warmup = vm["warmup"].as<unsigned>();
  tuning.repeat = vm["repeat"].as<unsigned>();
  built.set_tuning(tuning);
  for (const auto& sizes : at) {
    built.choose(sizes);  // a key with a row keeps it: set-table replaces a table
  }
  std::printf("script %s (%s): dispatch table\n", one_line(built.name()).c_str(), built.hash().c_str());
  for (const DispatchEntry& e : built.table()) {
    std::printf("%s\n", row_text(e).c_str());
  }
  return 0;
}

} // namespace kjit::cli
