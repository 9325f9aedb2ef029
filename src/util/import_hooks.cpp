// See import_hooks.hpp. The dynamic section of a loaded object names its symbol and string tables
// and its relocations; a relocation of type JUMP_SLOT (a call through the PLT) or GLOB_DAT (a
// function's address taken) against a symbol fills one pointer-sized slot. Writing another
// function's address there redirects that library's calls; the dynamic linker never writes the
// slot again once it points away from the PLT's resolver.
#include "util/import_hooks.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace kjit::util {

namespace {

#if defined(__x86_64__)
constexpr unsigned k_jump_slot = R_X86_64_JUMP_SLOT;
constexpr unsigned k_glob_dat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr unsigned k_jump_slot = R_AARCH64_JUMP_SLOT;
constexpr unsigned k_glob_dat = R_AARCH64_GLOB_DAT;
#else
constexpr unsigned k_jump_slot = ~0u;  // no slots known: nothing is hooked
constexpr unsigned k_glob_dat = ~0u;
#endif

struct Relro {
  std::uintptr_t base = 0;  // the object's load address
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
};

// PT_GNU_RELRO of the object loaded at `relro->base`: made read-only after relocation.
int find_relro(dl_phdr_info* info, std::size_t, void* data)
{
  auto* relro = static_cast<Relro*>(data);
  if (info->dlpi_addr != relro->base) {
    return 0;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      relro->begin = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      relro->end = relro->begin + info->dlpi_phdr[i].p_memsz;
    }
  }
  return 1;
}

} // namespace

std::set<std::string> hook_imports(const void* address_in_library, const std::vector<ImportHook>& hooks)
{
  Dl_info info{};
  link_map* map = nullptr;
  if (k_jump_slot == ~0u || ::dladdr1(address_in_library, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr || map->l_ld == nullptr) {
    return {};
  }
  // glibc rewrites most of the dynamic section's addresses to run-time ones; some ports keep them
  // relative to the load address.
  const auto at = [base = map->l_addr](ElfW(Addr) address) { return address < base ? address + base : address; };
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  const ElfW(Rela)* tables[2] = {nullptr, nullptr};
  std::size_t sizes[2] = {0, 0};
  bool rela_plt = true;
  for (const ElfW(Dyn)* dyn = map->l_ld; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
    case DT_SYMTAB: symbols = reinterpret_cast<const ElfW(Sym)*>(at(dyn->d_un.d_ptr)); break;
    case DT_STRTAB: strings = reinterpret_cast<const char*>(at(dyn->d_un.d_ptr)); break;
    case DT_JMPREL: tables[0] = reinterpret_cast<const ElfW(Rela)*>(at(dyn->d_un.d_ptr)); break;
    case DT_PLTRELSZ: sizes[0] = dyn->d_un.d_val; break;
    case DT_PLTREL: rela_plt = dyn->d_un.d_val == DT_RELA; break;
    case DT_RELA: tables[1] = reinterpret_cast<const ElfW(Rela)*>(at(dyn->d_un.d_ptr)); break;
    case DT_RELASZ: sizes[1] = dyn->d_un.d_val; break;
    default: break;
    }
  }
  if (symbols == nullptr || strings == nullptr || !rela_plt) {
    return {};
  }
  Relro relro;
  relro.base = map->l_addr;
  ::dl_iterate_phdr(find_relro, &relro);
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::set<std::string> hooked;
  for (int t = 0; t < 2; ++t) {
    for (std::size_t i = 0; tables[t] != nullptr && i < sizes[t] / sizeof(ElfW(Rela)); ++i) {
      const ElfW(Rela)& rela = tables[t][i];
      const auto type = static_cast<unsigned>(ELF64_R_TYPE(rela.r_info));
      const auto index = ELF64_R_SYM(rela.r_info);
      if ((type != k_jump_slot && type != k_glob_dat) || index == 0) {
        continue;
      }
      const char* name = strings + symbols[index].st_name;
      for (const ImportHook& hook : hooks) {
        if (std::strcmp(name, hook.name) != 0) {
          continue;
        }
        const std::uintptr_t slot = map->l_addr + rela.r_offset;
        const std::uintptr_t first = slot & ~(page - 1);
        const std::size_t length = ((slot + sizeof(void*) + page - 1) & ~(page - 1)) - first;
        if (::mprotect(reinterpret_cast<void*>(first), length, PROT_READ | PROT_WRITE) != 0) {
          return {};  // unwritable (those rewritten so far call on as before: see the caller)
        }
        __atomic_store_n(reinterpret_cast<void**>(slot), hook.replacement, __ATOMIC_SEQ_CST);
        if (slot >= relro.begin && slot < relro.end) {
          ::mprotect(reinterpret_cast<void*>(first), length, PROT_READ);
        }
        hooked.insert(hook.name);
      }
    }
  }
  return hooked;
}

} // namespace kjit::util
