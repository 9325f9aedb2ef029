// GPU architecture targets: sm_XY[a|f], compute_XY[a|f], or auto (the current device).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit {

class Arch {
public:
  // Parses "sm_90", "sm_90a", "sm_100f", "compute_90" or "auto". Throws ArchError on bad syntax.
  // Whether NVRTC supports the number is checked when compiling (see supported_archs()).
  static Arch parse(std::string_view text);
  // A real target for compute capability major.minor, e.g. of_compute_capability(9, 0) = sm_90.
  // Throws ArchError unless 1 <= major <= 99 and 0 <= minor <= 9.
  static Arch of_compute_capability(int major, int minor);

  Arch() = default;  // auto

  bool is_auto() const noexcept { return m_number == 0; }
  // True for compute_XY: only PTX is produced.
  bool is_virtual() const noexcept { return m_virtual; }
  // 90 for sm_90a; 0 for auto.
  int number() const noexcept { return m_number; }
  // 'a', 'f' or '\0'.
  char variant() const noexcept { return m_variant; }

  // "sm_90a" (or "compute_90a" for a virtual arch, "auto").
  std::string str() const;
  // "compute_90a": the virtual arch NVRTC generates PTX for.
  std::string virtual_name() const;
  // "sm_90a": the real arch nvJitLink builds the cubin for.
  std::string real_name() const;

  friend bool operator==(const Arch& a, const Arch& b) noexcept
  {
    return a.m_number == b.m_number && a.m_variant == b.m_variant && a.m_virtual == b.m_virtual;
  }
  friend bool operator!=(const Arch& a, const Arch& b) noexcept { return !(a == b); }

private:
  int m_number = 0;
  char m_variant = '\0';
  bool m_virtual = false;
};

// The SM numbers NVRTC can build for (nvrtcGetSupportedArchs). Loads NVRTC.
std::vector<int> supported_archs();

} // namespace kjit
