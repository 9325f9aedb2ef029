// Built with -std=c++17 and -Werror: proves the public headers need nothing newer and compile
// without a warning, templates instantiated as a user's code would. Runs a trivial check.
#include <kjit/kjit.hpp>

#if __cplusplus > 201703L
#error "this file must be compiled as C++17"
#endif

int main()
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const kjit::ArgumentPack none;  // a kernel without parameters (its offset once went unused)
  const kjit::ArgumentPack some(1, 2.0, 'c');
  return arch.number() == 90 && std::string(kjit::version()) == KJIT_VERSION && none.size() == 0 && some.size() == 3
           ? 0
           : 1;
}
