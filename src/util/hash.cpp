// SHA-256 through OpenSSL's EVP interface and XXH3-128 through libxxhash.
#include "util/hash.hpp"

#include <openssl/evp.h>
#include <stdexcept>
#include <xxhash.h>

namespace kjit::util {

namespace {

const EVP_MD* sha256_md()
{
  // Fetched once: EVP_sha256() per call would look the algorithm up every time.
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

} // namespace

Sha256Hasher::Sha256Hasher() : m_ctx(EVP_MD_CTX_new())
{
  if (m_ctx == nullptr || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(m_ctx), sha256_md(), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_ctx));
    throw std::runtime_error("OpenSSL: cannot initialise SHA-256");
  }
}

Sha256Hasher::~Sha256Hasher()
{
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_ctx));
}

Sha256Hasher& Sha256Hasher::update(std::string_view data)
{
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(m_ctx), data.data(), data.size());
  return *this;
}

Sha256 Sha256Hasher::finish()
{
  Sha256 digest{};
  unsigned int size = 0;
  auto* ctx = static_cast<EVP_MD_CTX*>(m_ctx);
  EVP_DigestFinal_ex(ctx, digest.data(), &size);
  EVP_DigestInit_ex(ctx, sha256_md(), nullptr);
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
