// kjit_cache_* of C API 1.1: batches, statistics and upkeep.
#include "capi/handles.hpp"
#include "capi/status.hpp"

#include <kjit/arch.hpp>
#include <kjit/error.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <vector>

namespace {

// The status of a batch item's error, recorded as the calling thread's last error.
kjit_status status_of(const std::exception_ptr& error) noexcept
{
  if (!error) {
    return kjit::capi::fail(KJIT_ERROR_OTHER, "kjit_cache_get_many: an item got neither a binary nor an error");
  }
  try {
    std::rethrow_exception(error);
  } catch (...) {
    return kjit::capi::fail_current_exception();
  }
}

std::uint64_t uncached(const kjit::CacheStats& s)
{
  return s.uncached_formed_name + s.uncached_disk_name + s.uncached_time + s.uncached_file_option + s.uncached_probe +
         s.uncached_names_file + s.uncached_environment;
}

} // namespace

extern "C" {

kjit_status kjit_cache_get_many(kjit_cache* cache, size_t count, const kjit_program* const* programs,
                                const char* const* archs, unsigned jobs, kjit_binary** binaries,
                                kjit_status* statuses)
{
  KJIT_CAPI_REQUIRE(cache);
  if (count == 0) {
    return KJIT_OK;  // nothing to get: the arrays may be NULL
  }
  KJIT_CAPI_REQUIRE(binaries);
  KJIT_CAPI_REQUIRE(statuses);
  std::fill(binaries, binaries + count, nullptr);
  if (programs == nullptr || std::find(programs, programs + count, nullptr) != programs + count) {
    std::fill(statuses, statuses + count, KJIT_ERROR_INVALID_ARGUMENT);
    return kjit::capi::fail(KJIT_ERROR_INVALID_ARGUMENT, "kjit_cache_get_many: `programs` is NULL or holds a NULL");
  }
  // Each item's arch parsed on its own: one that does not parse fails that item only, as
  // kjit_cache_get would (the others are looked up in the batch).
  std::vector<kjit::BatchResult> results(count);
  std::vector<size_t> batched;
  const kjit_status ran = kjit::capi::guarded([&] {
    std::vector<kjit::BatchItem> items;
    for (size_t i = 0; i < count; ++i) {
      const char* arch = archs == nullptr ? nullptr : archs[i];
      try {
        items.push_back({programs[i]->program, arch == nullptr ? kjit::Arch{} : kjit::Arch::parse(arch)});
        batched.push_back(i);
      } catch (const kjit::Error&) {
        results[i].error = std::current_exception();
      }
    }
    kjit::BatchOptions options;
    options.jobs = jobs;
    std::vector<kjit::BatchResult> done = items.empty() ? std::vector<kjit::BatchResult>{}
                                                        : cache->cache->get_many(items, options);
    for (size_t k = 0; k < batched.size(); ++k) {
      results[batched[k]] = std::move(done[k]);
    }
  });
  if (ran != KJIT_OK) {
    std::fill(statuses, statuses + count, ran);
    return ran;
  }
  // Handles first (an allocation may fail), then the statuses: the first failure recorded last,
  // so that it is the last error the caller reads.
  const kjit_status made = kjit::capi::guarded([&] {
    for (size_t i = 0; i < count; ++i) {
      if (results[i].binary) {
        auto handle = std::make_unique<kjit_binary>();
        handle->binary = results[i].binary;
        binaries[i] = handle.release();
      }
    }
  });
  if (made != KJIT_OK) {
    for (size_t i = 0; i < count; ++i) {
      kjit_binary_destroy(binaries[i]);
      binaries[i] = nullptr;
      statuses[i] = made;
    }
    return made;
  }
  kjit_status first = KJIT_OK;
  for (size_t i = count; i-- > 0;) {
    statuses[i] = results[i].binary ? KJIT_OK : status_of(results[i].error);
    first = statuses[i] != KJIT_OK ? statuses[i] : first;
  }
  return first;
}

kjit_status kjit_cache_get_stats(const kjit_cache* cache, kjit_cache_stats* stats)
{
  KJIT_CAPI_REQUIRE(cache);
  KJIT_CAPI_REQUIRE(stats);
  if (stats->size < offsetof(kjit_cache_stats, memory_hits) + sizeof(stats->memory_hits)) {
    return kjit::capi::fail(KJIT_ERROR_INVALID_ARGUMENT,
                            "kjit_cache_get_stats: `stats->size` is not sizeof(kjit_cache_stats)");
  }
  return kjit::capi::guarded([&] {
    const kjit::CacheStats s = cache->cache->stats();
    kjit_cache_stats all{};
    all.size = stats->size;
    all.memory_hits = s.memory_hits;
    all.disk_hits = s.disk_hits;
    all.bundle_hits = s.bundle_hits;
    all.remote_hits = s.remote_hits;
    all.misses = s.misses;
    all.compiles = s.compiles;
    all.uncached_compiles = uncached(s);
    all.failed_hits = s.failed_hits;
    all.quarantined = s.quarantined;
    all.store_errors = s.store_errors;
    all.mirror_errors = s.mirror_errors;
    all.compile_ms_saved = s.compile_ms_saved;
    all.compile_ms_spent = s.compile_ms_spent;
    // A caller built against an older, shorter struct gets the fields it knows.
    std::memcpy(stats, &all, std::min(stats->size, sizeof all));
  });
}

kjit_status kjit_cache_disk_entries(const kjit_cache* cache, size_t* count)
{
  KJIT_CAPI_REQUIRE(cache);
  KJIT_CAPI_REQUIRE(count);
  return kjit::capi::guarded([&] { *count = cache->cache->disk_entries(); });
}

kjit_status kjit_cache_clear(kjit_cache* cache)
{
  KJIT_CAPI_REQUIRE(cache);
  return kjit::capi::guarded([&] { cache->cache->clear(); });
}

kjit_status kjit_cache_prune_to_size(kjit_cache* cache, uint64_t bytes, size_t* removed)
{
  KJIT_CAPI_REQUIRE(cache);
  return kjit::capi::guarded([&] {
    const std::size_t limit = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, SIZE_MAX));
    const std::size_t gone = cache->cache->prune_to_size(limit);
    if (removed != nullptr) {
      *removed = gone;
    }
  });
}

kjit_status kjit_cache_prune_older_than(kjit_cache* cache, int64_t seconds, size_t* removed)
{
  KJIT_CAPI_REQUIRE(cache);
  return kjit::capi::guarded([&] {
    const std::size_t gone = cache->cache->prune_older_than(seconds);
    if (removed != nullptr) {
      *removed = gone;
    }
  });
}

} // extern "C"
