/* C API 1.1 from C: a batch with a failing item, statistics (and a caller built with a shorter
   struct), upkeep (entries, prune, clear), and one cache used by many threads at once: each
   distinct program compiled once, every thread's error its own. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

int g_failures = 0;

enum { k_programs = 3, k_threads = 8, k_rounds = 25 };

/* Program `i` (distinct sources), or with `broken` one NVRTC rejects. */
static kjit_program* program_at(int i, int broken)
{
  char source[256];
  char name[64];
  snprintf(source, sizeof source, "extern \"C\" __global__ void k%d(int* x) { x[threadIdx.x] = %d%s; }\n", i, i,
           broken ? " + undeclared_name" : "");
  snprintf(name, sizeof name, "%s%d.cu", broken ? "broken" : "batch", i);
  kjit_program* program = NULL;
  CHECK_OK(kjit_program_create(name, source, &program));
  return program;
}

static kjit_cache* open_cache(const char* dir)
{
  kjit_config* config = NULL;
  kjit_cache* cache = NULL;
  CHECK_OK(kjit_config_create(&config));
  CHECK_OK(kjit_config_set(config, "cache_dir", dir));
  CHECK_OK(kjit_cache_create(config, &cache));
  kjit_config_destroy(config);
  return cache;
}

static kjit_cache_stats stats_of(const kjit_cache* cache)
{
  kjit_cache_stats stats;
  memset(&stats, 0, sizeof stats);
  stats.size = sizeof stats;
  CHECK_OK(kjit_cache_get_stats(cache, &stats));
  return stats;
}

static void test_batch(kjit_cache* cache)
{
  kjit_program* programs[k_programs + 1];
  const char* archs[k_programs + 1];
  for (int i = 0; i < k_programs; ++i) {
    programs[i] = program_at(i, 0);
    archs[i] = "sm_90";
  }
  programs[k_programs] = program_at(k_programs, 1);
  archs[k_programs] = "sm_80";
  kjit_binary* binaries[k_programs + 1];
  kjit_status statuses[k_programs + 1];
  CHECK_STATUS(kjit_cache_get_many(cache, k_programs + 1, (const kjit_program* const*)programs, archs, 2, binaries,
                                   statuses),
               KJIT_ERROR_COMPILE);
  /* The failing item's message and log are the thread's last error. */
  CHECK_CONTAINS(kjit_last_error_log(), "undeclared_name");
  for (int i = 0; i < k_programs; ++i) {
    CHECK(statuses[i] == KJIT_OK);
    CHECK(binaries[i] != NULL);
    const void* cubin = NULL;
    size_t size = 0;
    CHECK_OK(kjit_binary_cubin(binaries[i], &cubin, &size));
    CHECK(size > 4 && memcmp(cubin, "\177ELF", 4) == 0);
    kjit_binary_destroy(binaries[i]);
  }
  CHECK(statuses[k_programs] == KJIT_ERROR_COMPILE);
  CHECK(binaries[k_programs] == NULL);

  /* Again: every item a hit (the failure remembered), nothing compiled. */
  const kjit_cache_stats before = stats_of(cache);
  CHECK_STATUS(kjit_cache_get_many(cache, k_programs + 1, (const kjit_program* const*)programs, archs, 2, binaries,
                                   statuses),
               KJIT_ERROR_COMPILE);
  const kjit_cache_stats after = stats_of(cache);
  CHECK(after.compiles == before.compiles);
  CHECK(after.memory_hits + after.disk_hits >= before.memory_hits + before.disk_hits + k_programs);
  for (int i = 0; i < k_programs; ++i) {
    kjit_binary_destroy(binaries[i]);
  }
  /* An arch that does not parse fails its item only, as kjit_cache_get would (a review's finding:
     the whole batch failed). */
  const char* some_bad[3] = {"sm_90", "sm_bogus", "sm_90"};
  CHECK_STATUS(kjit_cache_get_many(cache, 3, (const kjit_program* const*)programs, some_bad, 0, binaries, statuses),
               KJIT_ERROR_ARCH);
  CHECK(statuses[0] == KJIT_OK && statuses[1] == KJIT_ERROR_ARCH && statuses[2] == KJIT_OK);
  CHECK(binaries[0] != NULL && binaries[1] == NULL && binaries[2] != NULL);
  CHECK_CONTAINS(kjit_last_error_message(), "sm_bogus");
  kjit_binary_destroy(binaries[0]);
  kjit_binary_destroy(binaries[2]);
  /* No items: nothing to do, the arrays may be NULL. A NULL program: every item refused. */
  CHECK_OK(kjit_cache_get_many(cache, 0, NULL, NULL, 0, NULL, NULL));
  kjit_program* kept = programs[1];
  programs[1] = NULL;
  statuses[0] = statuses[1] = KJIT_OK;
  CHECK_STATUS(kjit_cache_get_many(cache, 2, (const kjit_program* const*)programs, NULL, 0, binaries, statuses),
               KJIT_ERROR_INVALID_ARGUMENT);
  CHECK(binaries[0] == NULL && binaries[1] == NULL);
  CHECK(statuses[0] == KJIT_ERROR_INVALID_ARGUMENT && statuses[1] == KJIT_ERROR_INVALID_ARGUMENT);
  programs[1] = kept;
  for (int i = 0; i <= k_programs; ++i) {
    kjit_program_destroy(programs[i]);
  }
}

