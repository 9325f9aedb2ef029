// Cubin checks: cheap enough to run on every store read; the whole ELF structure is bounds-checked.
#include <kjit/cubin.hpp>

#include "rtc/elf_view.hpp"

namespace kjit {

bool inspect_cubin(std::string_view bytes, CubinInfo& info, std::string& why)
{
  const auto view = rtc::ElfView::parse(bytes, why);
  if (!view) {
    return false;
  }
  info.sm = view->sm();
  info.abi_version = view->abi_version();
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
