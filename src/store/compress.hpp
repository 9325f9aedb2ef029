// zstd compression of stored fields and header blobs (Debian's libzstd; only src/store uses it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::store {

// Values shorter than this are stored as they are: a zstd frame would not pay for its header.
constexpr std::size_t k_compress_min = 128;
// The largest value a compressed field or blob may claim to expand to (a bound for damaged sizes;
// a record field is at most 4 GiB - 1 anyway, and NVRTC output is far smaller).
constexpr std::size_t k_expand_max = std::size_t(1) << 31;

// `value` as one zstd frame (level 3, content size in the frame header), or nullopt when that
// would not be smaller. Thread-safe (one context per thread). Throws std::bad_alloc only.
std::optional<std::string> compress(std::string_view value);

// The content of one zstd frame that must expand to exactly `size` bytes (pass the frame's own
// claim through frame_size() when the caller has no size of its own). Returns false with `why`
// for a truncated or damaged frame or a size that doesn't match. Thread-safe.
bool decompress(std::string_view frame, std::size_t size, std::string& out, std::string& why);

// A table row's value as it is kept when packing pays (manifests, whose absent-name lists make a
// vendored CCCL's 2.8 MB of text, 145 KB as a frame): one zstd frame when that is smaller, else
// `value` as it is.
std::string packed(std::string value);
// The value packed() was given: a frame's content, or `value` itself when it is no zstd frame (a
// small value, or one written before packing). nullopt for a frame that is damaged.
std::optional<std::string> unpacked(std::string_view value);

// The content size a frame's header declares; nullopt if it doesn't declare one or is not a frame.
std::optional<std::size_t> frame_size(std::string_view frame);

} // namespace kjit::store
