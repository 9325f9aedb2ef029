// Launch kinds: a stream, thread-block clusters, a cooperative launch with a grid-wide barrier, and
// occupancy with dynamic shared memory that depends on the block size; typed options and named
// construction for the program. Usage: kjit_launch_kinds  (the GPU half runs with a device)
#include <kjit/kjit.hpp>

#include <algorithm>
#include <cstdio>

namespace {

kjit::Program program()
{
  kjit::CompileOptions options;
  options.standard = "c++17";
  options.defines = {{"PER_THREAD", "2"}};
  return kjit::Program::from_source("kinds.cu", R"(#include <cooperative_groups.h>
extern "C" __global__ void sum_blocks(int* data, int* total)
{
  auto grid = cooperative_groups::this_grid();
  if (threadIdx.x == 0) data[blockIdx.x] = PER_THREAD * (blockIdx.x + 1);
  grid.sync();  // every block's write is visible after this: needs a cooperative launch
  if (grid.thread_rank() == 0) {
    int s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += data[b];
    *total = s;
  }
}
extern "C" __global__ void cluster_rank(unsigned* out)
{
#if __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) out[blockIdx.x] = cooperative_groups::this_cluster().block_rank();
#endif
})")
    .with(options);
}

} // namespace

int main()
{
  try {
    if (!kjit::driver_status().available) {
      const auto binary = kjit::get(program(), kjit::Arch::parse("sm_90"));
      for (const kjit::KernelInfo& kernel : binary->kernels()) {
        std::printf("%s: %d registers, %u B local (no GPU: %s)\n", kernel.name.c_str(), kernel.registers,
                    kernel.local_bytes, kjit::driver_status().reason.c_str());
      }
      return 0;
    }
    const kjit::Context context = kjit::Context::current();
    kjit::Cache& cache = kjit::default_cache();
    const kjit::PreparedProgram prepared = cache.prepare(program());
    const kjit::Module module = context.load(prepared, *cache.get(prepared));

    const kjit::Kernel sum = module.kernel("sum_blocks");
    const auto best = sum.max_potential_block_size([](int block) { return static_cast<std::size_t>(block) * 4; });
    const int blocks = std::min(64, sum.max_cooperative_grid(128));
    kjit::DeviceBuffer data(context, sizeof(int) * static_cast<std::size_t>(blocks));
    kjit::DeviceBuffer total(context, sizeof(int));
    kjit::LaunchConfig config{{static_cast<unsigned>(blocks)}, {128}};
    config.cooperative = true;
    sum.launch(config, data.pointer(), total.pointer());
    kjit::synchronize(context);
    int result = 0;
    total.download(&result, sizeof result);
    std::printf("cooperative: %d blocks summed to %d (expected %d); best block for 4 B/thread: %d\n", blocks, result,
                blocks * (blocks + 1), best.block);
    if (context.compute_capability() >= 90) {
      kjit::LaunchConfig clustered{{8}, {32}};
      clustered.cluster = {2};
      kjit::DeviceBuffer ranks(context, 8 * sizeof(unsigned));
      module.kernel("cluster_rank").launch(clustered, ranks.pointer());
      kjit::synchronize(context);
      unsigned r[8] = {};
      ranks.download(r, sizeof r);
      std::printf("cluster ranks: %u %u %u %u\n", r[0], r[1], r[2], r[3]);
    }
    return result == blocks * (blocks + 1) ? 0 : 1;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit: %s\n", e.what());
    return 1;
  }
}
