// ELF64 parsing with a bounds check before every read.
#include "rtc/elf_view.hpp"

#include <cstring>

namespace kjit::rtc {

namespace {

constexpr std::uint16_t k_em_cuda = 190;
constexpr std::size_t k_header_size = 64;
constexpr std::size_t k_section_header_size = 64;
constexpr std::size_t k_program_header_size = 56;
constexpr std::size_t k_symbol_size = 24;
constexpr std::uint16_t k_shn_loreserve = 0xff00;

template <typename T>
T read_le(std::string_view bytes, std::uint64_t offset)
{
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);  // callers checked the range; LE hosts only
  return value;
}

// The NUL-terminated string at `offset` of the string table `table`, or nothing.
std::optional<std::string_view> string_at(std::string_view table, std::uint64_t offset)
{
  if (offset >= table.size()) {
    return std::nullopt;
  }
  const auto end = table.find('\0', offset);
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  return table.substr(offset, end - offset);
}

} // namespace

std::optional<ElfHeader> parse_elf_header(std::string_view bytes, std::string& why)
{
  if (bytes.size() < k_header_size) {
    why = "too short for an ELF64 header (" + std::to_string(bytes.size()) + " bytes)";
    return std::nullopt;
  }
  if (bytes.substr(0, 4) != std::string_view("\x7f" "ELF", 4)) {
    why = "not an ELF file";
    return std::nullopt;
  }
  if (bytes[4] != 2 || bytes[5] != 1) {
    why = "not a little-endian ELF64 file";
    return std::nullopt;
  }
  const auto machine = read_le<std::uint16_t>(bytes, 18);
  if (machine != k_em_cuda) {
    why = "e_machine is " + std::to_string(machine) + ", not EM_CUDA (190)";
    return std::nullopt;
  }
  ElfHeader header;
  const auto flags = read_le<std::uint32_t>(bytes, 48);
  header.abi_version = static_cast<unsigned char>(bytes[8]);
  // ABI v8 and later keep the SM number in bits 8..15 of e_flags; older cubins in bits 0..7.
  header.sm = header.abi_version >= 8 ? static_cast<int>((flags >> 8) & 0xff) : static_cast<int>(flags & 0xff);
  const std::uint64_t size = bytes.size();
  header.program_offset = read_le<std::uint64_t>(bytes, 32);
  const auto program_entry = read_le<std::uint16_t>(bytes, 54);
  header.program_count = read_le<std::uint16_t>(bytes, 56);
  header.section_offset = read_le<std::uint64_t>(bytes, 40);
  const auto section_entry = read_le<std::uint16_t>(bytes, 58);
  header.section_count = read_le<std::uint16_t>(bytes, 60);
  header.names_index = read_le<std::uint16_t>(bytes, 62);
  if (header.program_count > 0 && program_entry != k_program_header_size) {
    why = "bad program header size " + std::to_string(program_entry);
  } else if (header.program_count > 0 &&
             !range_fits(header.program_offset, std::uint64_t(header.program_count) * program_entry, size)) {
    why = "program headers lie past the end (truncated cubin)";
  } else if (header.section_count == 0) {
    why = "no section headers";
  } else if (section_entry != k_section_header_size) {
    why = "bad section header size " + std::to_string(section_entry);
  } else if (!range_fits(header.section_offset, std::uint64_t(header.section_count) * section_entry, size)) {
    why = "section headers lie past the end (truncated cubin)";
  } else if (header.names_index >= header.section_count) {
    why = "section name table index out of range";
  } else {
    return header;
  }
  return std::nullopt;
}

