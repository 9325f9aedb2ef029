/* kjit's C API: compile CUDA C++ text to kernels, cache them, read their resources, load and
   launch them, from C (C11) or any language that calls C. It wraps the C++ API (<kjit/kjit.hpp>);
   docs/c-api.md is the guide.

   Conventions, for every call below:
   - Each call returns a kjit_status; KJIT_OK (0) is success. No C++ exception ever leaves a call:
     every failure, out of memory included, is a status.
   - After a call fails, kjit_last_error_message() says why, on the calling thread only (each
     thread has its own). A call that succeeds leaves it as it was.
   - Out parameters are written only on success (a `kjit_x** out` is set to NULL on failure). A
     NULL handle, or a NULL pointer where one is required, is KJIT_ERROR_INVALID_ARGUMENT.
   - Strings are NUL-terminated UTF-8. Strings given to kjit are copied: the caller may free them
     once the call returns.
   - Ownership: a handle made by a kjit_*_create, kjit_cache_get/lookup, kjit_module_load or
     kjit_module_kernel call belongs to the caller, who frees it with the matching kjit_*_destroy
     (which accepts NULL). Handles may be destroyed in any order: a binary does not need its cache
     or program, a kernel keeps its module and context alive, a module its context.
   - A `const char*` or byte pointer a call returns points into the handle it was read from and is
     valid until that handle is destroyed.
     Never free it.
   - Threads: a cache, binary, module and kernel may be used from many threads at once. A program
     or config must not be changed while another thread uses it.

   Symbols carry the version node of the C API that added them (src/exports.map): KJIT_C_1.0 for
   the first calls, KJIT_C_1.1 for batches, statistics and upkeep. A later kjit adds calls in new
   nodes, and a program built against this header keeps working with it. */
#ifndef KJIT_KJIT_H
#define KJIT_KJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the C API this header declares (the symbol version node KJIT_C_<major>.<minor>). */
#define KJIT_C_API_VERSION_MAJOR 1
#define KJIT_C_API_VERSION_MINOR 1

/* ---------------------------------------------------------------------------------------------- */
/* Status codes. The values are fixed: later versions only add codes. */

typedef enum kjit_status {
  KJIT_OK = 0,
  KJIT_ERROR_INVALID_ARGUMENT = 1, /* a NULL handle or pointer, an index out of range */
  KJIT_ERROR_OUT_OF_MEMORY = 2,    /* std::bad_alloc inside kjit */
  KJIT_ERROR_NOT_FOUND = 3,        /* no such name expression or kernel in a binary */
  KJIT_ERROR_COMPILE = 4,          /* the compiler rejected the program: kjit_last_error_log() */
  KJIT_ERROR_OPTION = 5,           /* a compile option the compiler or kjit refuses (OptionError) */
  KJIT_ERROR_ARCH = 6,             /* an arch that does not parse or NVRTC can't build for (ArchError) */
  KJIT_ERROR_TOOLCHAIN = 7,        /* NVRTC or nvJitLink failed in itself, or is missing (ToolchainError) */
  KJIT_ERROR_CONFIG = 8,           /* a setting with a bad value, or no such setting (ConfigError) */
  KJIT_ERROR_STORE = 9,            /* the cache folder or its LMDB store failed (StoreError) */
  KJIT_ERROR_BUNDLE = 10,          /* a bundle file can't be read or is damaged (BundleError) */
  KJIT_ERROR_NO_GPU = 11,          /* no CUDA driver or no device on this machine (a CudaError) */
  KJIT_ERROR_DRIVER = 12,          /* a CUDA driver call failed (CudaError): kjit_last_error_code() */
  KJIT_ERROR_IMAGE = 13,           /* a module image that is not a loadable cubin or PTX (ImageError) */
  KJIT_ERROR_LAUNCH = 14,          /* launch arguments that do not match the kernel (LaunchError) */
  KJIT_ERROR_OTHER = 15            /* any other failure (kjit::Error of no finer kind) */
} kjit_status;

/* The enumerator's name, e.g. "KJIT_ERROR_COMPILE"; "KJIT_ERROR_UNKNOWN" for a value not listed.
   Static storage: never freed. */
const char* kjit_status_name(kjit_status status);

/* Why the last failing call on this thread failed (its status and the C++ error's message); "" if
   none failed yet. Valid until the next failing call on this thread. */
const char* kjit_last_error_message(void);
/* The status of the last failing call on this thread (KJIT_OK if none failed yet). */
kjit_status kjit_last_error_status(void);
/* The compiler's full log when the last failing call on this thread was KJIT_ERROR_COMPILE, else "".
   Valid until the next failing call on this thread. */
