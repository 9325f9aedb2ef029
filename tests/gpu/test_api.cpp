// On a GPU: module variables, any Binary and raw images, thread-block clusters, cooperative launches
// with a grid-wide barrier, and occupancy with a dynamic shared memory function.
#include <boost/test/unit_test.hpp>

#include <kjit/kjit.hpp>

#include "../common/sample_kernels.hpp"
#include "gpu_fixture.hpp"

#include <array>
#include <algorithm>
#include <vector>

namespace {

struct ApiFixture : kjit::test::GpuFixture {
  kjit::Module load(const kjit::Program& program)
  {
    kjit::Cache& cache = kjit::default_cache();
    const kjit::PreparedProgram prepared = cache.prepare(program);
    return context.load(prepared, *cache.get(prepared));
  }
  kjit::Context context = kjit::Context::primary(0);
};

template <typename T>
std::vector<T> download(const kjit::DeviceBuffer& buffer, std::size_t n)
{
  std::vector<T> values(n);
  buffer.download(values.data(), n * sizeof(T));
  return values;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(api, ApiFixture)

BOOST_AUTO_TEST_CASE(module_variables_are_read_and_written_around_launches)
{
  const kjit::Module module = load({"globals.cu",
                                    "__constant__ float coeffs[4];\n"
                                    "template <typename T> __device__ T total;\n"
                                    "extern \"C\" __global__ void accumulate() { atomicAdd(&total<int>, (int)coeffs[threadIdx.x & 3]); }\n",
                                    {}, {}, {"&total<int>"}});
  module.set_global("coeffs", std::array<float, 4>{1, 2, 3, 4});
  module.set_global("total<int>", 5);
  BOOST_TEST(module.get_global<int>("&total<int>") == 5);
  module.kernel("accumulate").launch({{1}, {256}});
  kjit::synchronize(context);
  BOOST_TEST(module.get_global<int>("total<int>") == 5 + 640);
  BOOST_TEST(module.global("coeffs").size == 16u);
  BOOST_CHECK_THROW(module.get_global<double>("total<int>"), kjit::GlobalError);
  BOOST_CHECK_THROW(module.global("missing"), kjit::CudaError);
}

BOOST_AUTO_TEST_CASE(any_binary_and_raw_images_load_and_run)
{
  const int cc = context.compute_capability();
  const kjit::Binary binary =
    kjit::compile({"double.cu", "extern \"C\" __global__ void twice(int* x) { x[threadIdx.x] *= 2; }", {}, {}, {}},
                  kjit::Arch::of_compute_capability(cc / 10, cc % 10));
  const std::vector<int> ones(32, 1);
  kjit::DeviceBuffer x(context, sizeof(int) * 32);
  x.upload(ones.data(), sizeof(int) * 32);
  context.load(binary).kernel("twice").launch({{1}, {32}}, x.pointer());
  context.load_image(binary.cubin, {"cubin bytes"}).kernel("twice").launch({{1}, {32}}, x.pointer());
  context.load_image(binary.ptx, {"ptx text", 32}).kernel("twice").launch({{1}, {32}}, x.pointer());
  kjit::synchronize(context);
  BOOST_TEST(download<int>(x, 32)[31] == 8);
  BOOST_CHECK_THROW(context.load_image("not an image"), kjit::ImageError);
}

BOOST_AUTO_TEST_CASE(clusters_group_blocks)
{
  if (context.compute_capability() < 90) {
    BOOST_TEST_MESSAGE("thread-block clusters need sm_90 or newer: skipped");
    return;
  }
  const kjit::Module module = load({"cluster.cu",
                                    "#include <cooperative_groups.h>\n"
                                    "extern \"C\" __global__ void rank(unsigned* out) {\n"
                                    "  auto cluster = cooperative_groups::this_cluster();\n"
                                    "  if (threadIdx.x == 0) out[blockIdx.x] = cluster.block_rank() * 100 + cluster.num_blocks();\n"
                                    "}\n",
                                    {}, {}, {}});
  const kjit::Kernel kernel = module.kernel("rank");
  kjit::DeviceBuffer out(context, sizeof(unsigned) * 8);
  kjit::LaunchConfig config{{8}, {32}};
  config.cluster = {2};
  BOOST_TEST(kernel.max_active_clusters(config) > 0);
  kernel.launch(config, out.pointer());
  kjit::synchronize(context);
  const auto ranks = download<unsigned>(out, 8);
  for (unsigned b = 0; b < 8; ++b) {
    BOOST_TEST(ranks[b] == (b % 2) * 100 + 2, "block " << b);
  }
  config.grid = {7};  // not a multiple of the cluster
  BOOST_CHECK_THROW(kernel.launch(config, out.pointer()), kjit::CudaError);
}

BOOST_AUTO_TEST_CASE(cooperative_launches_synchronise_the_grid)
{
  const kjit::Module module = load({"coop.cu",
                                    "#include <cooperative_groups.h>\n"
                                    "extern \"C\" __global__ void phases(int* data, int* sum) {\n"
                                    "  auto grid = cooperative_groups::this_grid();\n"
                                    "  if (threadIdx.x == 0) data[blockIdx.x] = blockIdx.x + 1;\n"
                                    "  grid.sync();\n"
                                    "  if (grid.thread_rank() == 0) { int s = 0; for (unsigned b = 0; b < gridDim.x; ++b) s += data[b]; *sum = s; }\n"
                                    "}\n",
                                    {}, {}, {}});
  const kjit::Kernel kernel = module.kernel("phases");
  const int most = kernel.max_cooperative_grid(128);
  BOOST_TEST_REQUIRE(most > 0);
  const int blocks = std::min(most, 64);
  kjit::DeviceBuffer data(context, sizeof(int) * static_cast<std::size_t>(blocks));
  kjit::DeviceBuffer sum(context, sizeof(int));
  kjit::LaunchConfig config{{static_cast<unsigned>(blocks)}, {128}};
  config.cooperative = true;
  kernel.launch(config, data.pointer(), sum.pointer());
  kjit::synchronize(context);
  BOOST_TEST(download<int>(sum, 1)[0] == blocks * (blocks + 1) / 2);
  config.grid = {static_cast<unsigned>(most + 1)};
  BOOST_CHECK_THROW(kernel.launch(config, data.pointer(), sum.pointer()), kjit::CudaError);
}

BOOST_AUTO_TEST_CASE(occupancy_with_a_shared_memory_function)
{
  const kjit::Kernel kernel = load({"occ.cu", kjit::test::k_saxpy, {}, {}, {}}).kernel("saxpy");
  int calls = 0;
  const auto size = kernel.max_potential_block_size([&](int block) {
    ++calls;
    return static_cast<std::size_t>(block) * 16;
  });
  BOOST_TEST(calls > 0);
  BOOST_TEST(size.block > 0);
  BOOST_TEST(kernel.available_dynamic_shared_bytes(1, 128) > 0u);
  const kjit::KernelAttributes a = kernel.attributes();
  BOOST_TEST(a.binary_version == context.compute_capability());
  kernel.set_preferred_shared_carveout(50);
}

BOOST_AUTO_TEST_SUITE_END()
