// A separate process for the driver contract suite, since the driver is loaded once per process:
//   driver_child status   prints driver_status()
//   driver_child global   keeps a Kernel, a Module's context and a DeviceBuffer in globals and exits
//   driver_child static   the same in function-local statics made after the driver was loaded
//   driver_child shut_down_first   the driver shuts down before a kernel and a buffer are destroyed
//   driver_child arch     prints the arch `auto` resolves to
//   driver_child fork     as static, then fork()s: the child asks for a context and exits
//   driver_child fork_while_loading   fork()s while another thread is inside the driver's cuInit
#include <kjit/kjit.hpp>

#include "../common/sample_kernels.hpp"

#include <cstdio>
#include <dlfcn.h>
#include <cstring>
#include <optional>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// Constructed before main, so destroyed after every function-local static of kjit.
std::optional<kjit::Kernel> g_kernel;
std::optional<kjit::DeviceBuffer> g_buffer;

// An application's global that uses the driver in its destructor, after the driver shut down.
struct SynchronizeAtExit {
  std::optional<kjit::Context> context;
  ~SynchronizeAtExit()
  {
    try {
      if (context) {
        kjit::synchronize(*context);
      }
    } catch (const kjit::CudaError& e) {
      std::printf("at exit: %s\n", e.what());
    }
  }
} g_synchronize_at_exit;

} // namespace

int main(int argc, char** argv)
{
  const char* mode = argc > 1 ? argv[1] : "status";
  try {
    if (std::strcmp(mode, "status") == 0) {
      const kjit::DriverStatus& s = kjit::driver_status();
      std::printf("available: %d\nproblem: %d\nversion: %d\nreason: %s\n", s.available ? 1 : 0,
                  static_cast<int>(s.problem), s.driver_version, s.reason.c_str());
    } else if (std::strcmp(mode, "global") == 0) {
      g_kernel = kjit::get_kernel({"global_saxpy.cu", kjit::test::k_saxpy, {}, {}, {}}, "saxpy");
      g_buffer.emplace(kjit::Context::current(), 4096);
      g_synchronize_at_exit.context = kjit::Context::current();
      g_kernel->launch({{1}, {32}}, 1.0f, g_buffer->pointer(), g_buffer->pointer(), 32);
      std::printf("launched\n");
    } else if (std::strcmp(mode, "static") == 0) {
      static const kjit::Kernel kernel = kjit::get_kernel({"static_saxpy.cu", kjit::test::k_saxpy, {}, {}, {}}, "saxpy");
      static kjit::DeviceBuffer buffer(kjit::Context::current(), 4096);
      kernel.launch({{1}, {32}}, 1.0f, buffer.pointer(), buffer.pointer(), 32);
      std::printf("launched\n");
    } else if (std::strcmp(mode, "shut_down_first") == 0) {
      const kjit::Kernel kernel = kjit::get_kernel({"early_saxpy.cu", kjit::test::k_saxpy, {}, {}, {}}, "saxpy");
      kjit::DeviceBuffer buffer(kjit::Context::current(), 4096);
      kernel.launch({{1}, {32}}, 1.0f, buffer.pointer(), buffer.pointer(), 32);
      std::printf("launched\n");
      // The driver shuts down while kjit objects still live (its handler ran before kjit's).
      reinterpret_cast<void (*)()>(::dlsym(::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), "fake_cuda_shut_down"))();
    } else if (std::strcmp(mode, "fork") == 0) {
      // Made after the driver was loaded: exit() destroys them before kjit's exit handler runs.
      static const kjit::Kernel kernel = kjit::get_kernel({"fork_saxpy.cu", kjit::test::k_saxpy, {}, {}, {}}, "saxpy");
      static kjit::DeviceBuffer buffer(kjit::Context::current(), 4096);
      kernel.launch({{1}, {32}}, 1.0f, buffer.pointer(), buffer.pointer(), 32);
      std::printf("launched\n");
      std::fflush(stdout);
      const pid_t child = ::fork();
      if (child == 0) {
        std::printf("child available: %d (%s)\n", kjit::driver_status().available ? 1 : 0,
                    kjit::driver_status().reason.c_str());
        try {
          kjit::Context::primary(0);
          std::printf("child: a context\n");
        } catch (const kjit::CudaError& e) {
          std::printf("child: %s\n", e.what());
        }
        try {
          std::printf("child: compute capability %d\n", kjit::device_compute_capability(0));
        } catch (const kjit::CudaError& e) {
          std::printf("child: compute capability: %s (%d)\n", e.what(), static_cast<int>(e.result()));
        }
        std::fflush(stdout);
        std::exit(0);  // destroys the statics in the child too
      }
      int status = 0;
      ::waitpid(child, &status, 0);
      std::printf("child exited: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else if (std::strcmp(mode, "fork_while_loading") == 0) {
      // The fake, loaded first (kjit's dlopen finds this copy), holds cuInit until released.
      void* library = ::dlopen("libcuda.so.1", RTLD_NOW);
      const auto call = [&](const char* name) { reinterpret_cast<void (*)()>(::dlsym(library, name))(); };
      call("fake_cuda_hold_init");
      std::thread loader([&] {
        static_cast<void>(kjit::driver_status());
        call("fake_cuda_release_init");  // a load that never reached cuInit ends the wait below
      });
      // The loader is inside cuInit, kjit's load under way.
      if (!reinterpret_cast<bool (*)()>(::dlsym(library, "fake_cuda_wait_init_held"))()) {
        loader.join();
        std::printf("the driver's load never reached cuInit: %s\n", kjit::driver_status().reason.c_str());
        return 1;
      }
      const pid_t child = ::fork();
      if (child == 0) {
        ::alarm(30);  // a hang ends here, as SIGALRM
        const kjit::DriverStatus& status = kjit::driver_status();
        std::printf("child available: %d (%s)\n", status.available ? 1 : 0, status.reason.c_str());
        try {
          kjit::Context::primary(0);
        } catch (const kjit::CudaError& e) {
          std::printf("child: %s (%d)\n", e.what(), static_cast<int>(e.result()));
        }
        std::fflush(stdout);
        ::_exit(0);
      }
      int status = 0;
      ::waitpid(child, &status, 0);
      call("fake_cuda_release_init");
      loader.join();
      std::printf("child exited: %d\nparent available: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  kjit::driver_status().available ? 1 : 0);
    } else if (std::strcmp(mode, "arch") == 0) {
      std::printf("arch: %s\n", kjit::current_device_arch(kjit::supported_archs).str().c_str());
    }
    return 0;
  } catch (const kjit::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