const char* kjit_last_error_log(void);
/* The underlying code of the last failure on this thread: the CUresult (KJIT_ERROR_DRIVER,
   KJIT_ERROR_NO_GPU), the LMDB or errno code (KJIT_ERROR_STORE), the NVRTC/nvJitLink result
   (KJIT_ERROR_TOOLCHAIN); 0 otherwise. */
int kjit_last_error_code(void);

/* The library's version, e.g. "0.1.0" (of the libkjit loaded, not of this header). Static storage. */
const char* kjit_version(void);

/* ---------------------------------------------------------------------------------------------- */
/* Settings (docs/configuration.md). A kjit_config is a snapshot of every setting, from which a
   cache is made; changing it later does not change caches made from it. */

typedef struct kjit_config kjit_config;

/* The settings in force now: built-in defaults < KJIT_* environment < kjit::option calls. */
kjit_status kjit_config_create(kjit_config** out);
void kjit_config_destroy(kjit_config* config);
/* Sets one setting by its API name ("cache_dir", "mirror", "memory_limit", "disable_cache",
   "arch", "max_size", … as in docs/configuration.md) from text, parsed as its KJIT_* variable is
   ("1"/"true"/"on", "256MiB", "20s"). KJIT_ERROR_CONFIG for an unknown name or a bad value (the
   config is then unchanged). */
kjit_status kjit_config_set(kjit_config* config, const char* name, const char* value);

/* ---------------------------------------------------------------------------------------------- */
/* Caches: memory tier → LMDB store → bundles → compile. Thread-safe. */

typedef struct kjit_cache kjit_cache;

/* The process-wide default cache (kjit::shared_default_cache), shared with C++ callers. */
kjit_status kjit_cache_create_default(kjit_cache** out);
/* A cache opened on the folder and settings of `config` (the folder is created with mode 0700).
   KJIT_ERROR_STORE for an unsafe folder, KJIT_ERROR_CONFIG for bad settings. */
kjit_status kjit_cache_create(const kjit_config* config, kjit_cache** out);
/* Releases this handle; the default cache lives on while other users hold it. Waits for this
   cache's stores to reach the disk. */
void kjit_cache_destroy(kjit_cache* cache);

/* ---------------------------------------------------------------------------------------------- */
/* Programs: name, CUDA C++ source, options, in-memory headers, name expressions. */

typedef struct kjit_program kjit_program;

/* A program named `name` (shown in errors and the mirror; part of the key) with `source`. */
kjit_status kjit_program_create(const char* name, const char* source, kjit_program** out);
/* A program read from the file `path` and named by it (quoted includes are searched in its
   folder). KJIT_ERROR_OTHER if it can't be read. */
kjit_status kjit_program_create_from_file(const char* path, kjit_program** out);
void kjit_program_destroy(kjit_program* program);
/* Appends one NVRTC option, e.g. "--std=c++17", "-DN=4", "-I/path". Checked when compiling. */
kjit_status kjit_program_add_option(kjit_program* program, const char* option);
/* An in-memory header: `#include "name"` reads `content` (replaces a header of that name). */
kjit_status kjit_program_add_header(kjit_program* program, const char* name, const char* content);
/* An expression such as "scale<float>" whose lowered (mangled) name is wanted. */
kjit_status kjit_program_add_name_expression(kjit_program* program, const char* expression);

/* ---------------------------------------------------------------------------------------------- */
/* Lookups. `arch` is "sm_90", "sm_90a", "compute_90" (PTX only), or NULL / "auto": the settings'
   arch, else the current device's (KJIT_ERROR_NO_GPU without one). */

typedef struct kjit_binary kjit_binary;

/* Where a lookup's binary came from. */
typedef enum kjit_source {
  KJIT_SOURCE_MEMORY = 0,             /* this process's memory tier */
  KJIT_SOURCE_DISK = 1,               /* the LMDB store */
  KJIT_SOURCE_BUNDLE = 2,             /* a read-only bundle (KJIT_BUNDLE) */
  KJIT_SOURCE_REMOTE = 3,             /* the remote tier (KJIT_REMOTE_CACHE) */
  KJIT_SOURCE_COMPILED = 4,           /* compiled by this call */
  KJIT_SOURCE_COMPILED_ELSEWHERE = 5  /* compiled by another process while this one waited */
} kjit_source;

/* "memory", "disk", "bundle", "remote", "compiled", "compiled by another process". Static storage. */
const char* kjit_source_name(kjit_source source);

/* One lookup's outcome beside its binary. */
typedef struct kjit_lookup_info {
  kjit_source source;
  double lookup_ms; /* wall time of the call */
  /* The entry's key (64 hex digits) where the lookup computed it, else "" (kjit_cache_key gives it). */
  char key[65];
} kjit_lookup_info;

