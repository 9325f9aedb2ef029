// Frames and the encoding of requests, binaries and errors for worker pipes.
#include "batch/protocol.hpp"

#include <kjit/error.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace kjit::batch {

namespace {

constexpr std::uint32_t k_max_frame = 1u << 30;

enum class Kind : std::uint8_t { binary = 1, compile_error, option_error, arch_error, toolchain_error, error };

void put_u32(std::string& out, std::uint32_t value)
{
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void put(std::string& out, const std::string& text)
{
  put_u32(out, static_cast<std::uint32_t>(text.size()));
  out += text;
}

class Reader {
public:
  explicit Reader(const std::string& frame) : m_frame(frame) {}

  std::uint32_t u32()
  {
    if (m_frame.size() - m_at < 4) {
      throw Error("malformed worker message");
    }
    std::uint32_t value = 0;
    std::memcpy(&value, m_frame.data() + m_at, sizeof value);
    m_at += 4;
    return value;
  }

  std::string text()
  {
    const std::uint32_t size = u32();
    if (m_frame.size() - m_at < size) {
      throw Error("malformed worker message");
    }
    std::string out = m_frame.substr(m_at, size);
    m_at += size;
    return out;
  }

private:
  const std::string& m_frame;
  std::size_t m_at = 0;
};

} // namespace

std::string hello(bool from_worker)
{
  return std::string(from_worker ? "kjit-worker" : "kjit batch") + " protocol " + std::to_string(k_protocol_version);
}

std::string encode_request(const Program& program, const Arch& arch, bool pch, const std::string& cuda_home)
{
  std::string out;
  put_u32(out, pch ? 1 : 0);
  put(out, cuda_home);  // the toolkit of the Cache that asked, not the worker's environment
  put(out, arch.str());
  put(out, program.name);
  put(out, program.source);
  put_u32(out, static_cast<std::uint32_t>(program.headers.size()));
  for (const auto& [name, content] : program.headers) {
    put(out, name);
    put(out, content);
  }
  put_u32(out, static_cast<std::uint32_t>(program.options.size()));
  for (const auto& option : program.options) {
    put(out, option);
  }
  put_u32(out, static_cast<std::uint32_t>(program.name_expressions.size()));
  for (const auto& expression : program.name_expressions) {
    put(out, expression);
  }
  return out;
}

void decode_request(const std::string& frame, Program& program, std::string& arch, bool& pch, std::string& cuda_home)
{
  Reader in(frame);
  pch = in.u32() != 0;
  cuda_home = in.text();
  arch = in.text();
  program.name = in.text();
  program.source = in.text();
  for (std::uint32_t n = in.u32(), i = 0; i < n; ++i) {
    std::string name = in.text();
    program.headers[name] = in.text();
  }
  for (std::uint32_t n = in.u32(), i = 0; i < n; ++i) {
    program.options.push_back(in.text());
  }
  for (std::uint32_t n = in.u32(), i = 0; i < n; ++i) {
    program.name_expressions.push_back(in.text());
  }
}

std::string encode_binary(const Binary& binary)
{
  std::string out(1, static_cast<char>(Kind::binary));
  put(out, binary.arch);
  put(out, binary.ptx);
  put(out, binary.cubin);
  put(out, binary.cubin_path);
  put(out, binary.log);
  put_u32(out, static_cast<std::uint32_t>(binary.lowered_names.size()));
  for (const auto& [expression, lowered] : binary.lowered_names) {
    put(out, expression);
    put(out, lowered);
  }
  const double timings[] = {binary.timings.load_ms, binary.timings.nvrtc_ms, binary.timings.link_ms,
                            binary.timings.total_ms};
  out.append(reinterpret_cast<const char*>(timings), sizeof timings);
  return out;
}

std::string encode_error(const std::exception& error)
{
  std::string out(1, static_cast<char>(Kind::error));
  if (const auto* e = dynamic_cast<const CompileError*>(&error)) {
    out[0] = static_cast<char>(Kind::compile_error);
    put(out, e->program_name());
    put(out, e->arch());
    put(out, e->log());
    put_u32(out, static_cast<std::uint32_t>(e->options().size()));
    for (const auto& option : e->options()) {
      put(out, option);
    }
    return out;
  }
  if (dynamic_cast<const OptionError*>(&error) != nullptr) {
    out[0] = static_cast<char>(Kind::option_error);
  } else if (dynamic_cast<const ArchError*>(&error) != nullptr) {
    out[0] = static_cast<char>(Kind::arch_error);
  } else if (const auto* t = dynamic_cast<const ToolchainError*>(&error)) {
    out[0] = static_cast<char>(Kind::toolchain_error);
    put_u32(out, static_cast<std::uint32_t>(t->status()));
  }
  put(out, error.what());
  return out;
}

Binary decode_response(const std::string& frame)
{
  if (frame.empty()) {
    throw Error("malformed worker message");
  }
  const auto kind = static_cast<Kind>(frame[0]);
  const std::string body = frame.substr(1);
  Reader in(body);
  switch (kind) {
  case Kind::binary: {
    Binary binary;
    binary.arch = in.text();
    binary.ptx = in.text();
    binary.cubin = in.text();
    binary.cubin_path = in.text();
    binary.log = in.text();
    for (std::uint32_t n = in.u32(), i = 0; i < n; ++i) {
      std::string expression = in.text();
      binary.lowered_names.emplace_back(std::move(expression), in.text());
    }
    double timings[4] = {};
    const std::size_t at = body.size() - sizeof timings;
    if (body.size() < sizeof timings) {
      throw Error("malformed worker message");
    }
    std::memcpy(timings, body.data() + at, sizeof timings);
    binary.timings = {timings[0], timings[1], timings[2], timings[3]};
    return binary;
  }
  case Kind::compile_error: {
    std::string program = in.text();
    std::string arch = in.text();
    std::string log = in.text();
    std::vector<std::string> options;
    for (std::uint32_t n = in.u32(), i = 0; i < n; ++i) {
      options.push_back(in.text());
    }
    throw CompileError(std::move(program), std::move(arch), std::move(log), std::move(options));
  }
  case Kind::option_error: throw OptionError(in.text());
  case Kind::arch_error: throw ArchError(in.text());
  case Kind::toolchain_error: {
    const auto status = static_cast<int>(in.u32());
    throw ToolchainError(in.text(), status);
  }
  case Kind::error: throw Error(in.text());
  }
  throw Error("malformed worker message");
}

bool write_frame(int fd, const std::string& payload)
{
  std::string frame;
  put(frame, payload);
  std::size_t done = 0;
  while (done < frame.size()) {
    // send() on a socket cannot raise SIGPIPE; fall back to write() for pipes and files.
    ssize_t n = ::send(fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) {
      n = ::write(fd, frame.data() + done, frame.size() - done);
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

bool read_exact(int fd, char* out, std::size_t size)
{
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, out + done, size - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace

std::optional<std::string> read_frame(int fd)
{
  std::uint32_t size = 0;
  if (!read_exact(fd, reinterpret_cast<char*>(&size), sizeof size) || size > k_max_frame) {
    return std::nullopt;
  }
  std::string payload(size, '\0');
  if (!read_exact(fd, payload.data(), size)) {
    return std::nullopt;
  }
  return payload;
}

} // namespace kjit::batch
