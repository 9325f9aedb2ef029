// Child-process modes: warm lookups in a fresh process, cold starts racing, trivial file reads.
#include "children.hpp"

#include "file_store.hpp"
#include "report.hpp"
#include "workload.hpp"

#include "util/dynamic_library.hpp"
#include "util/file.hpp"
#include "util/hash.hpp"

#include <cstdio>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace bench {

namespace {

long minor_faults()
{
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Looks up `count` cached kernels in a fresh process; prints total (open included), p50, p99, and
// the page faults the lookups took (first touches of the store's map: what grows with its size).
int warm_lookups(const std::string& dir, int count)
{
  std::vector<kjit::Program> programs;
  for (int i = 0; i < count; ++i) {
    programs.push_back(kernel_program(i));
  }
  const auto start = Clock::now();
  kjit::Cache cache(cache_config(dir));
  const double open_us = us_since(start);
  std::vector<double> samples;
  std::size_t bytes = 0;
  const long faults_before = minor_faults();
  for (const auto& program : programs) {
    const auto t = Clock::now();
    bytes += cache.get(program, kjit::Arch::parse("sm_90"))->cubin.size();
    samples.push_back(us_since(t));
  }
  const double total = us_since(start);
  const long faults = minor_faults() - faults_before;
  // The same lookups again through a second Cache (an empty memory tier) on the store this process
  // has open: every page they touch is mapped now, so this p50 is the store's own work without the
  // first touches a fresh process pays (what grows with the store's size, apart from the OS).
  std::vector<double> mapped;
  long faults_mapped = 0;
  {
    kjit::Cache again(cache_config(dir));
    const long before = minor_faults();
    for (const auto& program : programs) {
      const auto t = Clock::now();
      bytes += again.get(program, kjit::Arch::parse("sm_90"))->cubin.size();
      mapped.push_back(us_since(t));
    }
    faults_mapped = minor_faults() - before;
  }
  std::printf("p50_mapped_us: %f\n", percentile(mapped, 50));
  std::printf("faults_per_lookup: %f\nfaults_per_lookup_mapped: %f\n", static_cast<double>(faults) / count,
              static_cast<double>(faults_mapped) / count);
  std::printf("open_us: %f\ntotal_us: %f\np50_us: %f\np99_us: %f\ndisk_hits: %llu\ncompiles: %llu\nbytes: %zu\n",
              open_us, total, percentile(samples, 50), percentile(samples, 99),
              static_cast<unsigned long long>(cache.stats().disk_hits),
              static_cast<unsigned long long>(cache.stats().compiles), bytes);
  std::printf("nvrtc_loaded: %d\nnvjitlink_loaded: %d\n", kjit::util::library_is_loaded("libnvrtc") ? 1 : 0,
              kjit::util::library_is_loaded("libnvJitLink") ? 1 : 0);
  return 0;
}

// The same lookups against the file-per-entry baseline: key hash, file read, hash check.
int file_lookups(const std::string& dir, int count)
{
  std::vector<kjit::Program> programs;
  for (int i = 0; i < count; ++i) {
    programs.push_back(kernel_program(i));
  }
  const auto start = Clock::now();
  const FileStore store(dir);
  std::vector<double> samples;
  int found = 0;
  for (const auto& program : programs) {
    const auto t = Clock::now();
    const std::string key = kjit::util::to_hex(kjit::util::sha256(program.source + "\nsm_90\n13.0"));
    found += store.get(key).has_value();
    samples.push_back(us_since(t));
  }
  const double total = us_since(start);
  std::printf("total_us: %f\np50_us: %f\np99_us: %f\nfound: %d\n", total, percentile(samples, 50),
              percentile(samples, 99), found);
  return 0;
}

// A cold start racing other processes on the same kernels.
int cold_start(const std::string& dir, int count)
{
  kjit::Cache cache(cache_config(dir));
  for (int i = 0; i < count; ++i) {
    cache.get(kernel_program(900000 + i, 256), kjit::Arch::parse("sm_90"));
  }
  std::printf("compiles: %llu\n", static_cast<unsigned long long>(cache.stats().compiles));
  return 0;
}

int read_one_file(const std::string& path)
{
  std::error_code error;
  return kjit::util::read_file(path, error) ? 0 : 1;
}

} // namespace

int run_child(const std::vector<std::string>& args)
{
  if (args.size() < 2 || args[0].rfind("--child-", 0) != 0) {
    return -1;
  }
  const std::string& mode = args[0];
  const int count = args.size() > 2 ? std::stoi(args[2]) : 1;
  if (mode == "--child-warm") {
    return warm_lookups(args[1], count);
  }
  if (mode == "--child-files") {
    return file_lookups(args[1], count);
  }
  if (mode == "--child-cold") {
    return cold_start(args[1], count);
  }
  if (mode == "--child-populate") {
    populate(args[1], count);
    return 0;
  }
  if (mode == "--child-read") {
    return read_one_file(args[1]);
  }
  return -1;
}

ChildRun spawn_program(const std::string& path, const std::vector<std::string>& args, std::string* output)
{
  ChildRun run;
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  for (const auto& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return run;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  const auto start = Clock::now();
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t got; spawned == 0 && (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  if (spawned != 0) {
    return run;
  }
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  run.wall_us = us_since(start);
  run.cpu_us = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 +
               static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  run.minor_faults = usage.ru_minflt;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (output != nullptr) {
    *output = text;
  }
  return run;
}

std::string beside_self(const std::string& name)
{
  char self[4096] = {};
  if (::readlink("/proc/self/exe", self, sizeof self - 1) < 0) {
    return name;
  }
  const std::string path = self;
  return path.substr(0, path.rfind('/') + 1) + name;
}

double spawn_self(const std::vector<std::string>& args, std::string* output)
{
  char self[4096] = {};
  if (::readlink("/proc/self/exe", self, sizeof self - 1) < 0) {
    return -1;
  }
  return spawn_program(self, args, output).wall_us;
}

double field(const std::string& output, const std::string& key)
{
  const auto at = ("\n" + output).find("\n" + key + ": ");
  return at == std::string::npos ? 0.0 : std::stod(output.substr(at + key.size() + 2));
}

} // namespace bench
