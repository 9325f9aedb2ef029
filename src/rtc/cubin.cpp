// Cubin checks: the whole ELF structure bounds-checked (before a cubin is stored or read), or its
// header only (a stored cubin whose record checksum proves it was checked in full).
#include <kjit/cubin.hpp>

#include "rtc/elf_view.hpp"

namespace kjit {

namespace {

bool is_for_sm(int found, int sm, std::string& why)
{
  if (found != sm) {
    why = "cubin is for sm_" + std::to_string(found) + ", expected sm_" + std::to_string(sm);
    return false;
  }
  return true;
}

} // namespace

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
  return inspect_cubin(bytes, info, why) && is_for_sm(info.sm, sm, why);
}

bool rtc::check_cubin_header(std::string_view bytes, int sm, std::string& why)
{
  const auto header = parse_elf_header(bytes, why);
  return header && is_for_sm(header->sm, sm, why);
}

} // namespace kjit