/* The binary of `program` for `arch`: from memory, else the store, else compiled and stored.
   KJIT_ERROR_COMPILE (with the log), KJIT_ERROR_OPTION, KJIT_ERROR_ARCH, KJIT_ERROR_TOOLCHAIN… */
kjit_status kjit_cache_get(kjit_cache* cache, const kjit_program* program, const char* arch, kjit_binary** out);
/* kjit_cache_get() that also says where the binary came from (`info` may be NULL). */
kjit_status kjit_cache_lookup(kjit_cache* cache, const kjit_program* program, const char* arch,
                              kjit_binary** out, kjit_lookup_info* info);
/* The key of `program` for `arch`: 64 hex digits and a NUL written to `key` (kjit::Cache::prepare).
   Before the first compile of a program that includes disk headers it is a prediction. */
kjit_status kjit_cache_key(kjit_cache* cache, const kjit_program* program, const char* arch, char key[65]);

/* ---------------------------------------------------------------------------------------------- */
/* Batches, statistics and upkeep (C API 1.1). */

/* The binaries of `count` programs, as kjit_cache_get() would give them one by one: hits are served
   at once, misses compiled in parallel worker processes (kjit::Cache::get_many; `jobs` workers at
   once, 0: one per core), each stored. For each i, binaries[i] gets the binary or NULL and
   statuses[i] its status. Returns KJIT_OK when every item succeeded, else the status of the first
   item that failed, whose message (and compile log) kjit_last_error_message() and
   kjit_last_error_log() then give. `archs` may be NULL (every arch auto) or hold NULLs; an arch
   that does not parse fails its item only (KJIT_ERROR_ARCH). A NULL `programs` or a NULL in it:
   KJIT_ERROR_INVALID_ARGUMENT for every item, nothing looked up. With `count` 0 the arrays may be
   NULL. */
kjit_status kjit_cache_get_many(kjit_cache* cache, size_t count, const kjit_program* const* programs,
                                const char* const* archs, unsigned jobs, kjit_binary** binaries,
                                kjit_status* statuses);

/* What a cache has done since it was opened or last cleared (kjit::CacheStats; kjit_cache_clear
   sets them to zero). The caller sets `size` to
   sizeof(kjit_cache_stats); a later kjit, whose struct has more fields at its end, writes none
   past `size`. */
typedef struct kjit_cache_stats {
  size_t size;
  uint64_t memory_hits;        /* served from this process's memory tier */
  uint64_t disk_hits;          /* served from the store */
  uint64_t bundle_hits;        /* served from a bundle */
  uint64_t remote_hits;        /* served from the remote tier */
  uint64_t misses;             /* found in no tier */
  uint64_t compiles;           /* NVRTC runs of this cache */
  uint64_t uncached_compiles;  /* of those, compiled from the disk and not stored (every reason) */
  uint64_t failed_hits;        /* hits on a remembered compile error */
  uint64_t quarantined;        /* damaged records moved aside */
  uint64_t store_errors;       /* commits that failed (served from memory) */
  uint64_t mirror_errors;      /* mirror writes that failed (the store is unaffected) */
  double compile_ms_saved;     /* compile time the hits did not spend again */
  double compile_ms_spent;     /* compile time the misses spent */
} kjit_cache_stats;

/* Fills `stats` up to stats->size (at least the size field and one counter). */
kjit_status kjit_cache_get_stats(const kjit_cache* cache, kjit_cache_stats* stats);
/* How many entries the cache's store holds (0 without a store). */
kjit_status kjit_cache_disk_entries(const kjit_cache* cache, size_t* count);
/* Removes every entry: the store's, the mirror's and the memory tier's. */
kjit_status kjit_cache_clear(kjit_cache* cache);
/* Removes the least recently used entries until the rest take at most `bytes` (what eviction can
   free: each entry's record, its own header blobs and mirror folder); `removed` (may be NULL)
   gets how many went. */
kjit_status kjit_cache_prune_to_size(kjit_cache* cache, uint64_t bytes, size_t* removed);
/* Removes the entries not used for `seconds`; `removed` (may be NULL) gets how many went. */
kjit_status kjit_cache_prune_older_than(kjit_cache* cache, int64_t seconds, size_t* removed);

/* ---------------------------------------------------------------------------------------------- */
/* Binaries: what a compile made. Read-only; thread-safe. Pointers are valid until
   kjit_binary_destroy. */

