// Cache::get_many: threads that each own a worker process and call get(); the compile inside get()
// is delegated to the thread's worker, so lookup, single flight and storing stay the cache's own.
#include <kjit/cache.hpp>
#include <kjit/error.hpp>

#include "batch/worker.hpp"
#include "cache/cache_impl.hpp"
#include "kjit_build_config.hpp"
#include "config/log.hpp"
#include "rtc/compiler.hpp"

#include <algorithm>
#include <atomic>
#include <cxxabi.h>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>

namespace kjit {

namespace {

std::string folder_of(const std::string& path)
{
  return path.substr(0, path.rfind('/') + 1);
}

// The kjit-worker of this libkjit: next to the running program (the CLI, a packed application),
// next to libkjit itself, where this build installs it, else where this build made it (a Meson
// subproject's application); the last two only for the libkjit installed there or made by that
// build (a copied libkjit never runs what lies at its builder's paths). The first that can be run;
// the first place when none can (its error is the one reported).
std::string default_worker_path()
{
  std::vector<std::string> places;
  char buffer[4096];
  if (const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1); n > 0) {
    places.push_back(folder_of(std::string(buffer, static_cast<std::size_t>(n))) + "kjit-worker");
  }
  Dl_info library{};
  if (::dladdr(reinterpret_cast<void*>(&default_worker_path), &library) != 0 && library.dli_fname != nullptr &&
      library.dli_fname[0] == '/') {
    const std::string library_dir = folder_of(library.dli_fname);
    places.push_back(library_dir + "kjit-worker");
    const std::pair<const char*, const char*> owned[] = {{KJIT_INSTALLED_LIBDIR, KJIT_INSTALLED_WORKER},
                                                         {KJIT_BUILD_LIBDIR, KJIT_BUILD_WORKER}};
    // By where the folders lead: libkjit found through a relative RUNPATH is named as the loader
    // joined it (".../build/tests/capi/../../lib/libkjit.so.0.1", an app's
    // "$ORIGIN/subprojects/kjit/lib"), which names the build's folder without being its text.
    const auto real = [](const std::string& path) {
      char* resolved = ::realpath(path.c_str(), nullptr);
      std::string out = resolved != nullptr ? resolved : "";
      std::free(resolved);
      return out;
    };
    const std::string real_library_dir = real(library_dir);
    for (const auto& [libdir, worker] : owned) {
      if (worker[0] != '\0' && !real_library_dir.empty() && real_library_dir == real(libdir)) {
        places.emplace_back(worker);
      }
    }
  }
  for (const std::string& place : places) {
    if (::access(place.c_str(), X_OK) == 0) {
      return place;
    }
  }
  return places.empty() ? std::string() : places.front();
}

// One batch thread's compiler: its worker process, replaced when lost; in-process without one.
class WorkerDelegate : public rtc::CompileDelegate {
public:
  // `compiler_environment` gives the Cache's key context's lines (asked when a worker starts: the
  // key of the item it compiles was made by then).
  WorkerDelegate(std::string path, double timeout_s, std::function<std::string()> compiler_environment)
    : m_path(std::move(path)), m_timeout_s(timeout_s), m_compiler_environment(std::move(compiler_environment))
  {
  }

  Binary compile(const Config& config, const Program& program, const Arch& arch) override
  {
    compiled = true;
    if (!m_worker && !m_in_process) {
      try {
        m_worker = std::make_unique<batch::Worker>(m_path, m_compiler_environment());
      } catch (const Error& e) {
        log::line(std::string("warning: ") + e.what() + "; compiling in-process");
        m_in_process = true;
      }
    }
    if (m_in_process) {
      return rtc::compile(config, program, arch);
    }
    try {
      return m_worker->compile(program, arch, config.cuda_home, m_timeout_s, pch);
    } catch (const batch::WorkerLost&) {
      m_worker.reset();  // the next item starts a fresh worker
      throw;
    } catch (const batch::WorkerMismatch& e) {
      log::line(std::string("warning: ") + e.what() + "; compiling in-process");
      m_worker.reset();
      m_in_process = true;
      return rtc::compile(config, program, arch);
    }
  }

