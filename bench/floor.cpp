// The floor of section [9]: a C++ program, not linked to kjit, that reads one file whole.
// Usage: kjit_bench_floor FILE — exits 0 when it read something, 1 otherwise.
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char** argv)
{
  if (argc != 2) {
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return bytes.empty() ? 1 : 0;
}
