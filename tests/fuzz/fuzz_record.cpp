// libFuzzer target: record decoding (store/record.cpp) must reject or accept any bytes without
// crashing, and an accepted record must encode back to a record that decodes to the same entry.
#include "store/record.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  using namespace kjit;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const util::Sha256 key = util::sha256("reference");
  std::string why;
  for (const auto sections : {store::Sections::artifacts, store::Sections::all}) {
    const auto entry = store::decode_record(bytes, key, sections, why);
    if (entry && sections == store::Sections::all) {
      const auto again = store::decode_record(store::encode_record(*entry, key), key, sections, why);
      if (!again || again->binary.cubin != entry->binary.cubin || again->binary.ptx != entry->binary.ptx ||
          again->kind != entry->kind) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
