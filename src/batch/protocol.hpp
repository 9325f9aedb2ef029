// The pipe protocol between a batch and its worker processes: length-prefixed frames carrying a
// compile request (program + arch) or its result (a Binary or a typed error).
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/error.hpp>
#include <kjit/program.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

namespace kjit::batch {

// A frame that does not decode: the stream it came from can't be trusted any more.
struct MalformedFrame : Error {
  using Error::Error;
};

// The first frame each way: the batch sends hello(false) ("kjit batch protocol N"), the worker
// answers hello(true) ("kjit-worker protocol N"). A worker given anything else answers all the same
// and exits; a batch whose worker answers otherwise (another version, a program that echoes)
// compiles in-process rather than exchange frames the two sides read differently.
// Version 2: each request and its answer carry the request's sequence number (with_sequence).
constexpr std::uint32_t k_protocol_version = 2;
std::string hello(bool from_worker);

// After the hello, every frame is sequence:u32 followed by its body: the worker answers with the
// sequence number of the request it answers, so an answer left from an earlier exchange (or sent
// twice) is never taken for the next item's.
std::string with_sequence(std::uint32_t sequence, const std::string& body);
// The sequence number at the start of `frame`, removed from it; MalformedFrame if it has none.
std::uint32_t take_sequence(std::string& frame);

// frame = length:u32 bytes[length]; every string inside = length:u32 bytes.
// `pch`: compile with NVRTC's automatic precompiled headers (the worker keeps them for the next
// program with the same options).
std::string encode_request(const Program& program, const Arch& arch, bool pch, const std::string& cuda_home);
// Throws kjit::Error for a malformed request.
void decode_request(const std::string& frame, Program& program, std::string& arch, bool& pch, std::string& cuda_home);

// A successful compile, or the error compile() threw (rethrown with its type by decode_response).
std::string encode_binary(const Binary& binary);
std::string encode_error(const std::exception& error);
// The Binary of a success; rethrows a CompileError/OptionError/ArchError/ToolchainError/Error
// for an error frame; MalformedFrame for a frame that does not decode.
Binary decode_response(const std::string& frame);

// Milliseconds on the steady clock: the deadlines below.
std::int64_t steady_ms() noexcept;
constexpr std::int64_t k_no_deadline = -1;

// Writes one frame by `deadline_ms` (k_no_deadline: however long it takes); false if the pipe
// broke or the deadline passed first (`timed_out` is then set, when given).
bool write_frame(int fd, const std::string& payload, std::int64_t deadline_ms = k_no_deadline,
                 bool* timed_out = nullptr);
// Reads one frame by `deadline_ms`, the whole of it (a peer that sends part of a frame and stops
// does not hold the reader past it); nothing at end of file, on a broken/short frame or when the
// deadline passed (`timed_out` is then set, when given). Signals do not restart the wait.
std::optional<std::string> read_frame(int fd, std::int64_t deadline_ms = k_no_deadline, bool* timed_out = nullptr);

} // namespace kjit::batch
