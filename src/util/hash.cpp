// SHA-256 through OpenSSL's SHA256_* functions and XXH3-128 through libxxhash.
//
// OpenSSL 3 marks SHA256_Init/Update/Final deprecated in favour of EVP, but EVP's first use loads
// the configuration and the default provider: ≈ 1.2 ms measured here, more than a whole warm
// start may take. The SHA256_* functions are the same SHA-NI implementation without that layer
// (≈ 15 us first call, 2.5 us per 4 KiB).
#define OPENSSL_SUPPRESS_DEPRECATED
#include "util/hash.hpp"

#include <algorithm>
#include <openssl/sha.h>
#include <xxhash.h>

namespace kjit::util {

Sha256Hasher::Sha256Hasher() : m_ctx(new SHA256_CTX)
{
  SHA256_Init(static_cast<SHA256_CTX*>(m_ctx));
}

Sha256Hasher::~Sha256Hasher()
{
  delete static_cast<SHA256_CTX*>(m_ctx);
}

Sha256Hasher& Sha256Hasher::update(std::string_view data)
{
  SHA256_Update(static_cast<SHA256_CTX*>(m_ctx), data.data(), data.size());
  return *this;
}

Sha256 Sha256Hasher::finish()
{
  Sha256 digest{};
  auto* ctx = static_cast<SHA256_CTX*>(m_ctx);
  SHA256_Final(digest.data(), ctx);
  SHA256_Init(ctx);
  return digest;
}

Sha256 sha256(std::string_view data)
{
  thread_local Sha256Hasher hasher;
  return hasher.update(data).finish();
}

Checksum checksum(std::string_view data)
{
  const XXH128_hash_t hash = XXH3_128bits(data.data(), data.size());
  Checksum out{};
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  static_assert(sizeof(canonical.digest) == sizeof(Checksum));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = canonical.digest[i];
  }
  return out;
}

Sha256 digest_of_bytes(std::string_view bytes)
{
  Sha256 digest{};
  if (bytes.size() == digest.size()) {
    std::copy(bytes.begin(), bytes.end(), digest.begin());
  }
  return digest;
}

std::string to_hex(const std::uint8_t* data, std::size_t size)
{
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = k_digits[data[i] >> 4];
    out[2 * i + 1] = k_digits[data[i] & 0xf];
  }
  return out;
}

} // namespace kjit::util
