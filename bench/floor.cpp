// The floor of section [9]: a C++ program, not linked to kjit, that reads one file whole.
// Usage: kjit_bench_floor FILE         reads it with std::ifstream (the floor the target names);
//        kjit_bench_floor --posix FILE reads it with open/read, no iostreams: the same program
//                                      without the stream library's locale set-up, which kjit's
//                                      hit never does (≈ 60 µs and 16 page faults here).
// Exits 0 when it read something, 1 otherwise.
#include <fcntl.h>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

namespace {

std::string read_posix(const char* path)
{
  std::string bytes;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  char buffer[8192];
  for (ssize_t got = 0; fd >= 0 && (got = ::read(fd, buffer, sizeof buffer)) > 0;) {
    bytes.append(buffer, static_cast<std::size_t>(got));
  }
  if (fd >= 0) {
    ::close(fd);
  }
  return bytes;
}

} // namespace

int main(int argc, char** argv)
{
  if (argc == 3 && std::strcmp(argv[1], "--posix") == 0) {
    return read_posix(argv[2]).empty() ? 1 : 0;
  }
  if (argc != 2) {
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return bytes.empty() ? 1 : 0;
}
