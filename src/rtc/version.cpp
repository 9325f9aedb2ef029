// kjit::version(): the version the library was built as.
#include <kjit/version.hpp>

#include "kjit_build_config.hpp"

namespace kjit {

const char* version() noexcept
{
  return KJIT_VERSION_STRING;
}

} // namespace kjit
