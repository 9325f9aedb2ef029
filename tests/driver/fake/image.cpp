// Reads the kernels of a module image for the fake driver (independently of kjit's own reader).
#include "image.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <regex>

namespace fake_cuda {

namespace {

template <typename T>
T read(const unsigned char* at)
{
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

struct Section {
  std::string name;
  std::uint32_t type;
  std::uint64_t offset, size;
  std::uint32_t link, info;
};

bool read_cubin(const unsigned char* d, std::vector<Kernel>& kernels, std::string& why)
{
  if (d[4] != 2 || d[5] != 1 || read<std::uint16_t>(d + 0x12) != 190) {
    why = "not an ELF64 little-endian EM_CUDA image";
    return false;
  }
  const auto shoff = read<std::uint64_t>(d + 0x28);
  const auto shentsize = read<std::uint16_t>(d + 0x3a);
  const auto shnum = read<std::uint16_t>(d + 0x3c);
  const auto shstrndx = read<std::uint16_t>(d + 0x3e);
  if (shoff == 0 || shnum == 0 || shstrndx >= shnum || shentsize < 64) {
    why = "no section table";
    return false;
  }
  std::vector<Section> sections(shnum);
  for (unsigned i = 0; i < shnum; ++i) {
    const unsigned char* h = d + shoff + std::uint64_t{i} * shentsize;
    sections[i] = {std::to_string(read<std::uint32_t>(h)), read<std::uint32_t>(h + 4), read<std::uint64_t>(h + 0x18),
                   read<std::uint64_t>(h + 0x20), read<std::uint32_t>(h + 0x28), read<std::uint32_t>(h + 0x2c)};
  }
  const char* names = reinterpret_cast<const char*>(d + sections[shstrndx].offset);
  std::map<std::string, const Section*> by_name;
  for (Section& s : sections) {
    s.name = names + std::stoul(s.name);
    by_name[s.name] = &s;
  }
  for (const Section& s : sections) {
    if (s.name.rfind(".nv.info.", 0) != 0) {
      continue;
    }
    Kernel kernel;
    kernel.name = s.name.substr(9);
    const unsigned char* p = d + s.offset;
    const unsigned char* end = p + s.size;
    while (p + 2 <= end) {
      const unsigned format = p[0];
      const unsigned attribute = p[1];
      if (format == 4) {  // EIFMT_SVAL: u16 size, payload
        const auto size = read<std::uint16_t>(p + 2);
        const unsigned char* payload = p + 4;
        if (attribute == 0x17) {  // EIATTR_KPARAM_INFO: index, ordinal, offset, flags (size << 18)
          const auto ordinal = read<std::uint16_t>(payload + 4);
          const auto offset = read<std::uint16_t>(payload + 6);
          const auto flags = read<std::uint32_t>(payload + 8);
          if (kernel.params.size() <= ordinal) {
            kernel.params.resize(ordinal + 1u);
          }
          kernel.params[ordinal] = {offset, flags >> 18};
        } else if (attribute == 0x0a) {  // EIATTR_PARAM_CBANK: section, offset, size
          kernel.param_bytes = read<std::uint16_t>(payload + 6);
        }
        p += 4 + size;
      } else if (format == 3 || format == 2) {
        p += 4;
      } else {
        p += 2;
      }
    }
    if (const auto text = by_name.find(".text." + kernel.name); text != by_name.end()) {
      const std::uint32_t info = text->second->info;
      kernel.registers = static_cast<int>((info >> 24) != 0 ? info >> 24 : info & 0xff);
    }
    if (const auto shared = by_name.find(".nv.shared." + kernel.name); shared != by_name.end()) {
      kernel.static_shared = static_cast<int>(shared->second->size);
    }
    kernels.push_back(std::move(kernel));
  }
  return true;
}

std::size_t ptx_type_size(const std::string& type)
{
  const std::size_t bits = std::stoul(type.substr(1));
  return bits / 8;
}

void read_ptx(const char* text, std::vector<Kernel>& kernels)
{
  const std::string ptx(text);
  static const std::regex entry(R"(\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\))");
  static const std::regex param(R"(\.param\s+(?:\.align\s+(\d+)\s+)?\.([a-z]\d+)\s+[\w$]+(?:\[(\d+)\])?)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry); it != std::sregex_iterator(); ++it) {
    Kernel kernel;
    kernel.name = (*it)[1];
    const std::string list = (*it)[2];
    std::size_t offset = 0;
    for (auto p = std::sregex_iterator(list.begin(), list.end(), param); p != std::sregex_iterator(); ++p) {
      const std::size_t element = ptx_type_size((*p)[2]);
      const std::size_t count = (*p)[3].matched ? std::stoul((*p)[3]) : 1;
      const std::size_t align = (*p)[1].matched ? std::stoul((*p)[1]) : element;
      offset = (offset + align - 1) / align * align;
      kernel.params.push_back({offset, element * count});
      offset += element * count;
    }
    kernel.param_bytes = offset;
    kernels.push_back(std::move(kernel));
  }
}

} // namespace

bool read_image(const void* image, std::vector<Kernel>& kernels, bool& is_ptx, std::string& why)
{
  const auto* d = static_cast<const unsigned char*>(image);
  is_ptx = false;
  if (std::memcmp(d, "\x7f" "ELF", 4) == 0) {
    return read_cubin(d, kernels, why);
  }
  const char* text = static_cast<const char*>(image);
  if (std::strstr(text, ".version") != nullptr && std::strstr(text, ".target") != nullptr) {
    is_ptx = true;
    read_ptx(text, kernels);
    return true;
  }
  why = "neither a cubin nor PTX";
  return false;
}

} // namespace fake_cuda
