// What one page fault of a read-only file map costs, by how far apart the pages are: the floor
// under the 100 000-entry lookup (docs/benchmarks.md, "Issue 15: where each target stands").
//   kjit_bench_fault_cost FILE TOUCHES SEED [random] [span=BYTES]
// maps FILE (already in the OS cache: read it once first), touches TOUCHES pages at pseudo-random
// offsets, prints the mean time per touch; "random" first asks madvise(MADV_RANDOM), which turns
// the kernel's fault-around (up to 16 neighbouring cached pages mapped per fault) off. With
// span=BYTES each touch reads BYTES from its offset (a record's size), and the same reads are
// timed again with every page mapped: what is left is the CPU caches (a small file stays in them).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

int main(int argc, char** argv)
{
  if (argc < 4) {
    std::fprintf(stderr, "usage: kjit_bench_fault_cost FILE TOUCHES SEED [random] [span=BYTES]\n");
    return 2;
  }
  const int fd = ::open(argv[1], O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size < 4096) {
    std::perror(argv[1]);
    return 1;
  }
  const long touches = std::atol(argv[2]);
  std::srand(static_cast<unsigned>(std::atol(argv[3])));
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  auto* map = static_cast<const volatile char*>(::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0));
  if (map == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  bool random = false;
  std::size_t span = 1;
  for (int i = 4; i < argc; ++i) {
    if (std::strcmp(argv[i], "random") == 0) {
      random = true;
    } else if (std::strncmp(argv[i], "span=", 5) == 0) {
      span = std::max<std::size_t>(1, std::strtoul(argv[i] + 5, nullptr, 10));
    }
  }
  if (random) {
    ::madvise(const_cast<char*>(map), size, MADV_RANDOM);
  }
  const std::size_t pages = size / 4096;
  if (span > size) {
    std::fprintf(stderr, "span=%zu is larger than the file\n", span);
    return 2;
  }
  std::vector<std::size_t> offsets;
  for (long i = 0; i < touches; ++i) {
    offsets.push_back(std::min((static_cast<std::size_t>(std::rand()) * 7919u % pages) * 4096, size - span));
  }
  long sum = 0;
  const auto pass = [&] {
    const auto start = std::chrono::steady_clock::now();
    for (const std::size_t offset : offsets) {
      for (std::size_t at = 0; at < span; at += 64) {
        sum += map[offset + at];  // one read a cache line
      }
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
           static_cast<double>(touches);
  };
  const double first = pass();
  const double again = pass();
  std::printf("%s: %zu MiB, %ld touches of %zu bytes%s: %.2f us per touch, %.2f us again with the pages mapped (%ld)\n",
              argv[1], size >> 20, touches, span, random ? " (MADV_RANDOM)" : "", first, again, sum & 1);
  return 0;
}
