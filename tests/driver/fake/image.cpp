// Reads the kernels of a module image for the fake driver (independently of kjit's own reader).
#include "image.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>

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

void read_cubin_variables(const unsigned char* d, const std::vector<Section>& sections, std::vector<Variable>& variables)
{
  for (const Section& table : sections) {
    if (table.type != 2) {  // SHT_SYMTAB
      continue;
    }
    const char* names = reinterpret_cast<const char*>(d + sections[table.link].offset);
    for (std::uint64_t at = 24; at + 24 <= table.size; at += 24) {  // entry 0 is the null symbol
      const unsigned char* sym = d + table.offset + at;
      const auto shndx = read<std::uint16_t>(sym + 6);
      if ((sym[4] & 0xf) != 1 || shndx == 0 || shndx >= sections.size()) {  // STT_OBJECT in a section
        continue;
      }
      const Section& home = sections[shndx];
      if (home.name.rfind(".nv.global", 0) != 0 && home.name != ".nv.constant3") {
        continue;
      }
      Variable v;
      v.name = names + read<std::uint32_t>(sym);
      v.size = read<std::uint64_t>(sym + 16);
      v.init.assign(v.size, 0);
      const auto value = read<std::uint64_t>(sym + 8);
      if (home.type != 8 && value + v.size <= home.size) {  // not SHT_NOBITS: initial bytes
        std::memcpy(v.init.data(), d + home.offset + value, v.size);
      }
      variables.push_back(std::move(v));
    }
  }
}

bool read_cubin(const unsigned char* d, std::vector<Kernel>& kernels, std::vector<Variable>& variables, std::string& why)
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
        // EIATTR_KPARAM_INFO: index, ordinal, offset, flags (size << 18); EIATTR_KPARAM_INFO_V2
        // (0x45, CUDA 13 for a parameter over 16383 bytes): the size in the low 24 bits.
        if (attribute == 0x17 || attribute == 0x45) {
          const auto ordinal = read<std::uint16_t>(payload + 4);
          const auto offset = read<std::uint16_t>(payload + 6);
          const auto flags = read<std::uint32_t>(payload + 8);
          if (kernel.params.size() <= ordinal) {
            kernel.params.resize(ordinal + 1u);
          }
          kernel.params[ordinal] = {offset, attribute == 0x17 ? flags >> 18 : flags & 0xffffff};
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
  read_cubin_variables(d, sections, variables);
  return true;
}

std::size_t ptx_type_size(const std::string& type)
{
  const std::size_t bits = std::stoul(type.substr(1));
  return bits / 8;
}

// Module-scope ".global .align 4 .u32 name[2] = {1, 2};" and ".const" declarations.
void read_ptx_variables(const std::string& ptx, std::vector<Variable>& variables)
{
  static const std::regex declaration(
    R"((?:^|\n)\s*(?:\.visible\s+)?\.(?:global|const)\s+(?:\.align\s+\d+\s+)?\.[a-z]+(\d+)\s+([\w$]+)(?:\[(\d+)\])?(?:\s*=\s*\{?([^;}]*)\}?)?\s*;)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), declaration); it != std::sregex_iterator(); ++it) {
    const std::size_t element = std::stoul((*it)[1]) / 8;
    Variable v;
    v.name = (*it)[2];
    v.size = element * ((*it)[3].matched ? std::stoul((*it)[3]) : 1);
    v.init.assign(v.size, 0);
    std::istringstream values((*it)[4].str());
    std::size_t offset = 0;
    for (std::string item; std::getline(values, item, ',') && offset + element <= v.size; offset += element) {
      const long long number = std::stoll(item, nullptr, 0);
      std::memcpy(v.init.data() + offset, &number, element);  // little-endian: the low bytes
    }
    variables.push_back(std::move(v));
  }
}

