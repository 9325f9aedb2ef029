// Kernels, their resources and parameter layouts, read from a cubin's .nv.info sections.
#include <kjit/binary.hpp>
#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include "rtc/elf_view.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace kjit {

namespace {

// .nv.info entry formats: each entry is {u8 format, u8 attribute, u16 value}; EIFMT_SVAL's value is
// the size of the payload that follows.
constexpr std::uint8_t k_eifmt_nval = 1;
constexpr std::uint8_t k_eifmt_bval = 2;
constexpr std::uint8_t k_eifmt_hval = 3;
constexpr std::uint8_t k_eifmt_sval = 4;

// The attributes kjit reads (names as cuobjdump prints them).
constexpr std::uint8_t k_eiattr_max_threads = 0x05;
constexpr std::uint8_t k_eiattr_param_cbank = 0x0a;
constexpr std::uint8_t k_eiattr_frame_size = 0x11;
constexpr std::uint8_t k_eiattr_kparam_info = 0x17;
constexpr std::uint8_t k_eiattr_cbank_param_size = 0x19;
constexpr std::uint8_t k_eiattr_max_stack_size = 0x23;
constexpr std::uint8_t k_eiattr_regcount = 0x2f;
constexpr std::uint8_t k_eiattr_kparam_info_v2 = 0x45;  // CUDA 13, sm_90 and later

// Bytes CUDA reserves at the start of each block's shared memory (cudaDevAttrReservedSharedMemory-
// PerBlock). Linked sm_90+ cubins that refer to it (.nv.reservedSmem.* symbols) count it in each
// kernel's .nv.shared section; ptxas -v and KernelInfo report the kernel's own data only.
constexpr std::uint32_t k_reserved_shared_bytes = 1024;

template <typename T>
T read_le(std::string_view bytes, std::size_t offset)
{
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

[[noreturn]] void malformed(const std::string& what)
{
  throw Error("malformed cubin: " + what);
}

struct Entry {
  std::uint8_t attribute = 0;
  std::uint16_t value = 0;   // inline value (HVAL/BVAL)
  std::string_view payload;  // SVAL payload
};

// The entries of one .nv.info section; throws on an entry that runs past its section.
std::vector<Entry> entries(const rtc::ElfSection& section)
{
  std::vector<Entry> out;
  const std::string_view bytes = section.bytes;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 4) {
      malformed(std::string(section.name) + ": entry at offset " + std::to_string(at) + " is cut off");
    }
    const auto format = static_cast<std::uint8_t>(bytes[at]);
    Entry entry;
    entry.attribute = static_cast<std::uint8_t>(bytes[at + 1]);
    entry.value = read_le<std::uint16_t>(bytes, at + 2);
    at += 4;
    if (format == k_eifmt_sval) {
      if (entry.value > bytes.size() - at) {
        malformed(std::string(section.name) + ": attribute 0x" + std::to_string(entry.attribute) +
                  " runs past the end of its section");
      }
      entry.payload = bytes.substr(at, entry.value);
      at += entry.value;
    } else if (format != k_eifmt_nval && format != k_eifmt_bval && format != k_eifmt_hval) {
      malformed(std::string(section.name) + ": unknown entry format " + std::to_string(format) + " at offset " +
                std::to_string(at - 4));
    }
    out.push_back(entry);
  }
  return out;
}

void need_payload(const Entry& entry, std::size_t size, std::string_view section)
{
  if (entry.payload.size() < size) {
    malformed(std::string(section) + ": attribute " + std::to_string(entry.attribute) + " has " +
              std::to_string(entry.payload.size()) + " bytes, expected " + std::to_string(size));
  }
}

bool names_a_symbol(const Entry& entry)
{
  return entry.attribute == k_eiattr_regcount || entry.attribute == k_eiattr_frame_size ||
         entry.attribute == k_eiattr_max_stack_size;
}

// Attributes (of the global .nv.info) that name a function by symbol index.
void read_symbol_attribute(const Entry& entry, std::string_view section, std::map<std::uint32_t, KernelInfo*>& by_symbol)
{
  need_payload(entry, 8, section);
  const auto found = by_symbol.find(read_le<std::uint32_t>(entry.payload, 0));
  if (found == by_symbol.end()) {
    return;  // a device function's, not a kernel's
  }
  const auto value = read_le<std::uint32_t>(entry.payload, 4);
  KernelInfo& kernel = *found->second;
  if (entry.attribute == k_eiattr_regcount) {
    kernel.registers = static_cast<int>(value);
  } else if (entry.attribute == k_eiattr_frame_size) {
    kernel.local_bytes = value;
  } else {
    kernel.max_stack_bytes = value;
  }
}

