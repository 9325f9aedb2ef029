// ELF header checks for cubins: cheap enough to run on every store read.
#include <kjit/cubin.hpp>

#include <cstdint>
#include <cstring>

namespace kjit {

namespace {

constexpr std::uint16_t k_em_cuda = 190;
constexpr std::size_t k_elf64_header_size = 64;

template <typename T>
T read_le(std::string_view bytes, std::size_t offset)
{
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);  // x86-64 and aarch64 are little-endian
  return value;
}

} // namespace

bool inspect_cubin(std::string_view bytes, CubinInfo& info, std::string& why)
{
  if (bytes.size() < k_elf64_header_size) {
    why = "too short for an ELF64 header (" + std::to_string(bytes.size()) + " bytes)";
    return false;
  }
  if (bytes.substr(0, 4) != std::string_view("\x7f" "ELF", 4)) {
    why = "not an ELF file";
    return false;
  }
  if (bytes[4] != 2 || bytes[5] != 1) {
    why = "not a little-endian ELF64 file";
    return false;
  }
  const auto machine = read_le<std::uint16_t>(bytes, 18);
  if (machine != k_em_cuda) {
    why = "e_machine is " + std::to_string(machine) + ", not EM_CUDA (190)";
    return false;
  }
  const auto flags = read_le<std::uint32_t>(bytes, 48);
  info.abi_version = static_cast<unsigned char>(bytes[8]);
  // ABI v8 and later keep the SM number in bits 8..15 of e_flags; older cubins in bits 0..7.
  info.sm = info.abi_version >= 8 ? static_cast<int>((flags >> 8) & 0xff) : static_cast<int>(flags & 0xff);
  const auto section_offset = read_le<std::uint64_t>(bytes, 40);
  const auto section_size = read_le<std::uint16_t>(bytes, 58);
  const auto section_count = read_le<std::uint16_t>(bytes, 60);
  if (section_offset + std::uint64_t(section_size) * section_count > bytes.size()) {
    why = "section headers lie past the end (truncated cubin)";
    return false;
  }
  return true;
}

bool check_cubin(std::string_view bytes, int sm, std::string& why)
{
  CubinInfo info;
  if (!inspect_cubin(bytes, info, why)) {
    return false;
  }
  if (info.sm != sm) {
    why = "cubin is for sm_" + std::to_string(info.sm) + ", expected sm_" + std::to_string(sm);
    return false;
  }
  return true;
}

} // namespace kjit
