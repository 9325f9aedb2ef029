// kjit_config_*: a Config snapshot for the C API, set by name through the settings table.
#include "capi/handles.hpp"
#include "capi/status.hpp"

#include "config/config_internal.hpp"

extern "C" {

kjit_status kjit_config_create(kjit_config** out)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  return kjit::capi::guarded([&] { *out = new kjit_config{kjit::current_config()}; });
}

void kjit_config_destroy(kjit_config* config)
{
  delete config;
}

kjit_status kjit_config_set(kjit_config* config, const char* name, const char* value)
{
  KJIT_CAPI_REQUIRE(config);
  KJIT_CAPI_REQUIRE(name);
  KJIT_CAPI_REQUIRE(value);
  return kjit::capi::guarded([&] { kjit::apply_setting(config->config, name, value); });
}

} // extern "C"