void read_ptx(const char* text, std::vector<Kernel>& kernels, std::vector<Variable>& variables)
{
  const std::string ptx(text);
  read_ptx_variables(ptx, variables);
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

// Where a cubin can run: the same major SM, an equal or older minor.
bool runs_on(int sm, int cc)
{
  return sm / 10 == cc / 10 && sm % 10 <= cc % 10;
}

int cubin_sm(const unsigned char* d)
{
  const auto flags = read<std::uint32_t>(d + 0x30);
  return static_cast<int>(d[8] >= 7 ? (flags >> 8) & 0xff : flags & 0xff);
}

Outcome read_ptx_checked(const char* text, int cc, std::vector<Kernel>& kernels, std::vector<Variable>& variables,
                         std::string& why)
{
  static const std::regex target(R"(\.target\s+sm_(\d+))");
  std::cmatch match;
  if (std::regex_search(text, match, target) && std::stoi(match[1]) > cc) {
    why = "ptxas application ptx input, line 1; fatal   : SM version specified by .target is higher than default "
          "SM version assumed (sm_" + std::string(match[1]) + " > sm_" + std::to_string(cc) + ")";
    return Outcome::invalid_ptx;
  }
  read_ptx(text, kernels, variables);
  return Outcome::ok;
}

// fatBinaryHeader (magic, version, header size, entries' size), then entries: kind (1 PTX, 2 ELF)
// at 0, header size at 4, payload size at 8, SM at 28, flags at 40 (0x2000: compressed).
Outcome read_fatbin(const unsigned char* d, int cc, std::vector<Kernel>& kernels, std::vector<Variable>& variables,
                    std::string& why)
{
  const auto header = read<std::uint16_t>(d + 6);
  const auto size = read<std::uint64_t>(d + 8);
  const unsigned char* ptx = nullptr;
  std::uint64_t ptx_size = 0;
  for (const unsigned char* e = d + header; e + 48 <= d + header + size;) {
    const auto kind = read<std::uint16_t>(e);
    const auto entry_header = read<std::uint32_t>(e + 4);
    const auto payload = read<std::uint64_t>(e + 8);
    const auto sm = static_cast<int>(read<std::uint32_t>(e + 28));
    const bool compressed = (read<std::uint64_t>(e + 40) & 0x2000) != 0;
    if (!compressed && kind == 2 && runs_on(sm, cc)) {
      return read_cubin(e + entry_header, kernels, variables, why) ? Outcome::ok : Outcome::invalid_image;
    }
    if (!compressed && kind == 1 && sm <= cc) {
      ptx = e + entry_header;
      ptx_size = payload;
    }
    e += entry_header + payload;
  }
  if (ptx == nullptr) {
    why = "no image for sm_" + std::to_string(cc) + " in the fatbin";
    return Outcome::no_binary_for_gpu;
  }
  const std::string text(reinterpret_cast<const char*>(ptx), ptx_size);
  return read_ptx_checked(text.c_str(), cc, kernels, variables, why);
}

} // namespace

Outcome read_image(const void* image, int cc, std::vector<Kernel>& kernels, std::vector<Variable>& variables,
                   Kind& kind, std::string& why)
{
  const auto* d = static_cast<const unsigned char*>(image);
  if (std::memcmp(d, "\x7f" "ELF", 4) == 0) {
    kind = Kind::cubin;
    if (!read_cubin(d, kernels, variables, why)) {
      return Outcome::invalid_image;
    }
    if (!runs_on(cubin_sm(d), cc)) {
      why = "a cubin for sm_" + std::to_string(cubin_sm(d)) + " on an sm_" + std::to_string(cc) + " device";
      return Outcome::no_binary_for_gpu;
    }
    return Outcome::ok;
  }
  if (read<std::uint32_t>(d) == 0xBA55ED50) {
    kind = Kind::fatbin;
    return read_fatbin(d, cc, kernels, variables, why);
  }
  const char* text = static_cast<const char*>(image);
  if (std::strstr(text, ".version") != nullptr && std::strstr(text, ".target") != nullptr) {
    kind = Kind::ptx;
    return read_ptx_checked(text, cc, kernels, variables, why);
  }
  why = "neither a cubin nor PTX";
  return Outcome::invalid_image;
}

} // namespace fake_cuda
