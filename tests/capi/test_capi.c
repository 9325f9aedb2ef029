/* The C API from C: compile, cache (memory, disk, another process), read kernels' resources and
   lowered names, each error kind with its status and message, and loading and launching where a
   driver (real, or the fake libcuda of tests/driver/fake) is there.
   Usage: test_capi            (KJIT_CAPI_EXPECT_GPU=1: loading must work; =0: must be NO_GPU)
          test_capi --disk-lookup CACHE_DIR   (the second process: exits 0 on a disk hit) */
#define _POSIX_C_SOURCE 200809L

#include "check.h"

#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

int g_failures = 0;

static const char* const k_source =
  "#include \"value.h\"\n"
  "template <typename T>\n"
  "__global__ void scale(T* x, T a, int n)\n"
  "{\n"
  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
  "  if (i < n) x[i] *= a;\n"
  "}\n"
  "extern \"C\" __global__ void fill(value_t* x, value_t v, int n)\n"
  "{\n"
  "  __shared__ value_t tile[TILE];\n"
  "  tile[threadIdx.x % TILE] = v;\n"
  "  __syncthreads();\n"
  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
  "  if (i < n) x[i] = tile[(threadIdx.x + 1) % TILE];\n"
  "}\n";

/* The test's program: an in-memory header, an option and two name expressions. */
static kjit_program* make_program(void)
{
  kjit_program* program = NULL;
  CHECK_OK(kjit_program_create("capi_kernels.cu", k_source, &program));
  CHECK_OK(kjit_program_add_header(program, "value.h", "typedef float value_t;\n"));
  CHECK_OK(kjit_program_add_option(program, "-DTILE=128"));
  CHECK_OK(kjit_program_add_name_expression(program, "scale<float>"));
  CHECK_OK(kjit_program_add_name_expression(program, "scale<double>"));
  return program;
}

/* A cache on `dir` only (the user's cache is never touched), mirror off. */
static kjit_cache* open_cache(const char* dir)
{
  kjit_config* config = NULL;
  kjit_cache* cache = NULL;
  CHECK_OK(kjit_config_create(&config));
  CHECK_OK(kjit_config_set(config, "cache_dir", dir));
  CHECK_OK(kjit_config_set(config, "mirror", "off"));
  CHECK_OK(kjit_cache_create(config, &cache));
  kjit_config_destroy(config);  /* the cache keeps its own copy */
  return cache;
}

static void test_names_and_version(void)
{
  CHECK(strcmp(kjit_status_name(KJIT_ERROR_COMPILE), "KJIT_ERROR_COMPILE") == 0);
  CHECK(strcmp(kjit_status_name(KJIT_ERROR_NO_GPU), "KJIT_ERROR_NO_GPU") == 0);
  CHECK(strcmp(kjit_status_name((kjit_status)999), "KJIT_ERROR_UNKNOWN") == 0);
  CHECK(strcmp(kjit_source_name(KJIT_SOURCE_DISK), "disk") == 0);
  CHECK(strcmp(kjit_source_name(KJIT_SOURCE_MEMORY), "memory") == 0);
  CHECK(kjit_version()[0] >= '0' && kjit_version()[0] <= '9');
  CHECK(strchr(kjit_version(), '.') != NULL);
}

static void test_config_errors(void)
{
  kjit_config* config = NULL;
  CHECK_OK(kjit_config_create(&config));
  CHECK_STATUS(kjit_config_set(config, "verbose", "maybe"), KJIT_ERROR_CONFIG);
  CHECK(kjit_last_error_status() == KJIT_ERROR_CONFIG);
  CHECK_CONTAINS(kjit_last_error_message(), "KJIT_ERROR_CONFIG: verbose");
  CHECK_STATUS(kjit_config_set(config, "no_such_setting", "1"), KJIT_ERROR_CONFIG);
  CHECK_CONTAINS(kjit_last_error_message(), "no such setting");
  CHECK_STATUS(kjit_config_set(config, "memory_limit", "lots"), KJIT_ERROR_CONFIG);
  CHECK_OK(kjit_config_set(config, "memory_limit", "64MiB"));
  kjit_config_destroy(config);
}

