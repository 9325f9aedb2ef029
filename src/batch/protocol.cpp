// Frames and the encoding of requests, binaries and errors for worker pipes.
#include "batch/protocol.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <poll.h>
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
      throw MalformedFrame("malformed worker message");
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
      throw MalformedFrame("malformed worker message");
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

std::string with_sequence(std::uint32_t sequence, const std::string& body)
{
  std::string out;
  put_u32(out, sequence);
  return out + body;
}

std::uint32_t take_sequence(std::string& frame)
{
  const std::uint32_t sequence = Reader(frame).u32();
  frame.erase(0, sizeof sequence);
  return sequence;
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
    throw MalformedFrame("malformed worker message");
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
      throw MalformedFrame("malformed worker message");
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
  throw MalformedFrame("malformed worker message");
}

std::int64_t steady_ms() noexcept
{
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// Waits until `fd` is ready for `events` or `deadline_ms` passes (false, and `timed_out` set).
// An interrupted poll() waits again for what is left, never for the whole time.
bool wait_ready(int fd, short events, std::int64_t deadline_ms, bool* timed_out)
{
  if (deadline_ms == k_no_deadline) {
    return true;
  }
  for (;;) {
    const std::int64_t left = deadline_ms - steady_ms();
    if (left <= 0) {
      if (timed_out != nullptr) {
        *timed_out = true;
      }
      return false;
    }
    pollfd ready{fd, events, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(std::min<std::int64_t>(left, 1 << 30)));
    if (polled > 0) {
      return true;  // readable, writable, or closed: the read or write says which
    }
    if (polled < 0 && errno != EINTR) {
      return false;
    }
  }
}

bool read_exact(int fd, char* out, std::size_t size, std::int64_t deadline_ms, bool* timed_out)
{
  std::size_t done = 0;
  while (done < size) {
    if (!wait_ready(fd, POLLIN, deadline_ms, timed_out)) {
      return false;
    }
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

bool write_frame(int fd, const std::string& payload, std::int64_t deadline_ms, bool* timed_out)
{
  std::string frame;
  put(frame, payload);
  // With a deadline, each send takes what the socket holds now (a peer that stops reading leaves
  // it full) and the next waits for room within what is left of the time.
  const int flags = MSG_NOSIGNAL | (deadline_ms == k_no_deadline ? 0 : MSG_DONTWAIT);
  std::size_t done = 0;
  while (done < frame.size()) {
    if (!wait_ready(fd, POLLOUT, deadline_ms, timed_out)) {
      return false;
    }
    // send() on a socket cannot raise SIGPIPE; fall back to write() for pipes and files.
    ssize_t n = ::send(fd, frame.data() + done, frame.size() - done, flags);
    if (n < 0 && errno == ENOTSOCK) {
      n = ::write(fd, frame.data() + done, frame.size() - done);
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<std::string> read_frame(int fd, std::int64_t deadline_ms, bool* timed_out)
{
  std::uint32_t size = 0;
  if (!read_exact(fd, reinterpret_cast<char*>(&size), sizeof size, deadline_ms, timed_out) || size > k_max_frame) {
    return std::nullopt;
  }
  // Grown as the bytes arrive: a length that promises more than comes costs no more memory.
  constexpr std::size_t k_chunk = 1u << 20;
  std::string payload;
  while (payload.size() < size) {
    const std::size_t at = payload.size();
    payload.resize(at + std::min<std::size_t>(k_chunk, size - at));
    if (!read_exact(fd, payload.data() + at, payload.size() - at, deadline_ms, timed_out)) {
      return std::nullopt;
    }
  }
  return payload;
}

} // namespace kjit::batch