// Attributes of a kernel's own .nv.info.<kernel> section.
void read_kernel_attribute(const Entry& entry, std::string_view section, KernelInfo& kernel)
{
  switch (entry.attribute) {
  case k_eiattr_kparam_info:
  case k_eiattr_kparam_info_v2: {
    need_payload(entry, 12, section);
    KernelParam param;
    param.index = read_le<std::uint16_t>(entry.payload, 4);
    param.offset = read_le<std::uint16_t>(entry.payload, 6);
    const auto bits = read_le<std::uint32_t>(entry.payload, 8);
    param.size = entry.attribute == k_eiattr_kparam_info ? (bits >> 18) & 0x3fff : bits & 0xffffff;
    kernel.params.push_back(param);
    break;
  }
  case k_eiattr_param_cbank:
    need_payload(entry, 8, section);
    kernel.param_bytes = read_le<std::uint16_t>(entry.payload, 6);
    break;
  case k_eiattr_cbank_param_size:
    if (kernel.param_bytes == 0) {
      kernel.param_bytes = entry.value;
    }
    break;
  case k_eiattr_max_threads:
    need_payload(entry, 12, section);
    kernel.max_threads = read_le<std::uint32_t>(entry.payload, 0) * read_le<std::uint32_t>(entry.payload, 4) *
                         read_le<std::uint32_t>(entry.payload, 8);
    break;
  default:
    break;
  }
}

rtc::ElfView parse(std::string_view cubin)
{
  std::string why;
  auto view = rtc::ElfView::parse(cubin, why);
  if (!view) {
    malformed(why);
  }
  return std::move(*view);
}

const rtc::ElfSection* section_named(const rtc::ElfView& view, std::string_view name)
{
  for (const auto& section : view.sections()) {
    if (section.name == name) {
      return &section;
    }
  }
  return nullptr;
}

void check_params(KernelInfo& kernel)
{
  std::sort(kernel.params.begin(), kernel.params.end(),
            [](const KernelParam& a, const KernelParam& b) { return a.index < b.index; });
  for (std::size_t i = 0; i < kernel.params.size(); ++i) {
    const KernelParam& param = kernel.params[i];
    if (param.index != i) {
      malformed(kernel.name + ": parameter " + std::to_string(i) + " is missing or listed twice");
    }
    if (kernel.param_bytes != 0 && !rtc::range_fits(param.offset, param.size, kernel.param_bytes)) {
      malformed(kernel.name + ": parameter " + std::to_string(i) + " lies outside the " +
                std::to_string(kernel.param_bytes) + "-byte parameter block");
    }
  }
}

} // namespace

std::vector<KernelInfo> read_kernels(std::string_view cubin)
{
  const rtc::ElfView view = parse(cubin);
  const auto& symbols = view.symbols();
  std::vector<KernelInfo> kernels;
  std::vector<std::size_t> kernel_symbols;
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i].type == rtc::k_stt_func && (symbols[i].other & rtc::k_sto_cuda_entry) != 0 &&
        !symbols[i].name.empty()) {
      kernels.emplace_back();
      kernels.back().name = symbols[i].name;
      kernel_symbols.push_back(i);
    }
  }
  std::map<std::uint32_t, KernelInfo*> by_symbol;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    by_symbol[static_cast<std::uint32_t>(kernel_symbols[k])] = &kernels[k];
  }
  const bool reserves_shared =
    std::any_of(view.sections().begin(), view.sections().end(),
                [](const auto& s) { return s.name.rfind(".nv.shared.reserved.", 0) == 0; }) ||
    std::any_of(symbols.begin(), symbols.end(), [](const auto& s) { return s.name.rfind(".nv.reservedSmem", 0) == 0; });
  const rtc::ElfSection* user_constants = section_named(view, ".nv.constant3");
  for (const auto& section : view.sections()) {
    if (section.type != rtc::k_sht_cuda_info) {
      continue;
    }
    KernelInfo* owner = nullptr;
    for (std::size_t k = 0; k < kernels.size() && section.info != 0; ++k) {
      if (symbols[kernel_symbols[k]].section == section.info) {
        owner = &kernels[k];
      }
    }
    for (const Entry& entry : entries(section)) {
      if (names_a_symbol(entry)) {
        read_symbol_attribute(entry, section.name, by_symbol);
      } else if (owner != nullptr) {
        read_kernel_attribute(entry, section.name, *owner);
      }
    }
  }
  for (KernelInfo& kernel : kernels) {
    check_params(kernel);
    if (const auto* shared = section_named(view, ".nv.shared." + kernel.name)) {
      std::uint64_t bytes = shared->size;
      if (reserves_shared && shared->type == rtc::k_sht_nobits && bytes >= k_reserved_shared_bytes) {
        bytes -= k_reserved_shared_bytes;
      }
      kernel.static_shared_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes, UINT32_MAX));
    }
    if (user_constants != nullptr) {
      kernel.const_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(user_constants->size, UINT32_MAX));
    }
  }
  return kernels;
}

std::vector<std::string> cubin_functions(std::string_view cubin)
{
  const rtc::ElfView view = parse(cubin);
  std::vector<std::string> names;
  for (const auto& symbol : view.symbols()) {
    if (symbol.type == rtc::k_stt_func && !symbol.name.empty()) {
      names.emplace_back(symbol.name);
    }
  }
  return names;
}

std::vector<KernelInfo> Binary::kernels() const
{
  return cubin.empty() ? std::vector<KernelInfo>{} : read_kernels(cubin);
}

std::optional<KernelInfo> Binary::kernel(std::string_view name) const
{
  std::string_view lowered = name;
  for (const auto& [expression, mangled] : lowered_names) {
    if (expression == name) {
      lowered = mangled;
    }
  }
  for (KernelInfo& info : kernels()) {
    if (info.name == lowered) {
      return std::move(info);
    }
  }
  return std::nullopt;
}

} // namespace kjit
