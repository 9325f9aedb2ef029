// Sections that compile: code parity (registers per path), cold (kjit miss vs direct NVRTC), heavy
// headers, and the in-process warm paths (memory tier, header tracking).
#include "sections.hpp"
#include "workload.hpp"

#include "util/hash.hpp"

#include "../tests/common/parity_kernels.hpp"
#include "rtc/compiler.hpp"

#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_library.hpp"
#include "rtc/toolkit.hpp"
#include "util/file.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <thread>

namespace bench {

namespace {

// NVRTC called directly for the real arch, as an application without kjit would: PTX and the
// whole-program cubin from one compile.
std::string direct_compile(const kjit::Program& program, const std::string& arch = "sm_90",
                           std::string* ptx_out = nullptr)
{
  const auto& nvrtc = kjit::rtc::nvrtc();
  const auto toolkit = kjit::rtc::find_toolkit(kjit::current_config());
  nvrtcProgram handle = nullptr;
  nvrtc.create_program(&handle, program.source.c_str(), program.name.c_str(), 0, nullptr, nullptr);
  for (const auto& expression : program.name_expressions) {
    nvrtc.add_name_expression(handle, expression.c_str());
  }
  std::vector<std::string> options = program.options;
  options.push_back("-arch=" + arch);
  for (const auto& dir : toolkit.include_dirs) {
    options.push_back("-I" + dir);
  }
  std::vector<const char*> argv;
  for (const auto& option : options) {
    argv.push_back(option.c_str());
  }
  nvrtc.compile_program(handle, static_cast<int>(argv.size()), argv.data());
  std::size_t size = 0;
  nvrtc.get_ptx_size(handle, &size);
  std::string ptx(size, '\0');
  nvrtc.get_ptx(handle, ptx.data());
  nvrtc.get_cubin_size(handle, &size);
  std::string cubin(size, '\0');
  nvrtc.get_cubin(handle, cubin.data());
  nvrtc.destroy_program(&handle);
  if (ptx_out != nullptr) {
    *ptx_out = std::move(ptx);
  }
  return cubin;
}

int registers(const std::vector<kjit::KernelInfo>& kernels, const std::string& name)
{
  for (const auto& kernel : kernels) {
    if (kernel.name == name) {
      return kernel.registers;
    }
  }
  return -1;
}

// User + system CPU time in `usage`, in ms.
double cpu_ms_of(const rusage& usage)
{
  const auto ms = [](const timeval& v) { return static_cast<double>(v.tv_sec) * 1e3 + static_cast<double>(v.tv_usec) / 1e3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

// User + system CPU time of this process (all threads: the mirror's too) and its waited-for
// children (the store's walk runs in one), in ms.
double cpu_ms()
{
  double total = 0;
  for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage usage{};
    ::getrusage(who, &usage);
    total += cpu_ms_of(usage);
  }
  return total;
}

double thread_cpu_ms()
{
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// The CPU time of exactly the NVRTC calls direct_compile() makes (create, compile, PTX, cubin,
// destroy), made on this thread while armed: "the compile" of a miss, the same work as the direct
// baseline's, so what a miss costs besides it is measured without NVRTC's variance from compile to
// compile. Everything else kjit does counts as its overhead, its own NVRTC calls (the log, the
// supported archs) and checks inside rtc::compile included. Installed once, by swapping the entry
// points of kjit's NVRTC table for timed ones (the table is kjit's own heap object).
namespace nvrtc_time {
thread_local bool t_armed = false;
thread_local double t_ms = 0;
kjit::rtc::NvrtcApi g_real{};

template <typename Call, typename... Args>
nvrtcResult timed(Call call, Args... args)
{
  const bool armed = t_armed;
  const double t = armed ? thread_cpu_ms() : 0;
  const nvrtcResult result = call(args...);
  if (armed) {
    t_ms += thread_cpu_ms() - t;
  }
  return result;
}

void install()
{
  static const bool installed = [] {
    auto& api = const_cast<kjit::rtc::NvrtcApi&>(kjit::rtc::nvrtc());
    g_real = api;
    api.create_program = [](auto... a) { return timed(g_real.create_program, a...); };
    api.compile_program = [](auto... a) { return timed(g_real.compile_program, a...); };
    api.get_ptx_size = [](auto... a) { return timed(g_real.get_ptx_size, a...); };
    api.get_ptx = [](auto... a) { return timed(g_real.get_ptx, a...); };
    api.get_cubin_size = [](auto... a) { return timed(g_real.get_cubin_size, a...); };
    api.get_cubin = [](auto... a) { return timed(g_real.get_cubin, a...); };
    api.destroy_program = [](auto... a) { return timed(g_real.destroy_program, a...); };
    return true;
  }();
  std::ignore = installed;
}

// Arms the timer on this thread for its lifetime.
struct Armed {
  Armed() { install(); t_armed = true; }
  ~Armed() { t_armed = false; }
  Armed(const Armed&) = delete;
  Armed& operator=(const Armed&) = delete;
};
} // namespace nvrtc_time

// The CPU time of the whole rtc::compile() calls a Cache makes on this thread (its NVRTC calls
// plus kjit's checks and log around them): the span earlier runs called "the compile".
class TimedCompiles final : public kjit::rtc::CompileDelegate {
public:
  kjit::Binary compile(const kjit::Config& config, const kjit::Program& program, const kjit::Arch& arch) override
  {
    const double t = thread_cpu_ms();
    kjit::Binary binary = kjit::rtc::compile(config, program, arch);  // in-process: no delegate inside
    ms += thread_cpu_ms() - t;
    return binary;
  }
  double ms = 0;
};

// CPU time per miss of `count` programs (salts from `salt`): the compile (NVRTC) and everything
// else (key, store write, mirror thread, store walk child) with the mirror off and on. The machine
// is shared, so wall time is noise; CPU time is what a path costs. `planted_index_lines` first
// writes a programs/index.txt of that many lines, as a store of that size has.
struct MissCpu {
  double compile = 0;       // the NVRTC calls direct_compile() also makes
  double compile_span = 0;  // the whole rtc::compile() (kjit's checks, the log) for comparison
  double rest = 0;    // the whole process (every thread, child processes)
  double caller = 0;  // the calling thread only (the mirror's thread left out)
};

MissCpu miss_cpu(const std::string& dir, bool mirror, int count, int salt, int planted_index_lines = 0)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  TimedCompiles timed;
  double spent = 0;
  double caller = 0;
  double nvrtc_ms = 0;
  double t = 0;
  {
    kjit::Cache cache(cache_config(dir, mirror));
    cache.get(kernel_program(salt - 1), arch);  // opens and walks the store, outside the block
    if (planted_index_lines > 0) {
      cache.flush_mirror();
      std::string lines;
      for (int i = 0; i < planted_index_lines; ++i) {
        lines += std::string(64, 'a') + "  sm_90  2026-01-01 00:00:00 UTC  planted_" + std::to_string(i) + ".cu\n";
      }
      std::ignore = kjit::util::write_file_atomic(dir + "/programs/index.txt", lines, 0644);
    }
    const kjit::rtc::ScopedCompileDelegate counting(&timed);
    const nvrtc_time::Armed armed;
    const double nvrtc_before = nvrtc_time::t_ms;
    t = cpu_ms();
    const double on_thread = thread_cpu_ms();
    for (int i = 0; i < count; ++i) {
      cache.get(kernel_program(salt + i), arch);
    }
    caller = thread_cpu_ms() - on_thread;
    nvrtc_ms = nvrtc_time::t_ms - nvrtc_before;
    cache.flush_mirror();
    std::ignore = cache.stats();  // waits for the commits on the store's writer thread
    spent = cpu_ms() - t;
  }
  return {nvrtc_ms / count, timed.ms / count, (spent - nvrtc_ms) / count, (caller - nvrtc_ms) / count};
}

} // namespace

void cold_compiles(Report& report, const Options& options)
{
  std::printf("\n[1] cold: kjit miss vs direct NVRTC for sm_90 (same programs, interleaved)\n");
  Folder folder("cold");
  kjit::Cache with_mirror(cache_config(folder.path() + "/mirror", true));
  kjit::Cache store_only(cache_config(folder.path() + "/store", false));
  direct_compile(kernel_program(999001));  // load both libraries before timing
  with_mirror.get(kernel_program(999002), kjit::Arch::parse("sm_90"));
  store_only.get(kernel_program(999002), kjit::Arch::parse("sm_90"));
  std::vector<double> direct;
  std::vector<double> two_step;
  std::vector<double> uncached;
  std::vector<double> mirrored;
  std::vector<double> stored;
  for (int i = 0; i < 20; ++i) {
    const kjit::Program program = kernel_program(1000 + i);
    auto t = Clock::now();
    direct_compile(program);
    direct.push_back(us_since(t) / 1000.0);
    t = Clock::now();
    {
      std::string log;
      const kjit::Binary ptx = kjit::compile(program, kjit::Arch::parse("compute_90"));
      kjit::rtc::cubin_from_ptx(program, ptx.ptx, kjit::Arch::parse("sm_90"), log);
    }
    two_step.push_back(us_since(t) / 1000.0);
    t = Clock::now();
    kjit::compile(program, kjit::Arch::parse("sm_90"));
    uncached.push_back(us_since(t) / 1000.0);
    t = Clock::now();
    with_mirror.get(program, kjit::Arch::parse("sm_90"));
    mirrored.push_back(us_since(t) / 1000.0);
    t = Clock::now();
    store_only.get(program, kjit::Arch::parse("sm_90"));
    stored.push_back(us_since(t) / 1000.0);
  }
  // The first miss after opening a store (as in a fresh process): the store's "checked" stamp,
  // left by the last Cache that wrote it, spares the walk before the first write.
  std::vector<double> first_direct;
  std::vector<double> first_miss;
  kjit::Cache(cache_config(folder.path() + "/reopen", false)).get(kernel_program(3999), kjit::Arch::parse("sm_90"));
  for (int i = 0; i < 7; ++i) {
    auto t = Clock::now();
    direct_compile(kernel_program(3000 + i));
    first_direct.push_back(us_since(t) / 1000.0);
    kjit::Cache reopened(cache_config(folder.path() + "/reopen", false));  // a new Store each time
    t = Clock::now();
    reopened.get(kernel_program(4000 + i), kjit::Arch::parse("sm_90"));
    first_miss.push_back(us_since(t) / 1000.0);
  }
  const double d = percentile(direct, 50);
  const double m = percentile(mirrored, 50);
  const double s = percentile(stored, 50);
  report.note("cold", "direct NVRTC -arch=sm_90 p50 (4 KiB saxpy)", d, "ms");
  report.note("cold", "NVRTC compute_90 + nvJitLink sm_90 p50 (kjit's previous path)", percentile(two_step, 50), "ms");
  const double c = percentile(uncached, 50);
  report.note("cold", "kjit::compile p50 (no cache)", c, "ms");
  report.check("cold", "kjit::compile overhead over direct NVRTC", 100.0 * (c - d) / d, "%", 2.0);
  report.note("cold", "kjit miss p50, mirror on (default)", m, "ms");
  report.note("cold", "kjit miss p50, mirror off", s, "ms");
  report.note("cold", "kjit miss wall overhead over direct, mirror on (noise on a shared machine)", 100.0 * (m - d) / d, "%");
  report.note("cold", "kjit miss wall overhead over direct, mirror off", 100.0 * (s - d) / d, "%");
  const int n = options.quick ? 4 : 20;
  const MissCpu off = miss_cpu(folder.path() + "/cpu_off", false, n, 8000);
  const MissCpu on = miss_cpu(folder.path() + "/cpu_on", true, n, 8100);
  const MissCpu big = miss_cpu(folder.path() + "/cpu_index", true, n, 8200, 100000);
  report.note("cold", "CPU (user+sys) per miss: the compile (the NVRTC calls direct NVRTC makes), mirror off",
              off.compile, "ms");
  report.note("cold", "  the whole rtc::compile() call (kjit's checks and log inside it too)", off.compile_span, "ms");
  report.note("cold", "CPU per miss besides the compile, mirror off (whole process: the store's writer thread included)",
              off.rest, "ms");
  report.note("cold", "CPU per miss besides the compile, mirror on (whole process: the mirror's thread included)",
              on.rest, "ms");
  report.note("cold", "calling thread's CPU per miss besides the compile, mirror off (the caller's path)", off.caller,
              "ms");
  report.note("cold", "calling thread's CPU per miss besides the compile, mirror on", on.caller, "ms");
  report.note("cold", "CPU per miss besides the compile, mirror on, index.txt of 100 000 lines", big.rest, "ms");
  report.check("cold", "calling thread's CPU overhead over its compile, mirror off (the caller's path)",
               100.0 * off.caller / off.compile, "%", 2.0);
  report.check("cold", "calling thread's CPU overhead over its compile, mirror on (the caller's path)",
               100.0 * on.caller / on.compile, "%", 2.0);
  report.check("cold", "whole process's CPU overhead over its compile, mirror off", 100.0 * off.rest / off.compile,
               "%", 2.0);
  report.check("cold", "whole process's CPU overhead over its compile, mirror on", 100.0 * on.rest / on.compile, "%",
               2.0);
  {
    // The same first miss in a store of scale_entries entries. Left by a process that walked it
    // (its "checked" stamp matches): no walk. Without the stamp (a write by another program, a
    // store from before stamps): the walk before the first write reads every page of the store
    // (Store::check in a child process), so it grows with the store.
    const int entries = options.quick ? 1000 : options.scale_entries;
    const std::string dir = folder.path() + "/big";
    populate(dir, entries, 200000);
    const std::string n = std::to_string(entries);
    for (const bool stamped : {true, false}) {
      if (!stamped) {
        std::ignore = ::unlink((dir + "/store/checked").c_str());
      }
      kjit::Cache cache(cache_config(dir, false));
      rusage before{};
      ::getrusage(RUSAGE_CHILDREN, &before);
      const auto t = Clock::now();
      cache.get(kernel_program(stamped ? 5999 : 5998), kjit::Arch::parse("sm_90"));
      const double wall = us_since(t) / 1000.0;
      rusage after{};
      ::getrusage(RUSAGE_CHILDREN, &after);
      const std::string how = stamped ? "stamped, not walked" : "no stamp, walked";
      report.note("cold", "first miss in a store of " + n + " entries (" + how + ")", wall, "ms");
      report.note("cold", "  CPU of its walk (child processes), " + how,
                  cpu_ms_of(after) - cpu_ms_of(before), "ms");
    }
  }
  const double fd = percentile(first_direct, 50);
  const double fm = percentile(first_miss, 50);
  report.note("cold", "first miss after opening the store (stamped: not walked), mirror off", fm, "ms");
  report.note("cold", "its overhead over direct NVRTC", 100.0 * (fm - fd) / fd, "%");
}

void code_parity(Report& report, const Options&)
{
  std::printf("\n[0] code parity: registers per kernel, NVRTC direct vs kjit vs the nvJitLink paths\n");
  std::printf("%-8s %-28s %7s %5s %9s %5s %9s %9s\n", "arch", "kernel", "direct", "kjit",
              "ptx-link", "lto", "ptx<-80", "lto<-80");
  const kjit::Program program = kjit::test::parity_program();
  int mismatches = 0;
  int worse_relocatable = 0;
  int worse_lto = 0;
  int cases = 0;
  int cross_differs = 0;
  // The IRs of an sm_80 compile, turned into cubins for the other archs (cross-arch reuse).
  std::string ptx80;
  direct_compile(program, "sm_80", &ptx80);
  const std::string ltoir80 = kjit::rtc::compile_ltoir(kjit::current_config(), program, kjit::Arch::parse("sm_80"));
  for (const char* arch_name : {"sm_80", "sm_90", "sm_120"}) {
    const kjit::Arch arch = kjit::Arch::parse(arch_name);
    std::string ptx;
    const std::string reference = direct_compile(program, arch_name, &ptx);
    const kjit::Binary binary = kjit::compile(program, arch);
    std::string log;
    const std::string relocatable = kjit::rtc::cubin_from_ptx(program, ptx, arch, log);
    const std::string ltoir = kjit::rtc::compile_ltoir(kjit::current_config(), program, arch);
    const std::string lto = kjit::rtc::cubin_from_ltoir(program, ltoir, arch, log);
    const auto direct_kernels = kjit::read_kernels(reference);
    const auto kjit_kernels = binary.kernels();
    const auto relocatable_kernels = kjit::read_kernels(relocatable);
    const auto lto_kernels = kjit::read_kernels(lto);
    std::vector<kjit::KernelInfo> ptx80_kernels;
    std::vector<kjit::KernelInfo> lto80_kernels;
    try {
      ptx80_kernels = kjit::read_kernels(kjit::rtc::cubin_from_ptx(program, ptx80, arch, log));
      lto80_kernels = kjit::read_kernels(kjit::rtc::cubin_from_ltoir(program, ltoir80, arch, log));
    } catch (const kjit::Error& e) {
      std::printf("%-8s cross-arch from sm_80: %s\n", arch_name, e.what());
    }
    for (const auto& kernel : direct_kernels) {
      const int ours = registers(kjit_kernels, kernel.name);
      const int reloc = registers(relocatable_kernels, kernel.name);
      const int linked = registers(lto_kernels, kernel.name);
      const int from_ptx80 = registers(ptx80_kernels, kernel.name);
      const int from_lto80 = registers(lto80_kernels, kernel.name);
      std::printf("%-8s %-28s %7d %5d %9d %5d %9d %9d\n", arch_name, kernel.name.substr(0, 28).c_str(),
                  kernel.registers, ours, reloc, linked, from_ptx80, from_lto80);
      cross_differs += from_lto80 != kernel.registers;
      ++cases;
      mismatches += ours != kernel.registers;
      worse_relocatable += reloc > kernel.registers;
      worse_lto += linked > kernel.registers;
    }
    std::printf("%-8s functions: direct %zu, kjit %zu, ptx-link %zu, lto %zu\n", arch_name,
                kjit::cubin_functions(reference).size(), kjit::cubin_functions(binary.cubin).size(),
                kjit::cubin_functions(relocatable).size(), kjit::cubin_functions(lto).size());
  }
  report.note("code parity", "kernel x arch cases", cases, "count");
  report.check("code parity", "kjit registers differ from NVRTC direct", mismatches, "count", 0);
  report.note("code parity", "PTX -> nvJitLink (relocatable) uses more registers", worse_relocatable, "count");
  report.note("code parity", "NVRTC -dlto -> nvJitLink -lto uses more registers", worse_lto, "count");
}

void batch_compiles(Report& report, const Options&)
{
  std::printf("\n[9] batch: 8 heavy-header variants, one at a time vs Cache::get_many with 2 workers (PCH off, on)\n");
  Folder folder("batch");
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  std::vector<kjit::BatchItem> serial_items;
  std::vector<kjit::BatchItem> batch_items;
  std::vector<kjit::BatchItem> pch_items;
  for (int i = 0; i < 8; ++i) {
    serial_items.push_back({heavy_program(5000 + i), arch});
    batch_items.push_back({heavy_program(6000 + i), arch});
    pch_items.push_back({heavy_program(7000 + i), arch});
  }
  kjit::Cache serial(cache_config(folder.path() + "/serial"));
  serial.get(heavy_program(4999), arch);  // load NVRTC before timing
  auto t = Clock::now();
  for (const auto& item : serial_items) {
    serial.get(item.program, item.arch);
  }
  const double one_at_a_time = us_since(t) / 1e6;
  kjit::Cache batched(cache_config(folder.path() + "/batch"));
  kjit::BatchOptions options;
  options.jobs = 2;
  options.pch = false;
  options.worker_path = KJIT_BENCH_WORKER;  // empty without the CLI: in-process
  t = Clock::now();
  std::size_t failed = 0;
  for (const auto& result : batched.get_many(batch_items, options)) {
    failed += result.binary ? 0 : 1;
  }
  const double parallel = us_since(t) / 1e6;
  kjit::Cache with_pch(cache_config(folder.path() + "/pch"));
  options.pch = true;
  t = Clock::now();
  for (const auto& result : with_pch.get_many(pch_items, options)) {
    failed += result.binary ? 0 : 1;
  }
  const double pch = us_since(t) / 1e6;
  report.note("batch", "8 heavy variants one at a time", one_at_a_time, "s");
  report.note("batch", "8 heavy variants, get_many with 2 workers", parallel, "s");
  report.note("batch", "failed items", static_cast<double>(failed), "count");
  report.note("batch", "8 heavy variants, get_many with 2 workers and PCH", pch, "s");
  report.check("batch", "speed-up of get_many over one at a time", one_at_a_time / parallel, "x", 1.6, true);
  report.check("batch", "speed-up of get_many with PCH over one at a time", one_at_a_time / pch, "x", 3.0, true);
}

void memory_tier(Report& report, const Options&)
{
  std::printf("\n[2] warm, memory tier\n");
  Folder folder("memory");
  kjit::Cache cache(cache_config(folder.path()));
  const kjit::Program program = kernel_program(7);
  const auto prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
  cache.get(prepared);
  std::vector<double> prepared_us;
  std::vector<double> hashed_us;
  for (int batch = 0; batch < 200; ++batch) {
    auto t = Clock::now();
    for (int i = 0; i < 1000; ++i) {
      cache.get(prepared);
    }
    prepared_us.push_back(us_since(t) / 1000.0);
    t = Clock::now();
    for (int i = 0; i < 100; ++i) {
      cache.get(program, kjit::Arch::parse("sm_90"));
    }
    hashed_us.push_back(us_since(t) / 100.0);
  }
  report.check("warm, memory tier", "prepared program, p50 per lookup", percentile(prepared_us, 50), "us", 0.05);
  report.note("warm, memory tier", "prepared program, p99 (of 1000-lookup batches)", percentile(prepared_us, 99), "us");
  report.check("warm, memory tier", "4 KiB source hashed each time, p50 per lookup", percentile(hashed_us, 50), "us", 2.0);
  report.note("warm, memory tier", "4 KiB source hashed each time, p99", percentile(hashed_us, 99), "us");
  std::vector<double> sha_us;  // what a lookup by SHA-256 of the source would pay before anything else
  for (int batch = 0; batch < 200; ++batch) {
    const auto t = Clock::now();
    for (int i = 0; i < 100; ++i) {
      kjit::util::sha256(program.source);
    }
    sha_us.push_back(us_since(t) / 100.0);
  }
  report.note("warm, memory tier", "SHA-256 of the 4 KiB source alone, p50", percentile(sha_us, 50), "us");
}

void heavy_headers(Report& report, const Options&)
{
  std::printf("\n[6] heavy headers (cuda_fp16.h, cuda_bf16.h, cuda/std)\n");
  Folder folder("heavy");
  kjit::Cache cache(cache_config(folder.path()));
  auto t = Clock::now();
  cache.get(heavy_program(0), kjit::Arch::parse("sm_90"));
  report.note("heavy headers", "cold compile (first in process)", us_since(t) / 1000.0, "ms");
  t = Clock::now();
  cache.get(heavy_program(0), kjit::Arch::parse("sm_90"));
  report.note("heavy headers", "warm, memory tier (hashed)", us_since(t), "us");
  {
    kjit::Cache fresh(cache_config(folder.path()));
    t = Clock::now();
    fresh.get(heavy_program(0), kjit::Arch::parse("sm_90"));
    report.note("heavy headers", "warm, LMDB (new Cache object)", us_since(t), "us");
  }
  const int variants = 8;
  t = Clock::now();
  for (int i = 1; i <= variants; ++i) {
    cache.get(heavy_program(i), kjit::Arch::parse("sm_90"));
  }
  const double serial = us_since(t) / 1000.0;
  report.note("heavy headers", "8 variants, one thread, per variant", serial / variants, "ms");
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  t = Clock::now();
  std::vector<std::thread> threads;
  for (unsigned c = 0; c < cores; ++c) {
    threads.emplace_back([&, c] {
      for (int i = static_cast<int>(c); i < variants; i += static_cast<int>(cores)) {
        cache.get(heavy_program(100 + i), kjit::Arch::parse("sm_90"));
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  const double parallel = us_since(t) / 1000.0;
  report.check("heavy headers", "8 variants on all " + std::to_string(cores) + " cores: speed-up", serial / parallel,
               "x", 0.75 * cores, true);
  // The same with kjit::compile() (no cache) shows what NVRTC itself allows.
  t = Clock::now();
  kjit::compile(heavy_program(200), kjit::Arch::parse("sm_90"));
  kjit::compile(heavy_program(201), kjit::Arch::parse("sm_90"));
  const double direct_serial = us_since(t);
  t = Clock::now();
  std::thread first([] { kjit::compile(heavy_program(202), kjit::Arch::parse("sm_90")); });
  std::thread second([] { kjit::compile(heavy_program(203), kjit::Arch::parse("sm_90")); });
  first.join();
  second.join();
  report.note("heavy headers", "2 uncached compiles on 2 threads: speed-up (NVRTC alone)", direct_serial / us_since(t),
              "x");
  t = Clock::now();
  cache.get(heavy_program(0), kjit::Arch::parse("sm_80"));
  report.note("heavy headers", "same program, other real arch (NVRTC runs again)", us_since(t) / 1000.0, "ms");
  report.add({"heavy headers", "PTX reused when only the real arch differs", 0, "bool", "yes", 0});
}

void header_tracking(Report& report, const Options&)
{
  std::printf("\n[8] header tracking: a program with 200 headers through -I\n");
  Folder folder("headers");
  const std::string inc = folder.path() + "/include";
  ::mkdir(inc.c_str(), 0700);
  std::string source;
  for (int i = 0; i < 200; ++i) {
    kjit::util::write_file_atomic(inc + "/h" + std::to_string(i) + ".h",
                                  "#define H" + std::to_string(i) + " " + std::to_string(i) + "\n");
    source += "#include <h" + std::to_string(i) + ".h>\n";
  }
  source += "extern \"C\" __global__ void many(int* p) { *p = H199; }\n";
  const kjit::Program program{"many.cu", source, {}, {"-I" + inc}, {}};
  kjit::Cache cache(cache_config(folder.path() + "/cache"));
  cache.get(program, kjit::Arch::parse("sm_90"));
  std::vector<double> samples;
  for (int i = 0; i < 200; ++i) {
    const auto t = Clock::now();
    cache.get(program, kjit::Arch::parse("sm_90"));
    samples.push_back(us_since(t));
  }
  report.note("header tracking", "warm lookup, 200 headers (200 stat calls), p50", percentile(samples, 50), "us");
  report.note("header tracking", "warm lookup, 200 headers, p99", percentile(samples, 99), "us");
  report.check("header tracking", "headers re-hashed on warm lookups", static_cast<double>(cache.stats().header_rehashes),
               "count", 0);
}

} // namespace bench
