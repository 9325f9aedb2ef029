// Arch parsing and naming.
#include <kjit/arch.hpp>
#include <kjit/error.hpp>

#include <cctype>

namespace kjit {

Arch Arch::parse(std::string_view text)
{
  if (text == "auto") {
    return Arch{};
  }
  Arch arch;
  std::string_view rest;
  if (text.substr(0, 3) == "sm_") {
    rest = text.substr(3);
  } else if (text.substr(0, 8) == "compute_") {
    rest = text.substr(8);
    arch.m_virtual = true;
  } else {
    throw ArchError("arch '" + std::string(text) + "' is not sm_XY, sm_XYa, sm_XYf, compute_XY or auto");
  }
  std::size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) {
    ++digits;
  }
  const std::string_view suffix = rest.substr(digits);
  if (digits < 2 || digits > 3 || rest[0] == '0' || !(suffix.empty() || suffix == "a" || suffix == "f")) {
    throw ArchError("arch '" + std::string(text) + "' is not sm_XY, sm_XYa, sm_XYf, compute_XY or auto");
  }
  arch.m_number = std::stoi(std::string(rest.substr(0, digits)));
  arch.m_variant = suffix.empty() ? '\0' : suffix[0];
  return arch;
}

Arch Arch::of_compute_capability(int major, int minor)
{
  // At most 99.9: sm_999 is the largest number Arch::parse reads back (and major * 10 can't overflow).
  if (major <= 0 || major > 99 || minor < 0 || minor > 9) {
    throw ArchError("invalid compute capability " + std::to_string(major) + "." + std::to_string(minor));
  }
  Arch arch;
  arch.m_number = major * 10 + minor;
  return arch;
}

std::string Arch::str() const
{
  if (is_auto()) {
    return "auto";
  }
  return m_virtual ? virtual_name() : real_name();
}

std::string Arch::virtual_name() const
{
  std::string name = "compute_" + std::to_string(m_number);
  if (m_variant != '\0') {
    name += m_variant;
  }
  return name;
}

std::string Arch::real_name() const
{
  std::string name = "sm_" + std::to_string(m_number);
  if (m_variant != '\0') {
    name += m_variant;
  }
  return name;
}

} // namespace kjit