static void test_stats_and_upkeep(kjit_cache* cache)
{
  const kjit_cache_stats stats = stats_of(cache);
  CHECK(stats.size == sizeof stats);
  CHECK(stats.misses >= k_programs + 1);
  CHECK(stats.compile_ms_spent > 0);

  /* A caller built against a struct that ended after `misses`: nothing past it is written. */
  kjit_cache_stats shorter;
  memset(&shorter, 0xAB, sizeof shorter);
  shorter.size = offsetof(kjit_cache_stats, compiles);
  CHECK_OK(kjit_cache_get_stats(cache, &shorter));
  CHECK(shorter.size == offsetof(kjit_cache_stats, compiles));
  CHECK(shorter.misses == stats.misses);
  CHECK(shorter.compiles == UINT64_C(0xABABABABABABABAB));
  shorter.size = 1;
  CHECK_STATUS(kjit_cache_get_stats(cache, &shorter), KJIT_ERROR_INVALID_ARGUMENT);

  size_t entries = 0;
  CHECK_OK(kjit_cache_disk_entries(cache, &entries));
  CHECK(entries == k_programs + 1);  /* the remembered failure is an entry too */
  size_t removed = 99;
  CHECK_OK(kjit_cache_prune_older_than(cache, 3600, &removed));
  CHECK(removed == 0);
  CHECK_OK(kjit_cache_prune_older_than(cache, -1, &removed));  /* a negative age: every entry */
  CHECK(removed == entries);
  CHECK_OK(kjit_cache_disk_entries(cache, &entries));
  CHECK(entries == 0);

  kjit_program* program = program_at(0, 0);
  kjit_binary* binary = NULL;
  CHECK_OK(kjit_cache_get(cache, program, "sm_90", &binary));
  kjit_binary_destroy(binary);
  CHECK_OK(kjit_cache_disk_entries(cache, &entries));
  CHECK(entries == 1);
  CHECK_OK(kjit_cache_prune_to_size(cache, 0, &removed));
  CHECK(removed == 1);
  CHECK_OK(kjit_cache_get(cache, program, "sm_90", &binary));
  kjit_binary_destroy(binary);
  CHECK_OK(kjit_cache_clear(cache));
  CHECK_OK(kjit_cache_disk_entries(cache, &entries));
  CHECK(entries == 0);
  kjit_program_destroy(program);
  CHECK_STATUS(kjit_cache_clear(NULL), KJIT_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(kjit_cache_disk_entries(cache, NULL), KJIT_ERROR_INVALID_ARGUMENT);
}

/* --- Many threads on one cache ---------------------------------------------------------------- */

struct shared {
  kjit_cache* cache;
  kjit_program* programs[k_programs];
  kjit_program* broken;
  atomic_int ready;
  atomic_int failures;
};

static void* worker(void* argument)
{
  struct shared* shared = argument;
  atomic_fetch_add(&shared->ready, 1);
  while (atomic_load(&shared->ready) < k_threads) {
    /* start together: the first lookups of each program race */
  }
  for (int round = 0; round < k_rounds; ++round) {
    kjit_binary* binary = NULL;
    const int which = round % k_programs;
    if (kjit_cache_get(shared->cache, shared->programs[which], "sm_90", &binary) != KJIT_OK || binary == NULL) {
      atomic_fetch_add(&shared->failures, 1);
    }
    kjit_binary_destroy(binary);
    if (round % 5 == 0) {
      /* A failure on this thread: its status, message and log are this thread's, whatever the
         others do meanwhile (they succeed). */
      if (kjit_cache_get(shared->cache, shared->broken, "sm_90", &binary) != KJIT_ERROR_COMPILE || binary != NULL ||
          kjit_last_error_status() != KJIT_ERROR_COMPILE || strstr(kjit_last_error_log(), "undeclared_name") == NULL) {
        atomic_fetch_add(&shared->failures, 1);
      }
      kjit_cache_stats stats;
      stats.size = sizeof stats;
      size_t entries = 0;
      if (kjit_cache_get_stats(shared->cache, &stats) != KJIT_OK ||
          kjit_cache_disk_entries(shared->cache, &entries) != KJIT_OK) {
        atomic_fetch_add(&shared->failures, 1);
      }
    }
  }
  return NULL;
}

static void test_threads(const char* dir)
{
  struct shared shared;
  shared.cache = open_cache(dir);
  for (int i = 0; i < k_programs; ++i) {
    shared.programs[i] = program_at(100 + i, 0);
  }
  shared.broken = program_at(200, 1);
  atomic_init(&shared.ready, 0);
  atomic_init(&shared.failures, 0);
  const kjit_cache_stats before = stats_of(shared.cache);
  pthread_t threads[k_threads];
  for (int i = 0; i < k_threads; ++i) {
    CHECK(pthread_create(&threads[i], NULL, worker, &shared) == 0);
  }
  for (int i = 0; i < k_threads; ++i) {
    CHECK(pthread_join(threads[i], NULL) == 0);
  }
  CHECK(atomic_load(&shared.failures) == 0);
  const kjit_cache_stats after = stats_of(shared.cache);
  /* Each distinct program compiled once, however many threads asked for it at once. */
  CHECK(after.compiles - before.compiles == k_programs + 1);
  CHECK(after.memory_hits + after.disk_hits + after.failed_hits > before.memory_hits + before.disk_hits);
  for (int i = 0; i < k_programs; ++i) {
    kjit_program_destroy(shared.programs[i]);
  }
  kjit_program_destroy(shared.broken);
  kjit_cache_destroy(shared.cache);
}

int main(void)
{
  char dir[] = "/tmp/kjit-capi-batch-XXXXXX";
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  char cache_dir[4096];
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", dir);
  kjit_cache* cache = open_cache(cache_dir);
  test_batch(cache);
  test_stats_and_upkeep(cache);
  kjit_cache_destroy(cache);
  char threads_dir[4200];
  snprintf(threads_dir, sizeof threads_dir, "%s/threads", dir);
  test_threads(threads_dir);

  char remove[4400];
  snprintf(remove, sizeof remove, "rm -rf '%s'", dir);
  if (system(remove) != 0) {
    fprintf(stderr, "could not remove %s\n", dir);
  }
  if (g_failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("C API 1.1: every check passed\n");
  return 0;
}
