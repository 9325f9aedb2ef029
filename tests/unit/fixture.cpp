// Test helpers shared by the unit tests.
#include "fixture.hpp"

#include "store/store.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

#include <arpa/inet.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <csignal>
#include <ftw.h>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kjit::test {

TempDir::TempDir()
{
  char pattern[] = "/tmp/kjit-test-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  m_path = pattern;
}

TempDir::~TempDir()
{
  ::nftw(
    m_path.c_str(),
    [](const char* path, const struct stat*, int type, FTW*) {
      if (type == FTW_DP) {
        ::chmod(path, 0700);  // only real folders: chmod() on a symlink would change its target
        return ::rmdir(path);
      }
      return ::unlink(path);
    },
    32, FTW_DEPTH | FTW_PHYS);
}

CacheFixture::CacheFixture() : config(current_config())
{
  config.cache_dir = tmp.path() + "/cache";
  config.disable_cache = false;
  config.verbose = false;
  config.mirror = true;
  config.dump_ir = false;
  config.shared_cache = false;
  config.arch = "sm_90";
}

Program small_program(const std::string& tag)
{
  return {"small_" + tag + ".cu",
          "extern \"C\" __global__ void small_" + tag + "(int* p) { p[threadIdx.x] = " +
            std::to_string(std::hash<std::string>{}(tag) % 100000) + "; }\n",
          {},
          {},
          {}};
}

InDir::InDir(const std::string& dir)
{
  BOOST_TEST_REQUIRE(::getcwd(m_back, sizeof m_back) != nullptr);
  BOOST_TEST_REQUIRE(::chdir(dir.c_str()) == 0);
}

InDir::~InDir()
{
  static_cast<void>(::chdir(m_back));
}

std::string read_text(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool mount_small_tmpfs(const std::string& mount_point, const char* size)
{
  if (::geteuid() != 0) {
    BOOST_TEST_MESSAGE("skipped: mounting a small tmpfs needs root");
    return false;
  }
  BOOST_TEST_REQUIRE(::mkdir(mount_point.c_str(), 0700) == 0);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, size) != 0) {
    BOOST_TEST_MESSAGE("skipped: cannot mount a tmpfs here");
    return false;
  }
  return true;
}

void write_text(const std::string& path, const std::string& content)
{
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

void put(const std::string& path, const std::string& content)
{
  for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    ::mkdir(path.substr(0, at).c_str(), 0700);
  }
  write_text(path, content);
}

bool exists(const std::string& path)
{
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::thread nil_redis_server(int listener)
{
  return std::thread([listener] {
    const int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    char request[4096];
    while (peer >= 0 && ::recv(peer, request, sizeof request, 0) > 0 && ::send(peer, "$-1\r\n", 5, MSG_NOSIGNAL) == 5) {
    }
    if (peer >= 0) {
      ::close(peer);
    }
  });
}

int loopback_listener(int& port)
{
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 64) != 0) {
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  socklen_t length = sizeof address;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);
  return listener;
}

int run(const std::string& command, std::string& output)
{
  output.clear();
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return -1;
  }
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    output += buffer.data();
  }
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string helper(const char* variable)
{
  const char* path = std::getenv(variable);
  if (path == nullptr) {
    throw std::runtime_error(std::string(variable) + " is not set (run the tests through meson test)");
  }
  return path;
}

void settle()
{
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
}

} // namespace kjit::test

namespace kjit::test {

std::string probe_cache(const std::string& cache_dir, const std::string& file, const std::string& arch,
                        const std::string& env)
{
  std::string output;
  run(env + " '" + helper("KJIT_TEST_CACHE_PROBE") + "' '" + cache_dir + "' '" + file + "' " + arch + " 2>&1", output);
  return output;
}

void limit_file_size_in_child(std::size_t bytes)
{
  ::alarm(60);
  ::signal(SIGXFSZ, SIG_DFL);
  const struct rlimit limit {bytes, bytes};
  ::setrlimit(RLIMIT_FSIZE, &limit);
}

bool output_has_line(const std::string& output, const std::string& line)
{
  return ("\n" + output).find("\n" + line + "\n") != std::string::npos;
}

std::vector<std::pair<std::string, std::string>> manifest_rows(const kjit::store::Store& store)
{
  std::vector<std::pair<std::string, std::string>> rows;
  store.for_each(kjit::store::Table::manifests, [&](std::string_view key, std::string_view value) {
    if (key.size() == 32) {
      rows.emplace_back(key, value);
    }
  });
  return rows;
}

std::size_t manifest_heads(const kjit::store::Store& store)
{
  std::size_t heads = 0;
  store.for_each(kjit::store::Table::manifests, [&](std::string_view key, std::string_view) {
    heads += key.size() == 33 && key.back() == 'h' ? 1 : 0;
  });
  return heads;
}

std::string raw_key(const kjit::PreparedProgram& prepared)
{
  const std::string hex = prepared.key();
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return bytes;
}

// `cubin` with section 1's file offset moved past the end: the ELF header and the tables' ranges
// are sound, the section walk is not.
std::string with_a_section_past_the_end(std::string cubin)
{
  std::uint64_t sections = 0;
  std::memcpy(&sections, cubin.data() + 40, sizeof sections);
  const std::uint64_t far = std::uint64_t(1) << 40;
  std::memcpy(cubin.data() + sections + 64 + 24, &far, sizeof far);
  return cubin;
}

} // namespace kjit::test