  bool compiled = false;
  bool pch = false;  // for the current item

private:
  std::string m_path;
  double m_timeout_s;
  std::function<std::string()> m_compiler_environment;
  std::unique_ptr<batch::Worker> m_worker;
  bool m_in_process = false;
};

// The order to take items in: items sharing a PCH group next to each other (so each worker
// reuses its PCH), and whether each item should use PCH (its group has two or more items).
void plan(const std::vector<BatchItem>& items, bool use_pch, std::vector<std::size_t>& order, std::vector<bool>& pch)
{
  std::map<std::string, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < items.size(); ++i) {
    groups[batch::pch_group(items[i].program, items[i].arch.str())].push_back(i);
  }
  pch.assign(items.size(), false);
  for (const auto& [group, members] : groups) {
    for (std::size_t i : members) {
      order.push_back(i);
      pch[i] = use_pch && members.size() >= 2;
    }
  }
}

} // namespace

std::vector<BatchResult> Cache::get_many(const std::vector<BatchItem>& items, const BatchOptions& options)
{
  const Impl::ToolchainRowsAtEnd rows_at_end(*m_impl);
  std::vector<BatchResult> results(items.size());
  const std::string path = options.worker_path.empty() ? default_worker_path() : options.worker_path;
  unsigned jobs = options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<std::size_t>(jobs, items.size()));
  std::vector<std::size_t> order;
  std::vector<bool> use_pch;
  plan(items, options.pch, order, use_pch);
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex progress_mutex;
  std::exception_ptr stopped;  // what the progress callback threw (guarded by progress_mutex)
  const auto run = [&] {
    // The worker compiles with the NV_NVVM_VERSION this Cache's keys name, not the process's now.
    WorkerDelegate delegate(path, options.timeout_s, [this] { return m_impl->key_context().compiler_environment; });
    const rtc::ScopedCompileDelegate scope(&delegate);
    for (std::size_t n = next++; n < items.size(); n = next++) {
      const std::size_t i = order[n];
      delegate.compiled = false;
      delegate.pch = use_pch[i];
      BatchResult& result = results[i];
      try {
        result.binary = get(items[i].program, items[i].arch);
      } catch (const std::exception& e) {
        result.error = std::current_exception();
        result.message = e.what();
      }
      result.compiled = delegate.compiled;
      std::lock_guard lock(progress_mutex);
      ++done;
      if (options.progress && !stopped) {
        try {
          options.progress(done, items.size());
        } catch (abi::__forced_unwind&) {
          throw;  // pthread_cancel() of the caller inside the callback: caught here, glibc aborts
        } catch (...) {
          // On a batch thread it would end the process: the batch stops taking items instead,
          // and the caller gets it once every thread has finished its item.
          stopped = std::current_exception();
          next = items.size();
        }
      }
    }
  };
  std::vector<std::thread> threads;
  // However this thread leaves early (a thread that cannot be started, pthread_cancel() of the
  // caller), the batch's threads stop taking items and are joined first: a joinable std::thread
  // destroyed would end the process.
  struct JoinAll {
    std::vector<std::thread>& threads;
    std::atomic<std::size_t>& next;
    std::size_t end;
    ~JoinAll()
    {
      next = end;
      for (auto& thread : threads) {
        if (thread.joinable()) {
          thread.join();
        }
      }
    }
  } join_all{threads, next, items.size()};
  for (unsigned t = 1; t < jobs; ++t) {
    threads.emplace_back(run);
  }
  if (jobs > 0) {
    run();
  }
  for (auto& thread : threads) {
    thread.join();
  }
  if (stopped) {
    std::rethrow_exception(stopped);
  }
  return results;
}

} // namespace kjit
