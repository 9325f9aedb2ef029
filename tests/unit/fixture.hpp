// Test helpers: a private temporary cache folder per test, sample programs, running helpers.
#pragma once

#include <kjit/kjit.hpp>

#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kjit::store {
class Store;
}

namespace kjit::test {

// A fresh folder under /tmp, removed (without following symlinks) at the end of the test.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return m_path; }

private:
  std::string m_path;
};

// A test's own cache: `config` points at <tmp>/cache with defaults otherwise.
struct CacheFixture {
  CacheFixture();
  TempDir tmp;
  Config config;
};

// A small kernel whose text depends on `tag`, so each tag is a different program.
Program small_program(const std::string& tag);

// Reads a whole file; empty string if missing.
std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& content);
// write_text, making the folders on the way first.
void put(const std::string& path, const std::string& content);
bool exists(const std::string& path);

// Runs in `dir` as the working directory for its lifetime, then goes back (fails the test when
// either chdir fails going in).
class InDir {
public:
  explicit InDir(const std::string& dir);
  ~InDir();
  InDir(const InDir&) = delete;
  InDir& operator=(const InDir&) = delete;

private:
  char m_back[4096] = {};
};

// Lets the clock pass the timestamps of files just written: a header modified at or after the
// start of a resolution is "too new" to be recorded in a manifest (see docs/includes.md).
void settle();

// Makes the folder `mount_point` and mounts a tmpfs of `size` ("size=1m") there, to fill it: false
// (the test says it skipped) when not root or when mounting is not allowed here.
bool mount_small_tmpfs(const std::string& mount_point, const char* size);

// A listening TCP socket on 127.0.0.1 (a free port, in `port`) that accepts nothing by itself:
// connections complete in its backlog.
int loopback_listener(int& port);

// A Redis server that knows nothing, on `listener`: accepts one connection and answers each
// request it reads with nil until the client closes. Join the thread after closing the client.
std::thread nil_redis_server(int listener);

// Runs `command` with /bin/sh, returns its exit status and stores its stdout in `output`.
int run(const std::string& command, std::string& output);

// Path of a test helper executable built next to the tests (from the KJIT_TEST_<NAME> variable).
std::string helper(const char* variable);

} // namespace kjit::test

namespace kjit::test {

// Runs the cache_probe helper (tests/unit/cache_probe.cpp) on `file` with `env` before it
// ("VAR=value …"); returns its output (stdout and stderr).
std::string probe_cache(const std::string& cache_dir, const std::string& file, const std::string& arch,
                        const std::string& env = "");

// In a fork()ed child: becomes a host with a file-size limit of `bytes` (ulimit -f) that leaves
// SIGXFSZ's default action, killing, in place (the test runner catches the signal), with an alarm
// so that a hang ends the child. A write of kjit's past the limit must be an error, not a signal.
void limit_file_size_in_child(std::size_t bytes);

// Whether `output` has `line` as a whole line.
bool output_has_line(const std::string& output, const std::string& line);

// The manifests of the `manifests` table (32-byte keys), key and value, without their heads (their
// key and "h": deps/manifest_head.hpp); and how many heads it holds.
std::vector<std::pair<std::string, std::string>> manifest_rows(const kjit::store::Store& store);
std::size_t manifest_heads(const kjit::store::Store& store);

// The entry key of `prepared` as the store's LMDB key (its 32 bytes, the hex key decoded).
std::string raw_key(const kjit::PreparedProgram& prepared);

// `cubin` with section 1's file offset moved past the end: the ELF header and the tables' ranges
// are sound (the header check passes), the section walk is not (the full check refuses it).
std::string with_a_section_past_the_end(std::string cubin);

} // namespace kjit::test
