/* docs/c-api.md's example, line for line (doc_example.sh checks that every line of the page's ```c
   blocks is here, and runs it with a cache folder of its own). */
#include <kjit/kjit.h>

#include <stdint.h>
#include <stdio.h>

static const char* const saxpy_source =
  "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n)\n"
  "{\n"
  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
  "  if (i < n) y[i] = a * x[i] + y[i];\n"
  "}\n";

/* Says why the last call failed, with the compiler's log for a compile error. */
static kjit_status report(kjit_status status)
{
  fprintf(stderr, "%s\n", kjit_last_error_message());
  if (status == KJIT_ERROR_COMPILE) {
    fprintf(stderr, "%s\n", kjit_last_error_log());
  }
  return status;
}

/* x and y are device pointers from the application's allocator (cuMemAlloc, cudaMalloc). */
static kjit_status launch_saxpy(const kjit_binary* binary, float a, uint64_t x, uint64_t y, int n)
{
  kjit_module* module = NULL;
  kjit_kernel* saxpy = NULL;
  kjit_status status = kjit_module_load(binary, -1, &module);
  if (status == KJIT_OK) {
    status = kjit_module_kernel(module, "saxpy", &saxpy);
  }
  if (status == KJIT_OK) {
    void* arguments[] = {&a, &x, &y, &n};
    const unsigned blocks = n > 0 ? (unsigned)(n + 255) / 256 : 1;
    const kjit_launch_config config = {{blocks, 1, 1}, {256, 1, 1}, 0, NULL};
    status = kjit_kernel_launch(saxpy, &config, arguments, 4);
  }
  if (status == KJIT_OK) {
    status = kjit_module_synchronize(module);
  }
  kjit_kernel_destroy(saxpy);
  kjit_module_destroy(module);
  return status;
}

/* The program for two archs in one batch (misses compiled in parallel workers), then what the
   cache did and holds. */
static kjit_status batch_and_stats(kjit_cache* cache, const kjit_program* program)
{
  const kjit_program* programs[2] = {program, program};
  const char* archs[2] = {"sm_80", "sm_90"};
  kjit_binary* binaries[2] = {NULL, NULL};
  kjit_status statuses[2];
  kjit_status status = kjit_cache_get_many(cache, 2, programs, archs, 0, binaries, statuses);
  kjit_binary_destroy(binaries[0]);
  kjit_binary_destroy(binaries[1]);
  kjit_cache_stats stats;
  stats.size = sizeof stats;
  size_t entries = 0;
  if (status == KJIT_OK) {
    status = kjit_cache_get_stats(cache, &stats);
  }
  if (status == KJIT_OK) {
    status = kjit_cache_disk_entries(cache, &entries);
  }
  if (status == KJIT_OK) {
    printf("%llu hits, %llu compiles; %zu entries on disk\n",
           (unsigned long long)(stats.memory_hits + stats.disk_hits), (unsigned long long)stats.compiles, entries);
  }
  return status;
}

int main(void)
{
  kjit_cache* cache = NULL;
  kjit_program* program = NULL;
  kjit_binary* binary = NULL;
  kjit_lookup_info info;
  kjit_kernel_info kernel;
  kjit_status status = kjit_cache_create_default(&cache);
  if (status == KJIT_OK) {
    status = kjit_program_create("saxpy.cu", saxpy_source, &program);
  }
  if (status == KJIT_OK) {
    status = kjit_program_add_option(program, "--std=c++17");
  }
  if (status == KJIT_OK) {
    status = kjit_cache_lookup(cache, program, "sm_90", &binary, &info);
  }
  if (status == KJIT_OK) {
    status = kjit_binary_find_kernel(binary, "saxpy", &kernel);
  }
  if (status == KJIT_OK) {
    printf("saxpy for sm_90 from %s: %d registers, %zu parameters in %u bytes\n",
           kjit_source_name(info.source), kernel.registers, kernel.param_count, kernel.param_bytes);
    status = launch_saxpy(binary, 2.0f, 0, 0, 0);
    if (status == KJIT_ERROR_NO_GPU) {
      printf("no GPU here: compiled and cached only\n");
      status = KJIT_OK;
    }
  }
  if (status == KJIT_OK) {
    status = batch_and_stats(cache, program);
  }
  if (status != KJIT_OK) {
    report(status);
  }
  kjit_binary_destroy(binary);
  kjit_program_destroy(program);
  kjit_cache_destroy(cache);
  return status == KJIT_OK ? 0 : 1;
}
