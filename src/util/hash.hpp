// SHA-256 (nettle, loaded on first use) for keys and content identity; XXH3-128 (xxhash.h, inlined)
// for record checksums and the names of the store's toolchain memo rows.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

namespace kjit::util {

using Sha256 = std::array<std::uint8_t, 32>;
using Checksum = std::array<std::uint8_t, 16>;

// Hashes a digest for unordered containers: its first bytes, already uniformly distributed.
struct DigestHash {
  template <std::size_t N>
  std::size_t operator()(const std::array<std::uint8_t, N>& digest) const noexcept
  {
    static_assert(N >= sizeof(std::size_t));
    std::size_t h;
    std::memcpy(&h, digest.data(), sizeof h);
    return h;
  }
};

// Incremental SHA-256. Not thread-safe; one per thread or per use.
class Sha256Hasher {
public:
  Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  ~Sha256Hasher();

  Sha256Hasher& update(std::string_view data);
  // Finishes the digest; the hasher is reset and can be reused.
  Sha256 finish();

private:
  void* m_ctx;
};

Sha256 sha256(std::string_view data);

// XXH3-128 of `data`: a fast integrity check, not a security boundary (checksum.cpp).
Checksum checksum(std::string_view data);
// XXH3-128 of `first` followed by `second`, without joining them.
Checksum checksum(std::string_view first, std::string_view second);
// XXH3-128 of the parts `next` returns, in order, until it returns an empty one: the digest
// checksum() gives their concatenation, never held whole (a file's section read piece by piece).
Checksum checksum_of_parts(const std::function<std::string_view()>& next);

// The digest held in 32 raw bytes (an LMDB key); zeros if `bytes` is not 32 bytes long.
Sha256 digest_of_bytes(std::string_view bytes);

// Lowercase hex of bytes.
std::string to_hex(const std::uint8_t* data, std::size_t size);
// The digest whose to_hex() is `hex` (64 lower-case digits); false for anything else.
bool from_hex(std::string_view hex, Sha256& out);

template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& bytes)
{
  return to_hex(bytes.data(), N);
}

} // namespace kjit::util
