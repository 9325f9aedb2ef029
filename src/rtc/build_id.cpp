// Reads a library's GNU build ID from its program headers (no section table, no mapping).
#include "rtc/build_id.hpp"

#include "util/hash.hpp"
#include "util/unique_handle.hpp"

#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace kjit::rtc {

namespace {

constexpr std::uint32_t k_pt_note = 4;
constexpr std::uint32_t k_nt_gnu_build_id = 3;
constexpr std::size_t k_max_phdrs = 512;      // ld writes a dozen or so
constexpr std::uint64_t k_max_note_bytes = 1u << 16;

template <typename T>
T read_at(const std::string& bytes, std::size_t at)
{
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

// `size` bytes at `offset` of `fd`, when the file has them all.
std::optional<std::string> pread_all(int fd, std::uint64_t offset, std::uint64_t size, std::uint64_t file_size)
{
  if (offset > file_size || size > file_size - offset) {
    return std::nullopt;
  }
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    if (got <= 0) {
      return std::nullopt;
    }
    done += static_cast<std::size_t>(got);
  }
  return bytes;
}

// The build ID in the notes `notes` (one PT_NOTE segment), in hex.
std::optional<std::string> build_id_in(const std::string& notes)
{
  std::size_t at = 0;
  while (notes.size() - at >= 12) {
    const auto name_size = read_at<std::uint32_t>(notes, at);
    const auto desc_size = read_at<std::uint32_t>(notes, at + 4);
    const auto type = read_at<std::uint32_t>(notes, at + 8);
    const std::uint64_t name_at = at + 12;
    const std::uint64_t desc_at = name_at + ((std::uint64_t{name_size} + 3) & ~std::uint64_t{3});
    const std::uint64_t end = desc_at + ((std::uint64_t{desc_size} + 3) & ~std::uint64_t{3});
    if (desc_at + desc_size > notes.size()) {
      return std::nullopt;
    }
    if (type == k_nt_gnu_build_id && name_size == 4 && notes.compare(name_at, 4, std::string_view("GNU\0", 4)) == 0 &&
        desc_size > 0) {
      return util::to_hex(reinterpret_cast<const std::uint8_t*>(notes.data() + desc_at), desc_size);
    }
    if (end >= notes.size()) {
      return std::nullopt;
    }
    at = static_cast<std::size_t>(end);
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> gnu_build_id(const std::string& path, const FileSeen& seen)
{
  try {
    const util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return std::nullopt;
    }
    if (seen.state == FileSeen::State::present &&
        (seen.size != st.st_size || seen.mtime_sec != st.st_mtim.tv_sec || seen.mtime_nsec != st.st_mtim.tv_nsec ||
         seen.inode != st.st_ino)) {
      return std::nullopt;  // replaced since the caller's stat(): its ID is not that file's
    }
    const auto file_size = static_cast<std::uint64_t>(st.st_size);
    const std::optional<std::string> header = pread_all(fd.get(), 0, 64, file_size);
    // ELF64 (class 2), little-endian (data 1), 56-byte program headers.
    if (!header || header->compare(0, 4, "\x7f" "ELF") != 0 || (*header)[4] != 2 || (*header)[5] != 1 ||
        read_at<std::uint16_t>(*header, 54) != 56) {
      return std::nullopt;
    }
    const auto phoff = read_at<std::uint64_t>(*header, 32);
    const auto phnum = read_at<std::uint16_t>(*header, 56);
    if (phnum == 0 || phnum > k_max_phdrs) {
      return std::nullopt;
    }
    const std::optional<std::string> phdrs = pread_all(fd.get(), phoff, std::uint64_t{phnum} * 56, file_size);
    if (!phdrs) {
      return std::nullopt;
    }
    for (std::size_t i = 0; i < phnum; ++i) {
      const std::size_t at = i * 56;
      if (read_at<std::uint32_t>(*phdrs, at) != k_pt_note) {
        continue;
      }
      const auto offset = read_at<std::uint64_t>(*phdrs, at + 8);
      const auto size = read_at<std::uint64_t>(*phdrs, at + 32);  // p_filesz
      if (size > k_max_note_bytes) {
        continue;
      }
      if (const std::optional<std::string> notes = pread_all(fd.get(), offset, size, file_size)) {
        if (std::optional<std::string> id = build_id_in(*notes)) {
          return id;
        }
      }
    }
  } catch (const std::exception&) {
    // no memory: no ID, so the caller learns the versions the slow way
  }
  return std::nullopt;
}

} // namespace kjit::rtc