std::optional<ElfView> ElfView::parse(std::string_view bytes, std::string& why)
{
  const auto header = parse_elf_header(bytes, why);
  if (!header) {
    return std::nullopt;
  }
  ElfView view;
  view.m_sm = header->sm;
  view.m_abi_version = header->abi_version;
  const std::uint64_t size = bytes.size();
  const std::uint64_t program_offset = header->program_offset;
  const std::uint16_t program_count = header->program_count;
  const std::uint64_t section_offset = header->section_offset;
  const std::uint16_t section_count = header->section_count;
  const std::uint16_t names_index = header->names_index;
  // The message is made only for a failed check.
  const auto check = [&](bool ok, auto&& message) {
    if (!ok) {
      why = message();
    }
    return ok;
  };
  for (std::uint16_t i = 0; i < program_count; ++i) {
    const std::uint64_t at = program_offset + std::uint64_t(i) * k_program_header_size;
    const auto offset = read_le<std::uint64_t>(bytes, at + 8);
    const auto file_size = read_le<std::uint64_t>(bytes, at + 32);
    if (!check(range_fits(offset, file_size, size),
               [&] { return "segment " + std::to_string(i) + " lies past the end (truncated cubin)"; })) {
      return std::nullopt;
    }
  }
  std::vector<std::uint64_t> name_offsets;
  name_offsets.reserve(section_count);  // no regrowth
  view.m_sections.reserve(section_count);
  for (std::uint16_t i = 0; i < section_count; ++i) {
    const std::uint64_t at = section_offset + std::uint64_t(i) * k_section_header_size;
    ElfSection section;
    name_offsets.push_back(read_le<std::uint32_t>(bytes, at));
    section.type = read_le<std::uint32_t>(bytes, at + 4);
    section.flags = read_le<std::uint64_t>(bytes, at + 8);
    const auto offset = read_le<std::uint64_t>(bytes, at + 24);
    section.size = read_le<std::uint64_t>(bytes, at + 32);
    section.link = read_le<std::uint32_t>(bytes, at + 40);
    section.info = read_le<std::uint32_t>(bytes, at + 44);
    section.entry_size = read_le<std::uint64_t>(bytes, at + 56);
    if (section.type != k_sht_nobits && i != 0) {
      if (!check(range_fits(offset, section.size, size),
                 [&] { return "section " + std::to_string(i) + " lies past the end (truncated cubin)"; })) {
        return std::nullopt;
      }
      section.bytes = bytes.substr(offset, section.size);
    }
    if (!check(section.link < section_count,
               [&] { return "section " + std::to_string(i) + " links to a missing section"; }) ||
        !check(i != 0 || (section.type == 0 && section.size == 0),
               [&] { return std::string("section 0 is not the reserved null section"); })) {
      return std::nullopt;
    }
    view.m_sections.push_back(section);
  }
  const std::string_view names = view.m_sections[names_index].bytes;
  for (std::uint16_t i = 1; i < section_count; ++i) {
    const auto name = string_at(names, name_offsets[i]);
    if (!check(name.has_value(), [&] { return "section " + std::to_string(i) + " has a bad name"; })) {
      return std::nullopt;
    }
    view.m_sections[i].name = *name;
  }
  for (std::uint16_t i = 1; i < section_count; ++i) {
    const ElfSection& table = view.m_sections[i];
    if (table.type != k_sht_symtab) {
      continue;
    }
    if (!check(table.entry_size == k_symbol_size && table.size % k_symbol_size == 0,
               [&] { return "symbol table " + std::string(table.name) + " has a bad entry size"; })) {
      return std::nullopt;
    }
    const std::string_view strings = view.m_sections[table.link].bytes;
    std::vector<ElfSymbol> symbols;
    symbols.reserve(table.size / k_symbol_size);
    for (std::uint64_t at = 0; at < table.size; at += k_symbol_size) {
      ElfSymbol symbol;
      const auto name = string_at(strings, read_le<std::uint32_t>(table.bytes, at));
      const auto info = static_cast<std::uint8_t>(table.bytes[at + 4]);
      symbol.type = info & 0xf;
      symbol.binding = info >> 4;
      symbol.other = static_cast<std::uint8_t>(table.bytes[at + 5]);
      symbol.section = read_le<std::uint16_t>(table.bytes, at + 6);
      symbol.value = read_le<std::uint64_t>(table.bytes, at + 8);
      symbol.size = read_le<std::uint64_t>(table.bytes, at + 16);
      const bool ok_section = symbol.section < section_count || symbol.section >= k_shn_loreserve;
      if (!check(name.has_value() && ok_section,
                 [&] { return "symbol " + std::to_string(at / k_symbol_size) + " has a bad name or section"; })) {
        return std::nullopt;
      }
      // Whoever reads the symbol's bytes (the driver, the variable reader) trusts value + size.
      if (symbol.section != 0 && symbol.section < section_count) {
        const std::uint64_t room = view.m_sections[symbol.section].size;
        if (!check(symbol.value <= room && symbol.size <= room - symbol.value,
                   [&] { return "symbol " + std::to_string(at / k_symbol_size) + " lies outside its section"; })) {
          return std::nullopt;
        }
      }
      symbol.name = *name;
      symbols.push_back(symbol);
    }
    if (view.m_symbols.empty()) {
      view.m_symbols = std::move(symbols);
    }
  }
  return view;
}

} // namespace kjit::rtc
