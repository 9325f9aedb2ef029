// Module variables: cuModuleGetGlobal by name or name expression, copies to and from the host.
#include "driver/module_state.hpp"

#include <kjit/error.hpp>

namespace kjit {

namespace {

// "variable 'table<int>' (_Z5tableIiE) of prog.cu on device 0", for messages.
std::string variable_text(const std::string& asked, const std::string& symbol, const Module::State& state)
{
  return "variable '" + asked + "'" + (symbol != asked ? " (" + symbol + ")" : "") + " of " + state.program + " on " +
         state.device;
}

} // namespace

Global Module::global(const std::string& name_or_expression) const
{
  const driver::DriverApi& api = driver::require_driver();
  const std::string symbol = symbol_of(name_or_expression);
  const driver::ScopedContext scope(m_state->context);
  CUdeviceptr pointer = 0;
  std::size_t size = 0;
  driver::check(api.module_get_global(&pointer, &size, m_state->module, symbol.c_str()),
                [&] { return "cuModuleGetGlobal of " + variable_text(name_or_expression, symbol, *m_state); });
  return {pointer, size};
}

void Module::read_global(const std::string& name_or_expression, void* data, std::size_t bytes) const
{
  const Global variable = global(name_or_expression);
  if (bytes != variable.size) {
    throw GlobalError("reading " + std::to_string(bytes) + " bytes from the " + std::to_string(variable.size) +
                        "-byte " + variable_text(name_or_expression, symbol_of(name_or_expression), *m_state),
                      name_or_expression, variable.size, bytes);
  }
  const driver::ScopedContext scope(m_state->context);
  driver::check(driver::require_driver().memcpy_dtoh(data, variable.pointer, bytes), [&] {
    return "cuMemcpyDtoH of " + variable_text(name_or_expression, symbol_of(name_or_expression), *m_state);
  });
}

void Module::write_global(const std::string& name_or_expression, const void* data, std::size_t bytes) const
{
  const Global variable = global(name_or_expression);
  if (bytes != variable.size) {
    throw GlobalError("writing " + std::to_string(bytes) + " bytes to the " + std::to_string(variable.size) + "-byte " +
                        variable_text(name_or_expression, symbol_of(name_or_expression), *m_state),
                      name_or_expression, variable.size, bytes);
  }
  const driver::ScopedContext scope(m_state->context);
  driver::check(driver::require_driver().memcpy_htod(variable.pointer, data, bytes), [&] {
    return "cuMemcpyHtoD of " + variable_text(name_or_expression, symbol_of(name_or_expression), *m_state);
  });
}

} // namespace kjit
