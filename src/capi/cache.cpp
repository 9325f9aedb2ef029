// kjit_cache_*: opening caches and looking programs up in them, for the C API.
#include "capi/handles.hpp"
#include "capi/status.hpp"

#include <kjit/arch.hpp>

#include <cstring>

namespace {

// NULL is auto, as Arch{} is in the C++ API.
kjit::Arch arch_of(const char* text)
{
  return text == nullptr ? kjit::Arch{} : kjit::Arch::parse(text);
}

kjit_source source_of(kjit::Source source)
{
  switch (source) {
  case kjit::Source::memory: return KJIT_SOURCE_MEMORY;
  case kjit::Source::disk: return KJIT_SOURCE_DISK;
  case kjit::Source::bundle: return KJIT_SOURCE_BUNDLE;
  case kjit::Source::remote: return KJIT_SOURCE_REMOTE;
  case kjit::Source::compiled: return KJIT_SOURCE_COMPILED;
  case kjit::Source::compiled_elsewhere: return KJIT_SOURCE_COMPILED_ELSEWHERE;
  }
  return KJIT_SOURCE_COMPILED;
}

// A key is 64 hex digits; anything else (never expected) is left out rather than cut.
void copy_key(const std::string& key, char out[65])
{
  const bool fits = key.size() < 65;
  std::memcpy(out, key.data(), fits ? key.size() : 0);
  out[fits ? key.size() : 0] = '\0';
}

} // namespace

extern "C" {

kjit_status kjit_cache_create_default(kjit_cache** out)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  return kjit::capi::guarded([&] { *out = new kjit_cache{kjit::shared_default_cache()}; });
}

kjit_status kjit_cache_create(const kjit_config* config, kjit_cache** out)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  KJIT_CAPI_REQUIRE(config);
  return kjit::capi::guarded([&] { *out = new kjit_cache{std::make_shared<kjit::Cache>(config->config)}; });
}

void kjit_cache_destroy(kjit_cache* cache)
{
  // ~Cache waits for its commits and mirror writes; it never throws.
  delete cache;
}

const char* kjit_source_name(kjit_source source)
{
  switch (source) {
  case KJIT_SOURCE_MEMORY: return kjit::to_string(kjit::Source::memory);
  case KJIT_SOURCE_DISK: return kjit::to_string(kjit::Source::disk);
  case KJIT_SOURCE_BUNDLE: return kjit::to_string(kjit::Source::bundle);
  case KJIT_SOURCE_REMOTE: return kjit::to_string(kjit::Source::remote);
  case KJIT_SOURCE_COMPILED: return kjit::to_string(kjit::Source::compiled);
  case KJIT_SOURCE_COMPILED_ELSEWHERE: return kjit::to_string(kjit::Source::compiled_elsewhere);
  }
  return "unknown";
}

kjit_status kjit_cache_lookup(kjit_cache* cache, const kjit_program* program, const char* arch, kjit_binary** out,
                              kjit_lookup_info* info)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  KJIT_CAPI_REQUIRE(cache);
  KJIT_CAPI_REQUIRE(program);
  return kjit::capi::guarded([&] {
    kjit::Lookup lookup = cache->cache->lookup(program->program, arch_of(arch));
    auto handle = std::make_unique<kjit_binary>();
    handle->binary = std::move(lookup.binary);
    if (info != nullptr) {
      info->source = source_of(lookup.source);
      info->lookup_ms = lookup.lookup_ms;
      copy_key(lookup.key, info->key);
    }
    *out = handle.release();
  });
}

kjit_status kjit_cache_get(kjit_cache* cache, const kjit_program* program, const char* arch, kjit_binary** out)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  KJIT_CAPI_REQUIRE(cache);
  KJIT_CAPI_REQUIRE(program);
  return kjit::capi::guarded([&] {
    auto handle = std::make_unique<kjit_binary>();
    handle->binary = cache->cache->get(program->program, arch_of(arch));
    *out = handle.release();
  });
}

kjit_status kjit_cache_key(kjit_cache* cache, const kjit_program* program, const char* arch, char key[65])
{
  KJIT_CAPI_REQUIRE(cache);
  KJIT_CAPI_REQUIRE(program);
  KJIT_CAPI_REQUIRE(key);
  return kjit::capi::guarded([&] { copy_key(cache->cache->prepare(program->program, arch_of(arch)).key(), key); });
}

} // extern "C"