/* A cache folder whose parent anyone may write is refused (another user could swap it). */
static void test_store_error(const char* dir)
{
  char open_dir[4096];
  char cache_dir[4096];
  snprintf(open_dir, sizeof open_dir, "%s/everyone", dir);
  snprintf(cache_dir, sizeof cache_dir, "%s/everyone/cache", dir);
  CHECK(mkdir(open_dir, 0700) == 0 && chmod(open_dir, 0777) == 0);
  kjit_config* config = NULL;
  kjit_cache* cache = (kjit_cache*)1;
  CHECK_OK(kjit_config_create(&config));
  CHECK_OK(kjit_config_set(config, "cache_dir", cache_dir));
  CHECK_STATUS(kjit_cache_create(config, &cache), KJIT_ERROR_STORE);
  CHECK(cache == NULL);
  CHECK_CONTAINS(kjit_last_error_message(), "refusing the cache folder");
  CHECK(kjit_last_error_code() != 0);  /* EPERM */
  kjit_config_destroy(config);
}

static void check_param(const kjit_kernel_info* info, size_t index, uint32_t offset, uint32_t size)
{
  CHECK(index < info->param_count);
  if (index < info->param_count) {
    CHECK(info->params[index].index == index);
    CHECK(info->params[index].offset == offset);
    CHECK(info->params[index].size == size);
  }
}

