// XXH3-128 checksums (record sections, input digests), with AVX2 where the CPU has it.
//
// xxhash.h is inlined (no libxxhash to load) and compiled for SSE2, the x86-64 baseline; its AVX2
// loop is built here for this file's functions only (target attribute, like xxhash's own
// xxh_x86dispatch.c) and chosen at run time. The digests are the same bytes: AVX2 only halves the
// instructions of a hash of a few KiB, which a disk hit computes twice (docs/benchmarks.md).
#include "util/hash.hpp"

#include <cstring>
#include <immintrin.h>  // the AVX2 intrinsics xxhash.h uses (declared for any target)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>  // glibc 2.33+: the CPU features the dynamic loader already read
#endif

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#define XXH_DISPATCH_AVX2 1
#define XXH_TARGET_AVX2 __attribute__((__target__("avx2")))
#define XXH_ACC_ALIGN 64  // the AVX2 loop reads the accumulators aligned
#include <xxhash.h>

namespace kjit::util {

namespace {

// Asked of glibc, which read the CPU's features when the process started: __builtin_cpu_supports
// links libgcc's cpuinfo.o into libkjit, whose constructor runs 14 CPUID/XGETBV instructions in every
// process that loads libkjit, and CPUID traps to the hypervisor in a virtual machine (10–14 µs
// each on the development VM: ≈ 0.2 ms of a warm start; docs/benchmarks.md).
bool has_avx2()
{
#if defined(CPU_FEATURE_ACTIVE)  // glibc 2.34+
  static const bool avx2 = CPU_FEATURE_ACTIVE(AVX2);
#elif defined(CPU_FEATURE_USABLE)  // glibc 2.33's name for it
  static const bool avx2 = CPU_FEATURE_USABLE(AVX2);
#else
  static const bool avx2 = __builtin_cpu_supports("avx2");
#endif
  return avx2;
}

// XXH3_128bits of an input longer than XXH3_MIDSIZE_MAX (the only inputs the vector loop reads).
XXH_NO_INLINE XXH_TARGET_AVX2 XXH128_hash_t long_avx2(const void* input, std::size_t size)
{
  return XXH3_hashLong_128b_internal(input, size, XXH3_kSecret, sizeof(XXH3_kSecret), XXH3_accumulate_512_avx2,
                                     XXH3_scrambleAcc_avx2);
}

// XXH3_128bits_update.
XXH_NO_INLINE XXH_TARGET_AVX2 void update_avx2(XXH3_state_t* state, const void* input, std::size_t size)
{
  XXH3_update(state, static_cast<const xxh_u8*>(input), size, XXH3_accumulate_512_avx2, XXH3_scrambleAcc_avx2);
}

void update(XXH3_state_t& state, std::string_view part)
{
  if (has_avx2()) {
    update_avx2(&state, part.data(), part.size());
  } else {
    XXH3_128bits_update(&state, part.data(), part.size());
  }
}

Checksum canonical(XXH128_hash_t hash)
{
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  Checksum out;
  static_assert(sizeof(canonical.digest) == sizeof(Checksum));
  std::memcpy(out.data(), canonical.digest, out.size());
  return out;
}

} // namespace

Checksum checksum(std::string_view data)
{
  const bool vector = data.size() > XXH3_MIDSIZE_MAX && has_avx2();
  return canonical(vector ? long_avx2(data.data(), data.size()) : XXH3_128bits(data.data(), data.size()));
}

Checksum checksum(std::string_view first, std::string_view second)
{
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  for (const std::string_view part : {first, second}) {
    update(state, part);
  }
  return canonical(XXH3_128bits_digest(&state));
}

Checksum checksum_of_parts(const std::function<std::string_view()>& next)
{
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  for (std::string_view part = next(); !part.empty(); part = next()) {
    update(state, part);
  }
  return canonical(XXH3_128bits_digest(&state));
}

} // namespace kjit::util
