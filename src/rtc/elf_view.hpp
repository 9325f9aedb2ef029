// A bounds-checked, read-only view of an ELF64 little-endian file (a cubin): every table and
// section range is checked, overflow-safe, before anything reads from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::rtc {

constexpr std::uint32_t k_sht_symtab = 2;
constexpr std::uint32_t k_sht_nobits = 8;
constexpr std::uint32_t k_sht_cuda_info = 0x70000000;  // .nv.info and .nv.info.<function>
constexpr std::uint8_t k_stt_func = 2;
constexpr std::uint8_t k_sto_cuda_entry = 0x10;  // st_other bit of a kernel (entry function)

struct ElfSection {
  std::string_view name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0;
  std::uint64_t size = 0;     // sh_size (also for NOBITS sections, which have no bytes)
  std::uint32_t link = 0;
  std::uint32_t info = 0;
  std::uint64_t entry_size = 0;
  std::string_view bytes;     // the section's contents; empty for NOBITS
};

struct ElfSymbol {
  std::string_view name;
  std::uint8_t type = 0;      // STT_*
  std::uint8_t binding = 0;   // STB_*
  std::uint8_t other = 0;     // st_other (CUDA keeps STO_CUDA_ENTRY here)
  std::uint16_t section = 0;  // st_shndx
  std::uint64_t value = 0;
  std::uint64_t size = 0;
};

// The ELF header of a cubin and where its tables lie: every field here was checked against the
// file's size (the tables' contents were not).
struct ElfHeader {
  int sm = 0;
  int abi_version = 0;
  std::uint64_t program_offset = 0;
  std::uint16_t program_count = 0;
  std::uint64_t section_offset = 0;
  std::uint16_t section_count = 0;
  std::uint16_t names_index = 0;
};

// Checks the ELF header only (ELF64, little-endian, EM_CUDA) and that the program and section
// header tables lie inside `bytes`; O(1), reads 64 bytes. Returns nothing and sets `why` otherwise.
// Enough for a cubin whose bytes are proven to be ones ElfView::parse accepted (a stored record's
// checksum, docs/cache-format.md); everything else goes through ElfView::parse.
std::optional<ElfHeader> parse_elf_header(std::string_view bytes, std::string& why);

// check_cubin (kjit/cubin.hpp) with the header only (parse_elf_header): true if `bytes` has a sound
// ELF header for exactly SM `sm`; otherwise false with the reason in `why` (cubin.cpp).
bool check_cubin_header(std::string_view bytes, int sm, std::string& why);

class ElfView {
public:
  // Parses and checks `bytes` (which must outlive the view): the ELF header (ELF64, little-endian,
  // EM_CUDA), the section and program header tables, every section's and segment's file range,
  // the section name table and every symbol table with its string table. Returns nothing and sets
  // `why` if any of it is malformed or lies past the end.
  static std::optional<ElfView> parse(std::string_view bytes, std::string& why);

  int sm() const noexcept { return m_sm; }
  int abi_version() const noexcept { return m_abi_version; }
  const std::vector<ElfSection>& sections() const noexcept { return m_sections; }
  // The symbols of the (first) SHT_SYMTAB section, index 0 included; empty if there is none.
  const std::vector<ElfSymbol>& symbols() const noexcept { return m_symbols; }

private:
  int m_sm = 0;
  int m_abi_version = 0;
  std::vector<ElfSection> m_sections;
  std::vector<ElfSymbol> m_symbols;
};

// True if [offset, offset + size) lies within [0, total), without overflow.
constexpr bool range_fits(std::uint64_t offset, std::uint64_t size, std::uint64_t total) noexcept
{
  return offset <= total && size <= total - offset;
}

} // namespace kjit::rtc