/* Everything a binary tells without a GPU. */
static void check_binary(const kjit_binary* binary)
{
  const char* arch = NULL;
  CHECK_OK(kjit_binary_arch(binary, &arch));
  CHECK(arch != NULL && strcmp(arch, "sm_90") == 0);

  const void* cubin = NULL;
  size_t cubin_size = 0;
  CHECK_OK(kjit_binary_cubin(binary, &cubin, &cubin_size));
  CHECK(cubin_size > 64 && memcmp(cubin, "\177ELF", 4) == 0);

  const char* ptx = NULL;
  size_t ptx_size = 0;
  CHECK_OK(kjit_binary_ptx(binary, &ptx, &ptx_size));
  CHECK(ptx_size == strlen(ptx));
  CHECK_CONTAINS(ptx, ".entry fill");

  const char* log = NULL;
  CHECK_OK(kjit_binary_log(binary, &log));
  CHECK(log != NULL);

  size_t names = 0;
  const char* expression = NULL;
  const char* lowered = NULL;
  CHECK_OK(kjit_binary_lowered_name_count(binary, &names));
  CHECK(names == 2);
  CHECK_OK(kjit_binary_lowered_name_at(binary, 1, &expression, &lowered));
  CHECK(strcmp(expression, "scale<double>") == 0);
  CHECK(strncmp(lowered, "_Z5scaleIdE", 11) == 0);
  CHECK_STATUS(kjit_binary_lowered_name_at(binary, 2, &expression, &lowered), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_OK(kjit_binary_lowered_name(binary, "scale<float>", &lowered));
  CHECK(strncmp(lowered, "_Z5scaleIfE", 11) == 0);
  CHECK_STATUS(kjit_binary_lowered_name(binary, "scale<int>", &lowered), KJIT_ERROR_NOT_FOUND);
  CHECK_CONTAINS(kjit_last_error_message(), "'scale<int>' is not a name expression");

  size_t kernels = 0;
  CHECK_OK(kjit_binary_kernel_count(binary, &kernels));
  CHECK(kernels == 3);
  kjit_kernel_info info;
  for (size_t i = 0; i < kernels; ++i) {
    CHECK_OK(kjit_binary_kernel_at(binary, i, &info));
    CHECK(info.name != NULL && info.registers > 0 && info.param_count == 3);
  }
  CHECK_STATUS(kjit_binary_kernel_at(binary, kernels, &info), KJIT_ERROR_INVALID_ARGUMENT);

  CHECK_OK(kjit_binary_find_kernel(binary, "fill", &info));
  CHECK(strcmp(info.name, "fill") == 0);
  CHECK(info.registers > 0);
  CHECK(info.static_shared_bytes == 128 * sizeof(float));  /* TILE floats */
  CHECK(info.param_bytes == 16);
  check_param(&info, 0, 0, 8);   /* value_t* */
  check_param(&info, 1, 8, 4);   /* float */
  check_param(&info, 2, 12, 4);  /* int */

  CHECK_OK(kjit_binary_find_kernel(binary, "scale<double>", &info));  /* by its name expression */
  CHECK(strncmp(info.name, "_Z5scaleIdE", 11) == 0);
  CHECK(info.static_shared_bytes == 0);
  CHECK(info.param_bytes == 20);
  check_param(&info, 1, 8, 8);  /* double */
  check_param(&info, 2, 16, 4);
  CHECK_STATUS(kjit_binary_find_kernel(binary, "missing", &info), KJIT_ERROR_NOT_FOUND);
}

/* The first lookup compiles, the second is a memory hit; both give the same cubin. Returns the
   first binary (the caller destroys it). */
static kjit_binary* test_compile_and_memory_hit(kjit_cache* cache, kjit_program* program)
{
  kjit_binary* first = NULL;
  kjit_binary* second = NULL;
  kjit_lookup_info info;
  CHECK_OK(kjit_cache_lookup(cache, program, "sm_90", &first, &info));
  CHECK(info.source == KJIT_SOURCE_COMPILED);
  CHECK(info.lookup_ms > 0);
  CHECK_OK(kjit_cache_lookup(cache, program, "sm_90", &second, &info));
  CHECK(info.source == KJIT_SOURCE_MEMORY);

  char key[65];
  char again[65];
  CHECK_OK(kjit_cache_key(cache, program, "sm_90", key));
  CHECK(strlen(key) == 64 && strspn(key, "0123456789abcdef") == 64);
  CHECK(info.key[0] == '\0' || strcmp(info.key, key) == 0);
  CHECK_OK(kjit_cache_key(cache, program, "sm_90", again));
  CHECK(strcmp(key, again) == 0);

  if (first != NULL && second != NULL) {
    const void* a = NULL;
    const void* b = NULL;
    size_t a_size = 0;
    size_t b_size = 0;
    CHECK_OK(kjit_binary_cubin(first, &a, &a_size));
    CHECK_OK(kjit_binary_cubin(second, &b, &b_size));
    CHECK(a_size == b_size && memcmp(a, b, a_size) == 0);
    check_binary(second);
  }
  kjit_binary_destroy(second);
  return first;
}

/* A second cache object on the same folder: its memory tier is empty, the store has the entry. */
static void test_disk_hit_in_another_cache(const char* dir, kjit_program* program)
{
  kjit_cache* cache = open_cache(dir);
  kjit_binary* binary = NULL;
  kjit_lookup_info info;
  CHECK_OK(kjit_cache_lookup(cache, program, "sm_90", &binary, &info));
  CHECK(info.source == KJIT_SOURCE_DISK);
  if (binary != NULL) {
    check_binary(binary);
  }
  kjit_binary_destroy(binary);
  kjit_cache_destroy(cache);
}

static void test_disk_hit_in_another_process(const char* self, const char* dir)
{
  char* const argv[] = {(char*)self, (char*)"--disk-lookup", (char*)dir, NULL};
  pid_t pid = 0;
  CHECK(posix_spawn(&pid, self, NULL, NULL, argv, environ) == 0);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int disk_lookup(const char* dir)
{
  kjit_program* program = make_program();
  kjit_cache* cache = open_cache(dir);
  kjit_binary* binary = NULL;
  kjit_lookup_info info;
  CHECK_OK(kjit_cache_lookup(cache, program, "sm_90", &binary, &info));
  CHECK(info.source == KJIT_SOURCE_DISK);
  kjit_binary_destroy(binary);
  kjit_cache_destroy(cache);
  kjit_program_destroy(program);
  return g_failures == 0 ? 0 : 1;
}

static void test_compile_error(kjit_cache* cache)
{
  kjit_program* program = NULL;
  CHECK_OK(kjit_program_create("broken.cu", "__global__ void broken() { undeclared_name = 1; }\n", &program));
  for (int round = 0; round < 2; ++round) {  /* compiled, then the remembered failure */
    kjit_binary* binary = (kjit_binary*)1;
    CHECK_STATUS(kjit_cache_get(cache, program, "sm_90", &binary), KJIT_ERROR_COMPILE);
    CHECK(binary == NULL);
    CHECK_CONTAINS(kjit_last_error_message(), "KJIT_ERROR_COMPILE: compiling broken.cu for sm_90 failed");
    CHECK_CONTAINS(kjit_last_error_log(), "undeclared_name");
    CHECK_CONTAINS(kjit_last_error_log(), "error");
  }
  kjit_program_destroy(program);
}

static void test_option_and_arch_errors(kjit_cache* cache)
{
  kjit_program* program = NULL;
  kjit_binary* binary = NULL;
  CHECK_OK(kjit_program_create("option.cu", "__global__ void k() {}\n", &program));
  CHECK_STATUS(kjit_cache_get(cache, program, "sm_9x", &binary), KJIT_ERROR_ARCH);
  CHECK_CONTAINS(kjit_last_error_message(), "sm_9x");
  CHECK(kjit_last_error_log()[0] == '\0');  /* only a compile error has a log */
  CHECK_OK(kjit_program_add_option(program, "-arch=sm_80"));  /* the arch is an argument, not an option */
  CHECK_STATUS(kjit_cache_get(cache, program, "sm_90", &binary), KJIT_ERROR_OPTION);
  CHECK_CONTAINS(kjit_last_error_message(), "-arch");
  CHECK(binary == NULL);
  kjit_program_destroy(program);
}

static void test_null_arguments(kjit_cache* cache, kjit_program* program)
{
  kjit_binary* binary = (kjit_binary*)1;
  CHECK_STATUS(kjit_cache_get(NULL, program, "sm_90", &binary), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK(binary == NULL);
  CHECK_CONTAINS(kjit_last_error_message(), "kjit_cache_get: `cache` is NULL");
  CHECK_STATUS(kjit_cache_get(cache, NULL, "sm_90", &binary), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_CONTAINS(kjit_last_error_message(), "`program` is NULL");
  CHECK_STATUS(kjit_cache_get(cache, program, "sm_90", NULL), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kjit_program_create(NULL, "", NULL), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kjit_program_add_option(program, NULL), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kjit_config_set(NULL, "verbose", "1"), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kjit_binary_ptx(NULL, NULL, NULL), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kjit_module_load(NULL, 0, NULL), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kjit_kernel_launch(NULL, NULL, NULL, 0), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK(kjit_last_error_status() == KJIT_ERROR_INVALID_ARGUMENT);
  /* Destroying NULL does nothing, as free(NULL). */
  kjit_binary_destroy(NULL);
  kjit_cache_destroy(NULL);
  kjit_program_destroy(NULL);
  kjit_config_destroy(NULL);
  kjit_module_destroy(NULL);
  kjit_kernel_destroy(NULL);
}

/* Loading and launching: with a driver and a device (KJIT_CAPI_EXPECT_GPU=1, the fake libcuda in
   CI, a real GPU in tools/gpu-run) the kernel launches and a wrong argument count is refused before
   the driver; without one (=0) loading is KJIT_ERROR_NO_GPU. Unset: whichever this machine has.
   With a device expected, the program is loaded as built for it (arch NULL: the device's own), so
   that a GPU other than an sm_90 one runs it too. */
static void test_module(const kjit_binary* sm_90, const char* cache_dir, const kjit_program* program)
{
  const char* expect = getenv("KJIT_CAPI_EXPECT_GPU");
  const kjit_binary* binary = sm_90;
  kjit_binary* own = NULL;
  kjit_cache* cache = NULL;
  if (expect != NULL && strcmp(expect, "1") == 0) {
    cache = open_cache(cache_dir);
    CHECK_OK(kjit_cache_get(cache, program, NULL, &own));
    binary = own;
    if (own == NULL) {
      kjit_cache_destroy(cache);
      return;
    }
  }
  kjit_module* module = (kjit_module*)1;
  const kjit_status status = kjit_module_load(binary, -1, &module);
  if (status != KJIT_OK || (expect != NULL && strcmp(expect, "0") == 0)) {
    CHECK(expect == NULL || strcmp(expect, "0") == 0);
    CHECK_STATUS(status, KJIT_ERROR_NO_GPU);
    CHECK(module == NULL);
    CHECK(kjit_last_error_code() != 0);  /* the CUresult */
    CHECK(strlen(kjit_last_error_message()) > strlen("KJIT_ERROR_NO_GPU: "));
    CHECK_STATUS(kjit_module_load(binary, 0, &module), KJIT_ERROR_NO_GPU);
    printf("no GPU: %s\n", kjit_last_error_message());
    kjit_binary_destroy(own);
    kjit_cache_destroy(cache);
    return;
  }
  CHECK(expect == NULL || strcmp(expect, "1") == 0);
  kjit_kernel* fill = NULL;
  kjit_kernel* scale = NULL;
  kjit_kernel* missing = (kjit_kernel*)1;
  CHECK_OK(kjit_module_kernel(module, "fill", &fill));
  CHECK_OK(kjit_module_kernel(module, "scale<float>", &scale));
  CHECK_STATUS(kjit_module_kernel(module, "missing", &missing), KJIT_ERROR_DRIVER);
  CHECK(missing == NULL);
  CHECK_CONTAINS(kjit_last_error_message(), "missing");
  kjit_module_destroy(module);  /* the kernels keep it loaded */

  /* n == 0: the kernels touch no memory, so a null pointer is a valid argument. */
  uint64_t pointer = 0;
  float value = 2.0f;
  int count = 0;
  void* arguments[] = {&pointer, &value, &count};
  const kjit_launch_config config = {{1, 1, 1}, {128, 1, 1}, 0, NULL};
  CHECK_OK(kjit_kernel_launch(fill, &config, arguments, 3));
  CHECK_OK(kjit_kernel_launch(scale, &config, arguments, 3));
  CHECK_STATUS(kjit_kernel_launch(fill, &config, arguments, 2), KJIT_ERROR_LAUNCH);
  CHECK_CONTAINS(kjit_last_error_message(), "fill");
  kjit_kernel_destroy(fill);
  kjit_kernel_destroy(scale);
  kjit_binary_destroy(own);
  kjit_cache_destroy(cache);
}

int main(int argc, char** argv)
{
  if (argc == 3 && strcmp(argv[1], "--disk-lookup") == 0) {
    return disk_lookup(argv[2]);
  }
  char dir[] = "/tmp/kjit-capi-XXXXXX";
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  char cache_dir[4096];
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", dir);

  test_names_and_version();
  test_config_errors();
  test_store_error(dir);

  kjit_program* program = make_program();
  kjit_cache* cache = open_cache(cache_dir);
  kjit_binary* binary = test_compile_and_memory_hit(cache, program);
  test_compile_error(cache);
  test_option_and_arch_errors(cache);
  test_null_arguments(cache, program);
  kjit_cache_destroy(cache);  /* its store is on disk once this returns */

  test_disk_hit_in_another_cache(cache_dir, program);
  test_disk_hit_in_another_process(argv[0], cache_dir);
  if (binary != NULL) {
    test_module(binary, cache_dir, program);
  }
  kjit_binary_destroy(binary);  /* a binary outlives its cache */
  kjit_program_destroy(program);

  char remove[4200];
  snprintf(remove, sizeof remove, "rm -rf '%s'", dir);
  if (system(remove) != 0) {
    fprintf(stderr, "could not remove %s\n", dir);
  }
  if (g_failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("C API: every check passed\n");
  return 0;
}
