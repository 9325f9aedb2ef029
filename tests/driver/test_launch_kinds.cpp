// Every launch kind against the fake driver: streams, thread-block clusters and cooperative launches
// through cuLaunchKernelEx (arguments checked as for any launch), occupancy with a dynamic shared
// memory function, and kernel attributes set by the application.
#include <boost/test/unit_test.hpp>

#include "../common/sample_kernels.hpp"
#include "../unit/fixture.hpp"
#include "fake_driver.hpp"

#include <stdexcept>

using kjit::test::fake;

namespace {

struct Kinds : kjit::test::DriverFixture {
  kjit::Kernel saxpy(const kjit::Context& context, const char* name = "kinds.cu")
  {
    kjit::Cache cache(kjit::current_config());
    const auto prepared = cache.prepare({name, kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_90"));
    return context.load(prepared, *cache.get(prepared)).kernel("saxpy");
  }

};

const std::uint64_t k_x = 0x1122334455667788;
// saxpy(2.0f, x, x, 5) as the cubin lays it out.
const char* const k_params = "00000040" "00000000" "8877665544332211" "8877665544332211" "05000000";

} // namespace

BOOST_FIXTURE_TEST_SUITE(launch_kinds, Kinds)

BOOST_AUTO_TEST_CASE(a_stream_reaches_plain_and_extended_launches)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = saxpy(context);
    kjit::LaunchConfig config{{4}, {128}};
    config.stream = fake().create_stream();
    kernel.launch(config, 2.0f, k_x, k_x, 5);
    BOOST_TEST(fake().count("cuLaunchKernel saxpy grid=4x1x1 block=128x1x1 shared=0 stream=S1") == 1, fake().log());
    config.cluster = {2};
    kernel.launch(config, 2.0f, k_x, k_x, 5);
    BOOST_TEST(fake().count("cuLaunchKernelEx saxpy grid=4x1x1 block=128x1x1 shared=0 stream=S1 cluster=2x1x1") == 1,
               fake().log());
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(cluster_launches_go_through_cuLaunchKernelEx_checked)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = saxpy(context);
    kjit::LaunchConfig config{{8, 2}, {64}};
    config.cluster = {4, 2};
    kernel.launch(config, 2.0f, k_x, k_x, 5);
    BOOST_TEST(fake().count("cuLaunchKernelEx saxpy grid=8x2x1 block=64x1x1 shared=0 cluster=4x2x1") == 1, fake().log());
    BOOST_TEST(std::string(fake().last_params()) == k_params);
    BOOST_TEST(fake().count("cuLaunchKernel ") == 0);  // not the plain entry point
    // Arguments are checked before the driver for every kind.
    BOOST_CHECK_THROW(kernel.launch(config, 2.0f, k_x, k_x), kjit::LaunchError);
    BOOST_CHECK_THROW(kernel.launch(config, 2.0, k_x, k_x, 5), kjit::LaunchError);
    BOOST_TEST(fake().count("cuLaunchKernelEx") == 1);
    // A grid that is not a multiple of the cluster: the driver's error, with the geometry named.
    config.grid = {6, 2};
    try {
      kernel.launch(config, 2.0f, k_x, k_x, 5);
      BOOST_ERROR("expected CudaError");
    } catch (const kjit::CudaError& e) {
      BOOST_TEST(e.result() == 912);
      BOOST_TEST(std::string(e.what()).find("grid 6x2x1, block 64x1x1, 0 bytes of dynamic shared memory, cluster 4x2x1") !=
                   std::string::npos,
                 e.what());
    }
    // 16 blocks per cluster needs the non-portable size allowed.
    config.grid = {16};
    config.cluster = {16};
    BOOST_CHECK_THROW(kernel.launch(config, 2.0f, k_x, k_x, 5), kjit::CudaError);
    kernel.set_non_portable_cluster_size_allowed(true);
    kernel.launch(config, 2.0f, k_x, k_x, 5);
    BOOST_TEST(fake().count("cuFuncSetAttribute 14 1") == 1, fake().log());
    BOOST_TEST(kernel.max_active_clusters({{8}, {128}, 0, nullptr, {2}}) == 16 * 132 / 2);
    // 65536 x 65536 x 1 is a cluster although the product wraps to 0 in 32 bits: not the plain launch.
    config.cluster = {65536, 65536, 1};
    BOOST_CHECK_THROW(kernel.launch(config, 2.0f, k_x, k_x, 5), kjit::CudaError);
    BOOST_TEST(fake().count("cuLaunchKernel ") == 0, fake().log());
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(cooperative_launches_are_bounded_by_the_resident_grid)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = saxpy(context);
    const int most = kernel.max_cooperative_grid(256);
    BOOST_TEST(most == kernel.active_blocks_per_multiprocessor(256) * 132);
    kjit::LaunchConfig config{{static_cast<unsigned>(most)}, {256}};
    config.cooperative = true;
    kernel.launch(config, 2.0f, k_x, k_x, 5);
    BOOST_TEST(fake().count("cuLaunchKernelEx saxpy grid=" + std::to_string(most) + "x1x1 block=256x1x1 shared=0 cooperative") ==
                 1,
               fake().log());
    BOOST_TEST(std::string(fake().last_params()) == k_params);
    config.grid = {static_cast<unsigned>(most + 1)};
    try {
      kernel.launch(config, 2.0f, k_x, k_x, 5);
      BOOST_ERROR("expected CudaError");
    } catch (const kjit::CudaError& e) {
      BOOST_TEST(e.result() == 720);
      BOOST_TEST(std::string(e.what()).find("cooperative") != std::string::npos, e.what());
    }
    BOOST_CHECK_THROW(kernel.launch(config, 2.0f, k_x), kjit::LaunchError);
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(occupancy_takes_a_dynamic_shared_memory_function)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = saxpy(context);
    int calls = 0;
    const kjit::Kernel::BlockSize size = kernel.max_potential_block_size([&](int block) {
      ++calls;
      return static_cast<std::size_t>(block) * 64;  // 64 bytes per thread
    });
    BOOST_TEST(calls > 1);  // asked for each block size the driver tried
    BOOST_TEST(size.block == 48 * 1024 / 64);  // the largest block whose shared memory fits 48 KiB
    BOOST_TEST(fake().count("cuOccupancyMaxPotentialBlockSize with a function") == 1, fake().log());
    BOOST_TEST(kernel.max_potential_block_size([](int) { return std::size_t{0}; }, 256).block == 256);
    // An exception from the function does not cross the driver; it reaches the caller.
    BOOST_CHECK_THROW(kernel.max_potential_block_size([](int) -> std::size_t { throw std::runtime_error("no"); }),
                      std::runtime_error);
    BOOST_TEST(kernel.max_potential_block_size([](int) { return std::size_t{1024}; }).block == 1024);  // not stuck
    const std::size_t two = kernel.available_dynamic_shared_bytes(2, 256);
    const std::size_t four = kernel.available_dynamic_shared_bytes(4, 256);
    BOOST_TEST(two > four);
    BOOST_TEST(four > 0u);
    BOOST_CHECK_THROW(kernel.available_dynamic_shared_bytes(100, 1024), kjit::CudaError);
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(kernel_attributes_are_read_and_set)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = saxpy(context);
    const kjit::KernelAttributes a = kernel.attributes();
    BOOST_TEST(a.binary_version == 90);
    BOOST_TEST(a.ptx_version == 90);
    BOOST_TEST(a.registers > 0);
    kernel.set_max_dynamic_shared_bytes(100 * 1024);
    BOOST_TEST(kernel.attributes().max_dynamic_shared_bytes == 100 * 1024);
    kernel.launch({{1}, {32}, 90 * 1024}, 2.0f, k_x, k_x, 5);  // within the limit set: not raised again
    BOOST_TEST(fake().count("cuFuncSetAttribute 8 ") == 1, fake().log());
    BOOST_CHECK_THROW(kernel.launch({{1}, {32}, 120 * 1024}, 2.0f, k_x, k_x, 5), kjit::CudaError);
    kernel.set_preferred_shared_carveout(50);
    BOOST_TEST(fake().count("cuFuncSetAttribute 9 50") == 1, fake().log());
    try {
      kernel.set_preferred_shared_carveout(150);
      BOOST_ERROR("expected CudaError");
    } catch (const kjit::CudaError& e) {
      BOOST_TEST(std::string(e.what()).find("PREFERRED_SHARED_MEMORY_CARVEOUT, 150) for saxpy of kinds.cu on device 0") !=
                   std::string::npos,
                 e.what());
    }
    BOOST_CHECK_THROW(kernel.set_max_dynamic_shared_bytes(300 * 1024), kjit::CudaError);
  }
  check_clean();
}

BOOST_AUTO_TEST_SUITE_END()
