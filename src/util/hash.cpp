// SHA-256 through nettle (dlopen()ed on first use); XXH3-128 checksums are in checksum.cpp.
//
// nettle rather than OpenSSL's libcrypto: loading libcrypto (16 922 relative and 4 191 symbol
// relocations, bound at load) cost ≈ 1.2 ms and 124 page faults in every process that links kjit,
// more than the rest of a warm start; nettle picks the same SHA-NI code at run time. nettle is
// loaded on the first SHA-256, not with libkjit: a warm hit hashes nothing with SHA-256, and
// linking nettle cost every process 0.42 M instructions of relocations (465 symbol bindings) and a
// library map (docs/benchmarks.md, "Warm floor"). The digests are the same bytes.
#include "util/hash.hpp"

#include "kjit/error.hpp"
#include "kjit_build_config.hpp"
#include "util/dynamic_library.hpp"

#include <algorithm>
#include <dlfcn.h>
#include <nettle/sha2.h>

namespace kjit::util {

namespace {

// nettle's three SHA-256 functions, from the library loaded once per process.
struct Nettle {
  decltype(&nettle_sha256_init) init = nullptr;
  decltype(&nettle_sha256_update) update = nullptr;
  decltype(&nettle_sha256_digest) digest = nullptr;
  std::optional<DynamicLibrary> library;
};

const Nettle& nettle()
{
  static const Nettle loaded = [] {
    Nettle n;
    std::string error;
    // Never unloaded: threads still hashing while the process exits keep their functions.
    n.library = DynamicLibrary::open(KJIT_NETTLE_SONAME, RTLD_NODELETE, error);
    if (!n.library || !n.library->bind(n.init, "nettle_sha256_init") ||
        !n.library->bind(n.update, "nettle_sha256_update") || !n.library->bind(n.digest, "nettle_sha256_digest")) {
      throw Error(std::string("SHA-256: cannot load nettle (" KJIT_NETTLE_SONAME "): ") +
                  (error.empty() ? "a SHA-256 function is missing" : error));
    }
    return n;
  }();
  return loaded;
}

} // namespace

Sha256Hasher::Sha256Hasher() : m_ctx(new sha256_ctx)
{
  try {
    nettle().init(static_cast<sha256_ctx*>(m_ctx));
  } catch (...) {
    delete static_cast<sha256_ctx*>(m_ctx);
    throw;
  }
}

Sha256Hasher::~Sha256Hasher()
{
  delete static_cast<sha256_ctx*>(m_ctx);
}

Sha256Hasher& Sha256Hasher::update(std::string_view data)
{
  nettle().update(static_cast<sha256_ctx*>(m_ctx), data.size(), reinterpret_cast<const std::uint8_t*>(data.data()));
  return *this;
}

Sha256 Sha256Hasher::finish()
{
  Sha256 digest{};
  // sha256_digest also resets the context for the next message.
  nettle().digest(static_cast<sha256_ctx*>(m_ctx), digest.size(), digest.data());
  return digest;
}

Sha256 sha256(std::string_view data)
{
  thread_local Sha256Hasher hasher;
  return hasher.update(data).finish();
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

bool from_hex(std::string_view hex, Sha256& out)
{
  if (hex.size() != 2 * out.size()) {
    return false;
  }
  const auto digit = [](char ch) { return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1; };
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(hex[2 * i]);
    const int lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

} // namespace kjit::util