void kjit_binary_destroy(kjit_binary* binary);
/* "sm_90", or "compute_90" for PTX only. */
kjit_status kjit_binary_arch(const kjit_binary* binary, const char** arch);
/* The cubin's bytes (an ELF file); size 0 for a virtual arch. */
kjit_status kjit_binary_cubin(const kjit_binary* binary, const void** data, size_t* size);
/* The PTX text, NUL-terminated (size excludes the NUL); may be empty (-dlto programs). */
kjit_status kjit_binary_ptx(const kjit_binary* binary, const char** text, size_t* size);
/* The compiler's messages (warnings) of the compile that made it, possibly "". */
kjit_status kjit_binary_log(const kjit_binary* binary, const char** text);
/* The lowered (mangled) name of the name expression `expression`. KJIT_ERROR_NOT_FOUND if it was
   not one of the program's. */
kjit_status kjit_binary_lowered_name(const kjit_binary* binary, const char* expression, const char** lowered);
/* The program's name expressions, in its order: how many, and the `index`th with its lowered name. */
kjit_status kjit_binary_lowered_name_count(const kjit_binary* binary, size_t* count);
kjit_status kjit_binary_lowered_name_at(const kjit_binary* binary, size_t index, const char** expression,
                                        const char** lowered);

/* Kernel resources, read from the cubin's ELF: no GPU needed. */
typedef struct kjit_kernel_param {
  uint32_t index;  /* position in the parameter list */
  uint32_t offset; /* bytes from the start of the parameter block */
  uint32_t size;   /* bytes */
} kjit_kernel_param;

typedef struct kjit_kernel_info {
  const char* name;             /* mangled (lowered) name */
  int registers;                /* per thread */
  uint32_t static_shared_bytes; /* the kernel's own __shared__ data */
  uint32_t local_bytes;         /* per-thread stack frame */
  uint32_t const_bytes;         /* the module's user __constant__ data */
  uint32_t max_threads;         /* __launch_bounds__ / maxntid, x*y*z; 0 when not set */
  uint32_t param_bytes;         /* size of the parameter block */
  uint32_t max_stack_bytes;     /* per-thread stack including callees */
  size_t param_count;
  const kjit_kernel_param* params; /* param_count entries, by index */
} kjit_kernel_info;

/* How many kernels the cubin holds (0 for a PTX-only binary). KJIT_ERROR_OTHER for a malformed cubin. */
kjit_status kjit_binary_kernel_count(const kjit_binary* binary, size_t* count);
/* The `index`th kernel, in symbol table order. */
kjit_status kjit_binary_kernel_at(const kjit_binary* binary, size_t index, kjit_kernel_info* info);
/* The kernel whose lowered name or name expression is `name`. KJIT_ERROR_NOT_FOUND if none. */
kjit_status kjit_binary_find_kernel(const kjit_binary* binary, const char* name, kjit_kernel_info* info);

/* ---------------------------------------------------------------------------------------------- */
/* Modules and kernels: need a CUDA driver and device (KJIT_ERROR_NO_GPU where there is none).
   libcuda is loaded on first use; kjit never links it. Thread-safe. */

typedef struct kjit_module kjit_module;
typedef struct kjit_kernel kjit_kernel;

/* Loads `binary` (its cubin, else its PTX) in device `device`'s primary context, or with
   device < 0 in the calling thread's current context (else device 0's primary context). Loaded
   once per context and binary content. */
kjit_status kjit_module_load(const kjit_binary* binary, int device, kjit_module** out);
void kjit_module_destroy(kjit_module* module);
/* Waits for all work in the module's context. */
kjit_status kjit_module_synchronize(const kjit_module* module);
/* The kernel named `name` (extern "C" or lowered) or by a name expression of the program.
   KJIT_ERROR_DRIVER (the driver's CUDA_ERROR_NOT_FOUND in kjit_last_error_code()) if there is none. */
kjit_status kjit_module_kernel(const kjit_module* module, const char* name, kjit_kernel** out);
void kjit_kernel_destroy(kjit_kernel* kernel);

typedef struct kjit_launch_config {
  unsigned grid[3];      /* blocks in x, y, z (each at least 1) */
  unsigned block[3];     /* threads per block in x, y, z (each at least 1) */
  unsigned shared_bytes; /* dynamic shared memory per block */
  void* stream;          /* a CUstream; NULL: the context's default stream */
} kjit_launch_config;

/* Launches with `count` pointers to the arguments (cuLaunchKernel's form). KJIT_ERROR_LAUNCH when
   `count` is not the kernel's parameter count (checked for a cubin, before the driver is called). */
kjit_status kjit_kernel_launch(const kjit_kernel* kernel, const kjit_launch_config* config, void** arguments,
                               size_t count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KJIT_KJIT_H */
