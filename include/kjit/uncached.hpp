// Why a compile was not cached: the reasons counted in CacheStats and `kjit stats`.
#pragma once

namespace kjit {

// Why a compile was made from the files on disk and not cached: what a program did that the
// private folder cannot reproduce (docs/includes.md, "Computed includes
// of real libraries" and "What is still not covered"). Each such compile is
// counted under its reason, in CacheStats and in `kjit stats`.
enum class UncachedReason {
  formed_name,  // a computed #include, and a text that may form an absolute name for it
  disk_name,    // an include NVRTC opens on disk itself: an absolute name, one climbing above /,
                // a name next to an in-memory header
  time,         // __TIME__, __DATE__ or __TIMESTAMP__: each compile differs
  file_option,  // an option that makes the compiler read a file kjit does not see (-optf, --pch-dir…)
  probe,        // a __has_include kjit cannot follow (a macro operand, a name expression, a -D value)
  names_file,   // the binary names a file as kjit's copies cannot (two names, a toolkit's __FILE__)
  environment,  // NVRTC was loaded with other settings (NV_NVVM_VERSION) than the keys were made with
};
// "formed name", "disk name", "time", "file option", "probe", "names file", "environment".
const char* to_string(UncachedReason reason) noexcept;

} // namespace kjit
