// Objects kept until exit: the driver shuts down during exit, and kjit must not call it after that.
#include <boost/test/unit_test.hpp>

#include "../unit/fixture.hpp"

BOOST_AUTO_TEST_SUITE(lifetime)

namespace {

// Runs driver_child `mode` cold then warm, each launching; returns the driver calls of both runs.
// Each run's output must contain `expected`.
std::string run_twice(const std::string& mode, const std::string& expected = "launched")
{
  kjit::test::TempDir tmp;
  const std::string log = tmp.path() + "/calls.log";
  const std::string command = "KJIT_CACHE_DIR='" + tmp.path() + "/cache' KJIT_FAKE_CUDA_LOG='" + log + "' '" +
                              kjit::test::helper("KJIT_TEST_DRIVER_CHILD") + "' " + mode + " 2>&1";
  for (const char* run : {"cold", "warm"}) {
    std::string output;
    const int status = kjit::test::run(command, output);
    BOOST_TEST(status == 0, run << ": " << output);
    BOOST_TEST(output.find("launched") != std::string::npos, run << ": " << output);
    BOOST_TEST(output.find(expected) != std::string::npos, run << ": " << output);
    BOOST_TEST(output.find("after the library was unloaded") == std::string::npos, run << ": " << output);
  }
  return kjit::test::read_text(log);
}

std::size_t count(const std::string& calls, const std::string& line)
{
  std::size_t n = 0;
  for (std::size_t at = calls.find(line); at != std::string::npos; at = calls.find(line, at + 1)) {
    ++n;
  }
  return n;
}

} // namespace

// Globals constructed before main are destroyed after the driver shut down at exit (its handler
// was registered when it initialized, later than their destructors): they must not call it, and
// a global's destructor that synchronizes gets a CudaError instead.
BOOST_AUTO_TEST_CASE(globals_holding_kernels_and_buffers_exit_without_calling_the_shut_down_driver)
{
  const std::string calls = run_twice("global", "at exit: the process is exiting");
  BOOST_TEST(calls.find("VIOLATION") == std::string::npos, calls);
  BOOST_TEST(count(calls, "\ncuLaunchKernel saxpy") == 2u, calls);
}

// Statics made after the driver was loaded are destroyed while it still runs: they clean up.
BOOST_AUTO_TEST_CASE(statics_made_after_the_driver_loaded_unload_and_free_at_exit)
{
  const std::string calls = run_twice("static");
  BOOST_TEST(calls.find("VIOLATION") == std::string::npos, calls);
  BOOST_TEST(count(calls, "\ncuMemFree\n") == 2u, calls);
  BOOST_TEST(count(calls, "\ncuModuleUnload M1 ctx=P0\n") == 2u, calls);
}

// A driver that shut down earlier than kjit's handler ran: the first cleanup call that meets
// CUDA_ERROR_DEINITIALIZED is the last one.
BOOST_AUTO_TEST_CASE(after_the_first_deinitialized_answer_no_destructor_calls_the_driver)
{
  const std::string calls = run_twice("shut_down_first");
  BOOST_TEST(count(calls, "called after the driver shut down") == 2u, calls);  // one per run
}

// CUDA does not support fork() after cuInit: a child's use of the driver is undefined (NVIDIA: it
// must exec first). A child of a process that used kjit neither calls the driver from the
// destructors exit() runs (statics made after the driver loaded) nor for a new request, which
// is a CudaError saying why; the parent still cleans up.
BOOST_AUTO_TEST_CASE(a_forked_child_never_calls_the_driver_its_parent_initialized)
{
  const std::string calls = run_twice("fork", "child: the CUDA driver was loaded before this process was fork()ed");
  BOOST_TEST(calls.find("VIOLATION") == std::string::npos, calls);
  BOOST_TEST(count(calls, "\ncuMemFree\n") == 2u, calls);  // the parent's, once per run
  BOOST_TEST(count(calls, "\ncuModuleUnload M1 ctx=P0\n") == 2u, calls);
  // device_compute_capability() too, with the code every such call has there (it was
  // CUDA_ERROR_NO_DEVICE): "child: compute capability: cannot resolve arch 'auto': <why> (3)"
  run_twice("fork", "use the GPU in the parent) (3)\n");  // CUDA_ERROR_NOT_INITIALIZED
}

// A fork() while another thread is inside cuInit (kjit's first use of the driver: seconds on a
// real GPU): the child's first driver_status() would start the load again (glibc restarts a
// pthread_once a fork interrupted) on its copy of a half-initialized driver. It never calls it.
BOOST_AUTO_TEST_CASE(a_child_forked_while_the_driver_loads_never_calls_it)
{
  kjit::test::TempDir tmp;
  const std::string log = tmp.path() + "/calls.log";
  std::string output;
  const int status = kjit::test::run("KJIT_CACHE_DIR='" + tmp.path() + "/cache' KJIT_FAKE_CUDA_LOG='" + log + "' '" +
                                       kjit::test::helper("KJIT_TEST_DRIVER_CHILD") + "' fork_while_loading 2>&1",
                                     output);
  BOOST_TEST(status == 0, output);
  BOOST_TEST(output.find("child exited: 0") != std::string::npos, output);
  BOOST_TEST(output.find("child available: 0 (the CUDA driver was loaded before this process was fork()ed") !=
               std::string::npos,
             output);
  BOOST_TEST(output.find("child: the CUDA driver was loaded before") != std::string::npos, output);
  BOOST_TEST(output.find("(3)") != std::string::npos, output);  // CUDA_ERROR_NOT_INITIALIZED
  BOOST_TEST(output.find("parent available: 1") != std::string::npos, output);
  const std::string calls = kjit::test::read_text(log);
  BOOST_TEST(calls.find("VIOLATION") == std::string::npos, calls);
}

BOOST_AUTO_TEST_SUITE_END()
