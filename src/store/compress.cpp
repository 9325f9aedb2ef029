// zstd with one compression and one decompression context per thread (created on first use).
#include "store/compress.hpp"

#include <memory>
#include <new>
#include <zstd.h>

namespace kjit::store {

namespace {

constexpr int k_level = 3;
constexpr std::size_t k_scratch_max = std::size_t{1} << 20;
constexpr std::size_t k_one_pass_ratio = 256;  // unpacked(): see there
constexpr std::size_t k_one_pass_max = std::size_t{64} << 20;

struct FreeCctx {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
struct FreeDctx {
  void operator()(ZSTD_DCtx* d) const noexcept { ZSTD_freeDCtx(d); }
};

ZSTD_CCtx* cctx()
{
  thread_local std::unique_ptr<ZSTD_CCtx, FreeCctx> context(ZSTD_createCCtx());
  return context.get();
}

ZSTD_DCtx* dctx()
{
  thread_local std::unique_ptr<ZSTD_DCtx, FreeDctx> context(ZSTD_createDCtx());
  return context.get();
}

// unpacked() of a frame that claims `declared` bytes (see there).
std::optional<std::string> unpacked_frame(std::string_view value, std::size_t declared)
{
  std::string content;
  if (declared <= k_one_pass_max && declared / k_one_pass_ratio <= value.size()) {
    content.resize(declared);
    const std::size_t got = ZSTD_decompressDCtx(dctx(), content.data(), content.size(), value.data(), value.size());
    if (ZSTD_isError(got) || got != declared ||
        ZSTD_findFrameCompressedSize(value.data(), value.size()) != value.size()) {
      return std::nullopt;
    }
    return content;
  }
  ZSTD_inBuffer in{value.data(), value.size(), 0};
  const std::size_t chunk = ZSTD_DStreamOutSize();
  for (;;) {
    const std::size_t had = content.size();
    if (had > declared) {
      return std::nullopt;
    }
    content.resize(had + chunk);
    ZSTD_outBuffer out{content.data() + had, chunk, 0};
    const std::size_t left = ZSTD_decompressStream(dctx(), &out, &in);
    content.resize(had + out.pos);
    if (ZSTD_isError(left)) {
      return std::nullopt;
    }
    if (left == 0) {
      break;  // the frame's end
    }
    if (in.pos == in.size && out.pos == 0) {
      return std::nullopt;  // truncated: no input left, nothing more comes out
    }
  }
  if (in.pos != in.size || content.size() != declared) {
    return std::nullopt;
  }
  return content;
}


} // namespace

std::optional<std::string> compress(std::string_view value)
{
  if (value.size() < k_compress_min || cctx() == nullptr) {
    return std::nullopt;
  }
  // Into the thread's scratch buffer, then copied at its size: a new buffer of the bound per call
  // was written twice (zeroed, then filled) and held at the bound until freed, for bytes most of
  // which zstd leaves unused (headers compress to about a fifth).
  // A value above k_scratch_max (a large PTX) gets a buffer of its own: a thread of the host
  // application keeps its scratch for as long as it lives.
  thread_local std::string scratch;
  const std::size_t bound = ZSTD_compressBound(value.size());
  std::string own;
  std::string& out = bound <= k_scratch_max ? scratch : own;
  if (out.size() < bound) {
    out.resize(bound);
  }
  const std::size_t size = ZSTD_compressCCtx(cctx(), out.data(), bound, value.data(), value.size(), k_level);
  if (ZSTD_isError(size) || size >= value.size()) {
    return std::nullopt;
  }
  if (&out == &own) {
    own.resize(size);
    return own;
  }
  return scratch.substr(0, size);
}

std::optional<std::size_t> frame_size(std::string_view frame)
{
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > k_expand_max) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(size);
}

bool decompress(std::string_view frame, std::size_t size, std::string& out, std::string& why)
{
  const auto declared = frame_size(frame);
  if (!declared || *declared != size) {
    why = "compressed value: bad zstd frame header";
    return false;
  }
  if (dctx() == nullptr) {
    why = "compressed value: no zstd context (out of memory)";
    return false;
  }
  try {
    out.resize(size);
  } catch (const std::bad_alloc&) {
    why = "compressed value: no memory for the " + std::to_string(size) + " bytes its frame claims";
    return false;
  }
  const std::size_t got = ZSTD_decompressDCtx(dctx(), out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(got)) {
    why = std::string("compressed value: ") + ZSTD_getErrorName(got) + " (truncated or damaged)";
    return false;
  }
  if (got != size) {
    why = "compressed value: expands to " + std::to_string(got) + " bytes, its frame says " + std::to_string(size);
    return false;
  }
  return true;
}

std::string packed(std::string value)
{
  if (auto frame = compress(value)) {
    return std::move(*frame);
  }
  return value;
}

std::optional<std::string> unpacked(std::string_view value)
{
  // A frame starts with ZSTD_MAGICNUMBER, little-endian; a manifest's text with "kjit-manifest".
  const auto byte = [&](std::size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(value[i])); };
  if (value.size() < 4 || (byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24) != ZSTD_MAGICNUMBER) {
    return std::string(value);
  }
  // A damaged header may claim up to k_expand_max, and a buffer of the claim would zero-fill 2 GiB
  // for 17 bytes before zstd fails. A claim of up to k_one_pass_ratio times the frame, and at most
  // k_one_pass_max, is decoded in one pass into a buffer of the claim (a vendored CCCL's manifest:
  // 6.4 MB from 260 KB, 25 times; streamed a window at a time it took 9–11 ms where one pass takes
  // 1.3–6, three times in every miss after an edit); a larger one is streamed into a buffer that
  // grows with what comes out (4 MiB claiming 1 GiB zero-filled it in one pass, found by a review).
  // Memory that is not to be had makes no value either: never std::bad_alloc out of a lookup.
  const auto declared = frame_size(value);
  if (!declared || dctx() == nullptr || ZSTD_isError(ZSTD_DCtx_reset(dctx(), ZSTD_reset_session_only))) {
    return std::nullopt;
  }
  try {
    return unpacked_frame(value, *declared);
  } catch (const std::bad_alloc&) {
    return std::nullopt;
  }
}

} // namespace kjit::store
