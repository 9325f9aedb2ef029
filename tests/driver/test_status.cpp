// Driver loading, in child processes with differently configured fakes: the versions entry points
// are requested at, a driver too old, an entry point missing, no device; and the GPU suite, which
// skips only when there is no GPU and fails when a driver is there but unusable.
#include <boost/test/unit_test.hpp>

#include "../unit/fixture.hpp"

namespace {

struct Child {
  int status = 0;
  std::string output;
};

Child run(const std::string& environment, const std::string& program, const std::string& arguments = "")
{
  Child child;
  child.status = kjit::test::run(environment + " '" + program + "' " + arguments + " 2>&1", child.output);
  return child;
}

std::string child_program()
{
  return kjit::test::helper("KJIT_TEST_DRIVER_CHILD");
}

} // namespace

BOOST_AUTO_TEST_SUITE(status)

BOOST_AUTO_TEST_CASE(entry_points_are_requested_at_the_version_of_their_type)
{
  kjit::test::TempDir tmp;
  const std::string log = tmp.path() + "/calls.log";
  const Child child = run("KJIT_FAKE_CUDA_LOG='" + log + "'", child_program(), "status");
  BOOST_TEST(child.status == 0, child.output);
  BOOST_TEST(child.output.find("available: 1") != std::string::npos, child.output);
  const std::string calls = kjit::test::read_text(log);
  for (const char* expected : {"cuGetProcAddress cuDriverGetVersion 2020", "cuGetProcAddress cuInit 2000",
                               "cuGetProcAddress cuCtxSynchronize 13000", "cuGetProcAddress cuCtxGetDevice 13000",
                               "cuGetProcAddress cuCtxPushCurrent 4000", "cuGetProcAddress cuFuncSetAttribute 9000",
                               "cuGetProcAddress cuDevicePrimaryCtxRelease 11000"}) {
    BOOST_TEST(calls.find(expected) != std::string::npos, expected << " in\n" << calls);
  }
  // The version is checked before anything else is bound.
  BOOST_TEST(calls.find("cuDriverGetVersion") < calls.find("cuGetProcAddress cuInit"));
}

BOOST_AUTO_TEST_CASE(a_driver_older_than_13_is_named_with_both_versions)
{
  const Child child = run("KJIT_FAKE_CUDA_VERSION=12040", child_program(), "status");
  BOOST_TEST(child.output.find("available: 0") != std::string::npos, child.output);
  BOOST_TEST(child.output.find("version: 12040") != std::string::npos, child.output);
  BOOST_TEST(child.output.find("12.4 (12040)") != std::string::npos, child.output);
  BOOST_TEST(child.output.find("13.0 (13000)") != std::string::npos, child.output);
  BOOST_TEST(child.output.find("problem: 3") != std::string::npos, child.output);  // unusable
}

BOOST_AUTO_TEST_CASE(a_missing_entry_point_is_named)
{
  const Child child = run("KJIT_FAKE_CUDA_MISSING=cuFuncSetAttribute,cuMemFree", child_program(), "status");
  BOOST_TEST(child.output.find("available: 0") != std::string::npos, child.output);
  BOOST_TEST(child.output.find("lacks entry points kjit needs: cuFuncSetAttribute, cuMemFree") != std::string::npos,
             child.output);
  BOOST_TEST(child.output.find("problem: 3") != std::string::npos, child.output);
}

BOOST_AUTO_TEST_CASE(no_device_is_no_gpu)
{
  const Child child = run("KJIT_FAKE_CUDA_DEVICES=0", child_program(), "status");
  BOOST_TEST(child.output.find("available: 0") != std::string::npos, child.output);
  BOOST_TEST(child.output.find("problem: 2") != std::string::npos, child.output);  // no_device
}

BOOST_AUTO_TEST_CASE(a_device_newer_than_nvrtc_gets_ptx)
{
  const Child child = run("KJIT_FAKE_CUDA_CC=130", child_program(), "arch");
  BOOST_TEST(child.status == 0, child.output);
  const std::vector<int> archs = kjit::supported_archs();
  BOOST_TEST(child.output.find("arch: compute_" + std::to_string(archs.back())) != std::string::npos, child.output);
  BOOST_TEST(child.output.find("newer than every arch") != std::string::npos, child.output);  // warned
}

BOOST_AUTO_TEST_CASE(gpu_suite_skips_only_without_a_gpu)
{
  const std::string gpu_tests = kjit::test::helper("KJIT_TEST_GPU_TESTS");
  const Child no_device = run("KJIT_FAKE_CUDA_DEVICES=0", gpu_tests);
  BOOST_TEST(no_device.status == 77, no_device.output);
  const Child no_library = run("LD_LIBRARY_PATH=/nonexistent", gpu_tests);
  const Child status = run("LD_LIBRARY_PATH=/nonexistent", child_program(), "status");
  if (status.output.find("problem: 1") != std::string::npos) {  // no driver here at all
    BOOST_TEST(no_library.status == 77, no_library.output);
  }
  const Child missing = run("KJIT_FAKE_CUDA_MISSING=cuLaunchKernel", gpu_tests);
  BOOST_TEST(missing.status == 1, missing.output);
  BOOST_TEST(missing.output.find("cuLaunchKernel") != std::string::npos, missing.output);
  const Child old = run("KJIT_FAKE_CUDA_VERSION=12040", gpu_tests);
  BOOST_TEST(old.status == 1, old.output);
  BOOST_TEST(old.output.find("12040") != std::string::npos, old.output);
}

BOOST_AUTO_TEST_SUITE_END()
