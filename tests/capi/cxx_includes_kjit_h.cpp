// kjit.h is usable from C++ too: it compiles as C++17 without a warning beside the C++ API, and
// its calls link with C linkage (extern "C"), answering as the C++ API does.
#include <kjit/kjit.h>
#include <kjit/kjit.hpp>

#include <cstring>

int main()
{
  kjit_program* program = nullptr;
  const bool made = kjit_program_create("cxx.cu", "__global__ void k() {}", &program) == KJIT_OK;
  kjit_program_destroy(program);
  return made && std::strcmp(kjit_version(), kjit::version()) == 0 &&
             std::strcmp(kjit_status_name(KJIT_OK), "KJIT_OK") == 0
           ? 0
           : 1;
}
