// Built with -std=c++17: proves the public headers need nothing newer. Runs a trivial check.
#include <kjit/kjit.hpp>

#if __cplusplus > 201703L
#error "this file must be compiled as C++17"
#endif

int main()
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  return arch.number() == 90 && std::string(kjit::version()) == KJIT_VERSION ? 0 : 1;
}
