// What one page fault of a read-only file map costs, by how far apart the pages are: the floor
// under the 100 000-entry lookup (docs/benchmarks.md, "Issue 15: where each target stands").
//   kjit_bench_fault_cost FILE TOUCHES SEED [random]
// maps FILE (already in the OS cache: read it once first), touches TOUCHES pages at pseudo-random
// offsets, prints the mean time per touch; "random" first asks madvise(MADV_RANDOM), which turns
// the kernel's fault-around (up to 16 neighbouring cached pages mapped per fault) off.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char** argv)
{
  if (argc < 4) {
    std::fprintf(stderr, "usage: kjit_bench_fault_cost FILE TOUCHES SEED [random]\n");
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
  if (argc > 4 && std::strcmp(argv[4], "random") == 0) {
    ::madvise(const_cast<char*>(map), size, MADV_RANDOM);
  }
  const std::size_t pages = size / 4096;
  long sum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < touches; ++i) {
    sum += map[(static_cast<std::size_t>(std::rand()) * 7919u % pages) * 4096];
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %zu MiB, %ld touches%s: %.2f us per touch (%ld)\n", argv[1], size >> 20, touches,
              argc > 4 ? " (MADV_RANDOM)" : "", us / static_cast<double>(touches), sum & 1);
  return 0;
}
