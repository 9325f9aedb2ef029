// The pipe protocol between a batch and its worker processes: length-prefixed frames carrying a
// compile request (program + arch) or its result (a Binary or a typed error).
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/program.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

namespace kjit::batch {

// The first frame each way: the batch sends hello(false) ("kjit batch protocol N"), the worker
// answers hello(true) ("kjit-worker protocol N"). A worker given anything else answers all the same
// and exits; a batch whose worker answers otherwise (another version, a program that echoes)
// compiles in-process rather than exchange frames the two sides read differently.
constexpr std::uint32_t k_protocol_version = 1;
std::string hello(bool from_worker);

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
// for an error frame; kjit::Error for a malformed frame.
Binary decode_response(const std::string& frame);

// Writes one frame; false if the pipe broke.
bool write_frame(int fd, const std::string& payload);
// Reads one frame; nothing at end of file or on a broken/short frame.
std::optional<std::string> read_frame(int fd);

} // namespace kjit::batch
