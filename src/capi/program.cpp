// kjit_program_*: building a Program from C.
#include "capi/handles.hpp"
#include "capi/status.hpp"

extern "C" {

kjit_status kjit_program_create(const char* name, const char* source, kjit_program** out)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  KJIT_CAPI_REQUIRE(name);
  KJIT_CAPI_REQUIRE(source);
  return kjit::capi::guarded([&] { *out = new kjit_program{kjit::Program::from_source(name, source)}; });
}

kjit_status kjit_program_create_from_file(const char* path, kjit_program** out)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  KJIT_CAPI_REQUIRE(path);
  return kjit::capi::guarded([&] { *out = new kjit_program{kjit::Program::from_file(path)}; });
}

void kjit_program_destroy(kjit_program* program)
{
  delete program;
}

kjit_status kjit_program_add_option(kjit_program* program, const char* option)
{
  KJIT_CAPI_REQUIRE(program);
  KJIT_CAPI_REQUIRE(option);
  return kjit::capi::guarded([&] { program->program.option(option); });
}

kjit_status kjit_program_add_header(kjit_program* program, const char* name, const char* content)
{
  KJIT_CAPI_REQUIRE(program);
  KJIT_CAPI_REQUIRE(name);
  KJIT_CAPI_REQUIRE(content);
  return kjit::capi::guarded([&] { program->program.header(name, content); });
}

kjit_status kjit_program_add_name_expression(kjit_program* program, const char* expression)
{
  KJIT_CAPI_REQUIRE(program);
  KJIT_CAPI_REQUIRE(expression);
  return kjit::capi::guarded([&] { program->program.name_expression(expression); });
}

} // extern "C"
