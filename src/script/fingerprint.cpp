// The environment fingerprint a dispatch table is made under, and its "*" matching.
#include <kjit/driver.hpp>
#include <kjit/module.hpp>
#include <kjit/script.hpp>
#include <kjit/version.hpp>

#include "kjit_build_config.hpp"

namespace kjit {

namespace {

bool field_accepts(const std::string& saved, const std::string& current)
{
  return saved == "*" || saved == current;
}

} // namespace

bool Fingerprint::accepts(const Fingerprint& current) const
{
  return field_accepts(kjit_version, current.kjit_version) && field_accepts(arch, current.arch) &&
         field_accepts(gpu, current.gpu) && field_accepts(compute_capability, current.compute_capability) &&
         field_accepts(cuda_version, current.cuda_version);
}

std::string Fingerprint::text() const
{
  return "kjit_version=" + kjit_version + " arch=" + arch + " gpu=" + gpu +
         " compute_capability=" + compute_capability + " cuda_version=" + cuda_version;
}

Fingerprint current_fingerprint(const Arch& arch)
{
  Fingerprint f;
  f.kjit_version = version();
  f.arch = arch.str();
  f.gpu = "none";
  f.compute_capability = "none";
  f.cuda_version = std::to_string(KJIT_CUDA_MAJOR) + "." + std::to_string(KJIT_CUDA_MINOR);
  if (driver_status().available) {
    try {
      const Context context = Context::current();
      const int cc = context.compute_capability();
      f.gpu = context.device_name();
      f.compute_capability = std::to_string(cc / 10) + "." + std::to_string(cc % 10);
    } catch (const Error&) {
      // A driver that fails here leaves the table unmatched to any GPU: it is tuned again later.
    }
  }
  return f;
}

} // namespace kjit
