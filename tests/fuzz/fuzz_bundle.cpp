// libFuzzer target: a bundle file (bundle/reader.cpp, bundle/format.cpp) is bytes from anywhere (a
// download, a damaged disk). Opening it, checking its data and reading every record it indexes must
// accept or refuse it with a BundleError, never crash, over-read or allocate what it does not hold.
#include "bundle/reader.hpp"

#include <kjit/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  // The reader opens a path: the input as an in-memory file.
  const int fd = ::memfd_create("bundle", MFD_CLOEXEC);
  if (fd < 0) {
    return 0;
  }
  for (std::size_t at = 0; at < size;) {
    const ssize_t wrote = ::write(fd, data + at, size - at);
    if (wrote <= 0) {
      ::close(fd);
      return 0;
    }
    at += static_cast<std::size_t>(wrote);
  }
  try {
    const kjit::bundle::Reader reader("/proc/self/fd/" + std::to_string(fd));
    try {
      reader.verify_data();
    } catch (const kjit::BundleError&) {
    }
    for (const auto& entry : reader.index()) {
      try {
        const std::string record = reader.read(entry);
        if (reader.find(entry.entry_key) == nullptr) {
          __builtin_trap();  // an indexed key is found
        }
        (void)record;
      } catch (const kjit::BundleError&) {
      }
    }
  } catch (const kjit::BundleError&) {
  }
  ::close(fd);
  return 0;
}
