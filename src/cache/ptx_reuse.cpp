// Serving a virtual arch from its real arch's entry: NVRTC's PTX for -arch=sm_XY is, byte for byte,
// the PTX of -arch=compute_XY (see docs/compile-paths.md), so compute_XY needs no compile when the
// same program with the same headers is stored for sm_XY.
#include "cache/cache_impl.hpp"

#include "rtc/compile_options.hpp"
#include "store/record.hpp"

namespace kjit {

std::optional<Binary> Cache::Impl::ptx_of_real_arch(const Program& program, const Arch& arch, deps::Resolver& resolver)
{
  if (!arch.is_virtual()) {
    return std::nullopt;
  }
  // The same closure a compile makes, so the key is the one the real arch's compile stored; a
  // program the private folder can't answer for faithfully is compiled from disk, never reused.
  resolver.close();
  if (!resolver.unfaithful().empty()) {
    return std::nullopt;
  }
  const std::vector<deps::DiskHeader>& headers = resolver.result().headers;
  rtc::check_options(program, arch);  // what the compile would refuse is refused the same way
  // The real arch's key covers the same program, options, toolchain and headers: its entry was
  // compiled from exactly what a compile now would read.
  const util::Sha256 real_arch_entry_key = cache::make_key_texts(program, Arch::parse(arch.real_name()), key_context(), headers).entry_key;
  std::shared_ptr<const Binary> real;
  if (auto found = memory.find(real_arch_entry_key)) {
    real = found->binary;
  } else if (store) {
    std::string why;
    try {
      store->visit(store::Table::entries, bytes_of(real_arch_entry_key), [&](std::string_view bytes) {
        if (auto entry = store::decode_record(bytes, real_arch_entry_key, store::Sections::artifacts, why);
            entry && entry->kind == store::EntryKind::binary) {
          real = std::make_shared<const Binary>(std::move(entry->binary));
        }
      });
    } catch (const StoreError&) {
      return std::nullopt;  // compiled instead; a damaged record is quarantined by its own lookup
    }
  }
  if (!real || real->ptx.empty()) {
    return std::nullopt;  // not stored, a failure, or an -dlto entry (LTO IR, no PTX)
  }
  Binary binary;
  binary.arch = arch.str();
  binary.ptx = real->ptx;
  binary.lowered_names = real->lowered_names;
  binary.log = real->log;
  binary.cubin_path = rtc::cubin_path_name(rtc::CubinPath::none);
  binary.timings.nvrtc_ms = real->timings.nvrtc_ms;  // what making it cost, as a hit reports
  binary.timings.total_ms = real->timings.nvrtc_ms;
  return binary;
}

} // namespace kjit
