// A first miss is compiled from the disk while its key is made (cache/speculation.hpp, issue 36):
// the binary is kept only when NVRTC read what the key answers for; else the program is compiled
// again from copies of the headers kjit hashed.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/speculation.hpp"
#include "deps/manifest.hpp"
#include "deps/resolver.hpp"
#include "deps/search.hpp"
#include "store/compress.hpp"
#include "store/meta_keys.hpp"
#include "store/store.hpp"
#include "rtc/compiler.hpp"
#include "rtc/file_watch.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <chrono>
#include <initializer_list>
#include <set>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("sm_90");

const char* const k_kernel = "extern \"C\" __global__ void k(int* out) { *out = V + W; }\n";

kjit::Program program_in(const std::string& dir)
{
  return kjit::Program::from_source("k.cu", std::string("#include \"v.h\"\n#include <w.h>\n") + k_kernel)
    .option("-I" + dir + "/inc")
    .option("--no-source-include");
}

// d/k.cu, "#include <a.h>", searching each of `dirs` (below d) in turn.
kjit::Program includer_of_a(const std::string& d, std::initializer_list<const char*> dirs)
{
  put(d + "/k.cu", "#include <a.h>\n");
  kjit::Program program = kjit::Program::from_source(d + "/k.cu", "#include <a.h>\n");
  for (const char* dir : dirs) {
    program.option("-I" + d + "/" + dir);
  }
  return program;
}

void write_headers(const std::string& dir, int v)
{
  put(dir + "/v.h", "#define V " + std::to_string(v) + "\n");  // not searched: --no-source-include
  put(dir + "/inc/v.h", "#define V " + std::to_string(v) + "\n");
  put(dir + "/inc/w.h", "#include \"deeper/x.h\"\n#define W X\n");
  put(dir + "/inc/deeper/x.h", "#define X 7\n");
}

// `d`'s headers written with V = `v` and settled, and program_in(d) stored by a Cache of its own.
void store_program_in(const kjit::Config& config, const std::string& d, int v)
{
  write_headers(d, v);
  settle();
  kjit::Cache(config).get(program_in(d), k_arch);
}

// A lookup of `program` in a new Cache: compiled ahead (its binary adopted), NVRTC's cubin.
void expect_compiled_ahead(const kjit::Config& config, const kjit::Program& program, const std::string& what)
{
  kjit::Cache cache(config);
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const kjit::Lookup got = cache.lookup(program, k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1, what);
  BOOST_TEST(kjit::to_string(got.source) == std::string("compiled"), what);
  BOOST_TEST(got.binary->cubin == kjit::compile(program, k_arch).cubin, what);
}

// `d`/inc/v.h set to V = `v`, settled.
void set_v(const std::string& d, int v)
{
  write_text(d + "/inc/v.h", "#define V " + std::to_string(v) + "\n");
  settle();
}

// program_in(d) compiled for V = first…last, each by a Cache of its own.
void compile_values(const kjit::Config& config, const std::string& d, int first, int last)
{
  for (int v = first; v <= last; ++v) {
    set_v(d, v);
    BOOST_TEST(kjit::to_string(kjit::Cache(config).lookup(program_in(d), k_arch).source) == std::string("compiled"),
               "V " << v);
  }
}

// program_in(d) for V = 1 and 2 by `a` (its copy of the manifest: [V 2, V 1], stored), then V 3
// by a Cache of its own (the store's row: [V 3, V 2, V 1]).
void two_states_then_another_caches_third(const kjit::Config& config, const std::string& d, kjit::Cache& a)
{
  write_headers(d, 1);
  settle();
  for (int v = 1; v <= 2; ++v) {
    set_v(d, v);
    a.get(program_in(d), k_arch);
  }
  (void)a.stats();  // its commit landed
  set_v(d, 3);
  kjit::Cache(config).get(program_in(d), k_arch);
}

// A lookup of `program` in a new Cache: a disk hit, nothing compiled ahead, NVRTC's cubin.
void expect_a_hit_not_compiled_ahead(const kjit::Config& config, const kjit::Program& program, const std::string& what = {})
{
  kjit::Cache cache(config);
  const std::uint64_t compiled = kjit::cache::speculations_compiled();
  const kjit::Lookup got = cache.lookup(program, k_arch);
  BOOST_TEST(kjit::to_string(got.source) == std::string("disk"), what);
  BOOST_TEST(kjit::cache::speculations_compiled() == compiled, what);
  BOOST_TEST(got.binary->cubin == kjit::compile(program, k_arch).cubin, what);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(speculation, CacheFixture)

BOOST_AUTO_TEST_CASE(a_first_miss_keeps_the_compile_made_from_the_disk)
{
  const std::string d = tmp.path() + "/s";
  write_headers(d, 1);
  settle();
  kjit::Cache cache(config);
  cache.get(small_program("speculation_warm"), k_arch);  // the key context; a store with another name
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const std::uint64_t compiles = cache.stats().compiles;
  const double spent = cache.stats().compile_ms_spent;
  const kjit::Lookup first = cache.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  BOOST_TEST(cache.stats().compiles == compiles + 1);  // one NVRTC run, and its time
  BOOST_TEST(cache.stats().compile_ms_spent - spent + 0.001 >= first.binary->timings.total_ms);
  BOOST_TEST(kjit::to_string(first.source) == std::string("compiled"));
  const kjit::Binary uncached = kjit::compile(program_in(d), k_arch);
  BOOST_TEST(first.binary->ptx == uncached.ptx);
  BOOST_TEST(first.binary->cubin == uncached.cubin);
  // Stored under the key a compile from copies gives: found by another Cache, and by a second
  // Cache after an edit, never served stale.
  kjit::Cache second(config);
  const kjit::Lookup again = second.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::to_string(again.source) == std::string("disk"));
  BOOST_TEST(again.binary->cubin == uncached.cubin);
  write_text(d + "/inc/deeper/x.h", "#define X 8\n");
  settle();
  kjit::Cache third(config);
  const kjit::Lookup edited = third.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::to_string(edited.source) == std::string("compiled"));
  BOOST_TEST(edited.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);
  BOOST_TEST(edited.binary->cubin != uncached.cubin);
}

BOOST_AUTO_TEST_CASE(a_program_named_in_a_folder_with_no_source_include_keeps_the_compile_made_from_the_disk)
{
  // NVRTC stats the program's name as given (d/sub/k.cu); with --no-source-include the resolver
  // places the program in the working directory. That look is the program's own, as any other
  // spelling of its name: the compile made from the disk is kept (it was refused, a second NVRTC run).
  const std::string d = tmp.path() + "/nosrc";
  const std::string source = "#include <h.h>\nextern \"C\" __global__ void k(int* p) { *p = H; }\n";
  put(d + "/inc/h.h", "#define H 3\n");
  put(d + "/sub/k.cu", source);
  settle();
  kjit::Cache cache(config);
  cache.get(small_program("nosrc_warm"), k_arch);
  const kjit::Program program =
    kjit::Program::from_source(d + "/sub/k.cu", source).option("--no-source-include").option("-I" + d + "/inc");
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const kjit::Lookup first = cache.lookup(program, k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  BOOST_TEST(first.binary->cubin == kjit::compile(program, k_arch).cubin);
  kjit::Cache second(config);
  BOOST_TEST(kjit::to_string(second.lookup(program, k_arch).source) == std::string("disk"));
}

BOOST_AUTO_TEST_CASE(a_header_edited_while_nvrtc_reads_it_is_compiled_again_from_copies)
{
  const std::string d = tmp.path() + "/e";
  write_headers(d, 1);
  settle();
  kjit::Cache cache(config);
  cache.get(small_program("speculation_edit"), k_arch);
  // Rewritten when kjit reads it, while NVRTC compiles from the disk: NVRTC may have read either.
  bool rewritten = false;
  kjit::deps::set_read_hook([&](const std::string& path) {
    if (!rewritten && path == d + "/inc/v.h") {
      rewritten = true;
      write_text(path, "#define V 2\n");
    }
  });
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const std::uint64_t compiles = cache.stats().compiles;
  const kjit::Lookup got = cache.lookup(program_in(d), k_arch);
  kjit::deps::set_read_hook({});
  BOOST_TEST(rewritten);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted);  // its stamp is newer than the compile
  BOOST_TEST(cache.stats().compiles == compiles + 2);  // NVRTC ran twice: stats say so
  BOOST_TEST(got.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);  // V 2
  settle();
  kjit::Cache second(config);
  const kjit::Lookup again = second.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::to_string(again.source) == std::string("disk"));
  BOOST_TEST(again.binary->cubin == got.binary->cubin);
}

BOOST_AUTO_TEST_CASE(a_working_directory_changed_during_the_compile_is_compiled_again_from_copies)
{
  // NVRTC names files as the options do (relative -I), from the working directory of the moment.
  const std::string a = tmp.path() + "/a";
  const std::string b = tmp.path() + "/b";
  write_headers(a, 1);
  write_headers(b, 5);
  settle();
  const InDir in_a(a);
  const kjit::Program program =
    kjit::Program::from_source("k.cu", std::string("#include \"v.h\"\n#include <w.h>\n") + k_kernel)
      .option("-Iinc")
      .option("--no-source-include");
  const kjit::Binary plain = kjit::compile(program, k_arch);
  kjit::Cache cache(config);
  cache.get(small_program("speculation_cwd"), k_arch);
  bool moved = false;
  kjit::deps::set_read_hook([&](const std::string&) {
    if (!moved) {
      moved = true;
      BOOST_TEST(::chdir(b.c_str()) == 0);
    }
  });
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const kjit::Lookup got = cache.lookup(program, k_arch);
  kjit::deps::set_read_hook({});
  BOOST_TEST(::chdir(a.c_str()) == 0);
  BOOST_TEST(moved);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted);
  BOOST_TEST(got.binary->cubin == plain.cubin);  // a's headers, as the key says
}

// A -I folder changed within the timestamp tick of the resolution's start (here set ahead, as such
// a change reads) leaves no manifest, but the compile NVRTC made from the disk is kept: nothing
// changed during it. Before, the folder's stamp was replaced by one that never matches, adopt()
// saw "a file appeared in <inc> while NVRTC searched it", and the program compiled a second time.
BOOST_AUTO_TEST_CASE(a_too_new_include_folder_keeps_the_compile_made_from_the_disk)
{
  const std::string d = tmp.path() + "/t";
  write_headers(d, 2);
  settle();
  struct timespec ahead[2];
  ::clock_gettime(CLOCK_REALTIME, &ahead[0]);
  ahead[0].tv_sec += 30;
  ahead[1] = ahead[0];
  BOOST_TEST_REQUIRE(::utimensat(AT_FDCWD, (d + "/inc").c_str(), ahead, 0) == 0);
  kjit::Cache cache(config);
  cache.get(small_program("speculation_ahead"), k_arch);  // the key context
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const std::uint64_t compiles = cache.stats().compiles;
  const kjit::Lookup got = cache.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  BOOST_TEST(cache.stats().compiles == compiles + 1);
  BOOST_TEST(got.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);
}

BOOST_AUTO_TEST_CASE(a_program_whose_header_was_edited_is_compiled_ahead_once_its_manifest_says_so)
{
  // Its entry may serve it (its program row): it is prepared first. Its manifest in this context
  // is outdated (v.h edited: no entry of the context holds it), so it is compiled ahead from there,
  // its headers predicted beside NVRTC. Before, they were predicted before NVRTC started: a
  // vendored CCCL program with an edited header of its own spent 0.42-0.51 s outside NVRTC.
  const std::string d = tmp.path() + "/n";
  store_program_in(config, d, 1);
  write_text(d + "/inc/v.h", "#define V 3\n");
  settle();
  {
    kjit::Cache cache(config);
    const std::uint64_t adopted = kjit::cache::speculations_adopted();
    const kjit::Lookup got = cache.lookup(program_in(d), k_arch);
    BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
    BOOST_TEST(kjit::to_string(got.source) == std::string("compiled"));
    BOOST_TEST(got.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);
  }
  // Its manifest now holds: a hit, nothing compiled; and the edit undone finds the first entry.
  for (int v : {3, 1}) {
    if (v == 1) {
      write_text(d + "/inc/v.h", "#define V 1\n");
      settle();
    }
    expect_a_hit_not_compiled_ahead(config, program_in(d));
  }
}

BOOST_AUTO_TEST_CASE(a_program_whose_folder_alone_changed_is_a_hit_not_compiled_ahead)
{
  // A file no include names appeared in its -I folder (an editor's, a generated one): the manifest
  // holds no more, but its headers hold, and the prediction finds its entry. Compiled ahead, it
  // would compile instead of the hit (kjit explain said hit, kjit compile compiled).
  const std::string d = tmp.path() + "/folder";
  store_program_in(config, d, 6);
  put(d + "/inc/unrelated.txt", "not a header\n");
  settle();
  expect_a_hit_not_compiled_ahead(config, program_in(d));
}

BOOST_AUTO_TEST_CASE(a_header_cycled_through_nine_values_is_a_hit_each_time_after_the_first)
{
  // A manifest keeps 8 entries: the ninth value's compile lets the first go. A full manifest may
  // have let go of states whose entries the prediction finds: never outdated, so none of them is
  // compiled ahead again (found by a review: every one compiled, every time).
  const std::string d = tmp.path() + "/cycle";
  write_headers(d, 1);
  settle();
  compile_values(config, d, 1, 9);
  for (int v = 1; v <= 9; ++v) {
    set_v(d, v);
    expect_a_hit_not_compiled_ahead(config, program_in(d), "V " + std::to_string(v));
  }
}

BOOST_AUTO_TEST_CASE(an_edit_loop_past_a_full_manifest_is_compiled_ahead_and_a_state_let_go_still_hits)
{
  // The ninth value's compile lets the first state go; its manifest keeps what that state's v.h
  // held. An eleventh value, never compiled, is no state let go: compiled ahead (before: prepared,
  // every header predicted before NVRTC, 0.5 s for a vendored CCCL, on every edit after the
  // eighth). A value let go is still a hit.
  const std::string d = tmp.path() + "/loop";
  write_headers(d, 1);
  settle();
  compile_values(config, d, 1, 10);
  set_v(d, 11);
  expect_compiled_ahead(config, program_in(d), "V 11");
  for (int v : {1, 3, 11}) {
    set_v(d, v);
    expect_a_hit_not_compiled_ahead(config, program_in(d), "V " + std::to_string(v));
  }
}

// A long-lived Cache records its next state in its own copy of the manifest: the states another
// Cache (process) stored in the row meanwhile are kept there, or let go with what they read, never
// dropped unrecorded (a review: with room, that state was compiled again though the store held its
// entry; full, it was taken for outdated, so compiled ahead).
BOOST_AUTO_TEST_CASE(states_another_cache_stored_stay_in_the_manifest_a_long_lived_cache_records)
{
  for (const int first : {3, 8}) {  // with room, and full
    const std::string d = tmp.path() + "/others" + std::to_string(first);
    write_headers(d, 1);
    settle();
    const auto set = [&](int v) {  // values of their own: a key names -I folders by their place
      write_text(d + "/inc/v.h", "#define V " + std::to_string(100 * first + v) + "\n");
      settle();
    };
    kjit::Cache a(config);
    for (int v = 1; v <= first; ++v) {
      set(v);
      BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) == std::string("compiled"));
    }
    (void)a.stats();  // its commits done
    set(first + 1);
    BOOST_TEST(kjit::to_string(kjit::Cache(config).lookup(program_in(d), k_arch).source) == std::string("compiled"));
    set(first + 2);
    BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) == std::string("compiled"));
    (void)a.stats();
    set(first + 1);
    BOOST_TEST(kjit::Cache(config).explain(program_in(d), k_arch).hit);
    expect_a_hit_not_compiled_ahead(config, program_in(d), "stored by another Cache, " + std::to_string(first) + " before");
  }
}

// The states a row and a Cache's copy both let go are kept once in the manifest the Cache records
// (else each record beside an uncommitted row of its own added them again, toward the 512 past
// which a manifest may have let anything go).
BOOST_AUTO_TEST_CASE(states_let_go_by_a_row_and_a_cache_s_copy_are_kept_once)
{
  const std::string d = tmp.path() + "/once";
  write_headers(d, 1);
  settle();
  kjit::Cache a(config);
  for (int v = 1; v <= 9; ++v) {  // the first let go
    set_v(d, v);
    a.get(program_in(d), k_arch);
  }
  (void)a.stats();
  set_v(d, 10);  // another Cache: the second let go too, in the row
  kjit::Cache(config).get(program_in(d), k_arch);
  set_v(d, 11);  // the first Cache again, from its copy (the first let go) and the row (both)
  a.get(program_in(d), k_arch);
  (void)a.stats();
  std::size_t manifests = 0;
  auto store = kjit::store::Store::open(a.store_path(), config.store_map_size);
  for (const auto& [key, value] : manifest_rows(*store)) {
    const auto text = kjit::store::unpacked(value);
    BOOST_TEST_REQUIRE(text.has_value());
    kjit::deps::LetGo let_go;
    const std::string context = text->substr(text->find("context ") + 8, text->find('\n', text->find("context ")) - text->find("context ") - 8);
    BOOST_TEST_REQUIRE(kjit::deps::decode_manifest(*text, kjit::util::unescape_line(context), &let_go).has_value());
    std::set<std::vector<std::pair<std::string, kjit::util::Sha256>>> distinct;
    for (const kjit::deps::LetGoState& state : let_go.states) {
      distinct.insert(state.headers);
    }
    BOOST_TEST(let_go.tracked);
    BOOST_TEST(let_go.states.size() == 3u);  // 1, 2 and 3 (10, stored by the other, kept)
    BOOST_TEST(distinct.size() == let_go.states.size());
    ++manifests;
  }
  BOOST_TEST(manifests == 1u);
}

// The child of the test below (SPECULATION_READ_ONLY_CHILD="d,cache_dir": run in its own process, as a
// user who cannot write the store): one Cache compiles V = 9…12, then the same again, printing
// each lookup's source. A no-op otherwise.
BOOST_AUTO_TEST_CASE(child_edit_loop_on_a_store_it_cannot_write)
{
  const char* spec = std::getenv("SPECULATION_READ_ONLY_CHILD");
  if (spec == nullptr) {
    return;
  }
  const std::string d = std::string(spec).substr(0, std::string(spec).find(','));
  kjit::Config own = config;
  own.cache_dir = std::string(spec).substr(std::string(spec).find(',') + 1);
  own.shared_cache = true;
  kjit::Cache cache(own);
  std::printf("writable %d\n", cache.writable() ? 1 : 0);
  for (int v : {9, 10, 11, 12, 9, 10, 11, 12}) {
    set_v(d, v);
    std::printf("V %d: %s\n", v, kjit::to_string(cache.lookup(program_in(d), k_arch).source));
  }
  std::fflush(stdout);
}

// A Cache on a store it cannot write never has its copy of a manifest stored: it records each
// state in that copy, and its base row (decoded once) is not merged again (a review: merged at each
// record, it brought back the states the copy had let go and let the copy's newer ones go, so the
// second round of four values compiled each again).
BOOST_AUTO_TEST_CASE(a_cache_on_a_store_it_cannot_write_keeps_its_own_states)
{
  const std::string d = tmp.path() + "/read_only";
  write_headers(d, 1);
  settle();
  compile_values(config, d, 1, 8);
  std::string output;
  std::string as;  // root ignores permission bits: the child runs as nobody; anyone else, chmod
  if (::geteuid() == 0) {
    BOOST_TEST_REQUIRE(run("chmod -R a+rX,go-w '" + tmp.path() + "' && chown -R 65534 '" + d + "' && chgrp 65534 '" +
                             config.cache_dir + "/store/lock.mdb' && chmod 0660 '" + config.cache_dir + "/store/lock.mdb'",
                           output) == 0,
                       output);
    as = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  } else {
    BOOST_TEST_REQUIRE(run("chmod -R a-w '" + config.cache_dir + "/store' && chmod u+w '" + config.cache_dir + "/store/lock.mdb'", output) == 0, output);
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const int status = run(as + "env SPECULATION_READ_ONLY_CHILD='" + d + "," + config.cache_dir + "' '" + self +
                           "' --run_test=speculation/child_edit_loop_on_a_store_it_cannot_write --log_level=nothing 2>&1",
                         output);
  std::string ignored;
  run("chmod -R u+w '" + tmp.path() + "'", ignored);
  BOOST_TEST_REQUIRE(status == 0, output);
  BOOST_TEST(output.find("writable 0") != std::string::npos, output);
  const std::size_t second = output.find("V 9", output.find("V 12"));
  BOOST_TEST_REQUIRE(second != std::string::npos, output);
  BOOST_TEST(output.find("compiled", second) == std::string::npos, output);  // each found in the Cache's copy
}

// A state let go that read the newest entry's very headers (a folder changed alone, and the
// lookup's prediction put the oldest state first again) is not kept: as one that may hold
// anything, it kept a full manifest from being outdated for the next 512 states (a review).
BOOST_AUTO_TEST_CASE(a_state_let_go_with_the_newest_entrys_headers_keeps_edits_compiled_ahead)
{
  const std::string d = tmp.path() + "/same_headers";
  write_headers(d, 1);
  settle();
  compile_values(config, d, 1, 8);
  set_v(d, 1);
  put(d + "/inc/unrelated.txt", "not a header\n");
  settle();
  expect_a_hit_not_compiled_ahead(config, program_in(d), "V 1, its folder changed");
  for (int v = 20; v <= 21; ++v) {
    set_v(d, v);
    expect_compiled_ahead(config, program_in(d), "V " + std::to_string(v));
  }
}

// A Cache whose copy of a manifest no longer serves, and which is served by the store's (another
// Cache stored the state on disk), keeps the store's as its copy: its next lookup reads nothing
// from the store (found by checking 988a907: the store's newest entry was read alone, and each
// later lookup checked the old copy first and read the store's again).
BOOST_AUTO_TEST_CASE(a_cache_served_by_the_store_s_manifest_keeps_it_in_place_of_its_own)
{
  const std::string d = tmp.path() + "/replaced";
  kjit::Cache a(config);
  two_states_then_another_caches_third(config, d, a);
  // Its own copy (kept packed by its last miss: the store's row is another now) decoded and
  // checked first, then the store's row: 2 (1 before d752ba7, whose copy was decoded already).
  const std::uint64_t decoded = kjit::deps::manifests_decoded();
  BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) == std::string("disk"));
  BOOST_TEST(kjit::deps::manifests_decoded() == decoded + 2);
  BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) != std::string("compiled"));
  BOOST_TEST(kjit::deps::manifests_decoded() == decoded + 2);
}

BOOST_AUTO_TEST_CASE(a_copys_hit_on_an_older_state_keeps_the_state_another_cache_stored_since)
{
  // Found by a review of 291ba30. Cache a's copy is [V 2, V 1]; another Cache stores V 3 since (the
  // store's row: V 3, V 2, V 1). a's lookup of V 1 is served by its copy, which is stored with V 1
  // first: over the store's row, V 3's state was gone, and a fresh Cache compiled V 3 again.
  const std::string d = tmp.path() + "/kept";
  kjit::Cache a(config);
  two_states_then_another_caches_third(config, d, a);
  set_v(d, 1);
  BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) != std::string("compiled"));
  for (const int v : {3, 2, 1}) {
    set_v(d, v);
    expect_a_hit_not_compiled_ahead(config, program_in(d), "V " + std::to_string(v));
  }
}

BOOST_AUTO_TEST_CASE(a_hit_on_a_manifests_newest_entry_decodes_that_entry_alone)
{
  // A fresh process's hit read every entry of the store's manifest to serve the first (a vendored
  // CCCL's 8 entries: 6.4 MB of text, its hit ≈ 3 times one of a manifest of one entry). An older
  // entry that holds is still found, and then put first for the next lookup.
  const std::string d = tmp.path() + "/newest";
  write_headers(d, 1);
  settle();
  for (int v = 1; v <= 3; ++v) {
    set_v(d, v);
    kjit::Cache(config).get(program_in(d), k_arch);
  }
  int now = 3;
  const auto entries_read = [&](int v) {
    if (v != now) {
      set_v(d, v);  // not written again when unchanged: a new stamp alone is put in the manifest, which reads it all
      now = v;
    }
    const std::uint64_t before = kjit::deps::manifest_entries_decoded();
    expect_a_hit_not_compiled_ahead(config, program_in(d), "V " + std::to_string(v));
    return kjit::deps::manifest_entries_decoded() - before;
  };
  BOOST_TEST(entries_read(3) == 1u);
  {
    // A long-lived Cache keeps that one entry: its next lookups read nothing of the store's row
    // (a review: each read it again, +55 % a hit for 1 500 headers).
    kjit::Cache cache(config);
    const std::uint64_t decoded = kjit::deps::manifests_decoded();
    for (int i = 0; i < 3; ++i) {
      BOOST_TEST(kjit::to_string(cache.lookup(program_in(d), k_arch).source) != std::string("compiled"));
    }
    BOOST_TEST(kjit::deps::manifests_decoded() == decoded + 1);
    set_v(d, 3);  // the same text, a new stamp: the store's row read whole, stored with it, whole
    BOOST_TEST(kjit::to_string(cache.lookup(program_in(d), k_arch).source) != std::string("compiled"));
    (void)cache.stats();
  }
  // An older entry: the head's newest (deps/manifest_head.hpp: the head can't tell that entry's
  // content from the disk's), then every entry of the manifest, to put it first.
  BOOST_TEST(entries_read(1) == 4u);  // the oldest
  BOOST_TEST(entries_read(1) == 1u);
  BOOST_TEST(entries_read(3) == 4u);  // second now
}

BOOST_AUTO_TEST_CASE(an_edit_that_another_cache_or_a_bundle_stored_is_a_hit_not_compiled_ahead)
{
  // Found by a review. A Cache whose manifest in memory is outdated reads the store's, which
  // another Cache stored the edit's in; and an imported bundle's entries are in no manifest here.
  const std::string d = tmp.path() + "/others";
  write_headers(d, 1);
  settle();
  kjit::Cache first(config);
  kjit::Cache second(config);
  first.get(program_in(d), k_arch);
  BOOST_TEST(kjit::to_string(second.lookup(program_in(d), k_arch).source) == std::string("disk"));
  write_text(d + "/inc/v.h", "#define V 2\n");
  settle();
  BOOST_TEST(kjit::to_string(first.lookup(program_in(d), k_arch).source) == std::string("compiled"));
  first.flush_mirror();
  const std::uint64_t compiled = kjit::cache::speculations_compiled();
  const kjit::Lookup got = second.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::to_string(got.source) == std::string("disk"));
  BOOST_TEST(kjit::cache::speculations_compiled() == compiled);
  BOOST_TEST(got.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);
  // A store that compiled V 1, imports a bundle holding V 2, then meets V 2 on disk.
  first.export_bundle(tmp.path() + "/both.kjitb", {"k.cu", k_arch.str()});
  config.cache_dir = tmp.path() + "/importer";
  write_text(d + "/inc/v.h", "#define V 1\n");
  settle();
  kjit::Cache(config).get(program_in(d), k_arch);
  BOOST_TEST(kjit::Cache(config).import_bundle(tmp.path() + "/both.kjitb").entries >= 1u);
  write_text(d + "/inc/v.h", "#define V 2\n");
  settle();
  expect_a_hit_not_compiled_ahead(config, program_in(d));
}

BOOST_AUTO_TEST_CASE(an_edit_within_the_tick_of_the_lookup_is_not_compiled_ahead)
{
  // Found by a review. Its stamp can't stand for its content: its compile records no manifest
  // entry, so the manifest may not name an entry of it that is stored. Compiled ahead, it was
  // refused after NVRTC (the header too new) and compiled a second time from copies.
  const std::string d = tmp.path() + "/tick";
  write_headers(d, 1);
  settle();
  kjit::Cache(config).get(program_in(d), k_arch);
  write_text(d + "/inc/v.h", "#define V 4\n");
  struct timespec later[2];
  ::clock_gettime(CLOCK_REALTIME, &later[0]);
  later[0].tv_sec += 30;  // too new for as long as the test runs
  later[1] = later[0];
  BOOST_REQUIRE(::utimensat(AT_FDCWD, (d + "/inc/v.h").c_str(), later, 0) == 0);
  kjit::Cache cache(config);
  const std::uint64_t compiled = kjit::cache::speculations_compiled();
  const kjit::Lookup got = cache.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::cache::speculations_compiled() == compiled);
  BOOST_TEST(got.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);
}

BOOST_AUTO_TEST_CASE(another_program_of_a_known_name_is_compiled_ahead)
{
  // The same source with another -D, and another source, under a name the store holds for the arch:
  // no entry of the name can serve them (their program rows say so). Before, each was resolved and
  // keyed before NVRTC started: a vendored CCCL's -D variants spent 0.43-0.74 s outside NVRTC.
  const std::string d = tmp.path() + "/known";
  store_program_in(config, d, 1);
  kjit::Program other_source = program_in(d);
  other_source.source += "// another kernel of the same name\n";
  for (const kjit::Program& program : {kjit::Program(program_in(d)).option("-DZ=1"), other_source}) {
    kjit::Cache cache(config);
    const std::uint64_t adopted = kjit::cache::speculations_adopted();
    const kjit::Lookup got = cache.lookup(program, k_arch);
    BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
    BOOST_TEST(kjit::to_string(got.source) == std::string("compiled"));
    BOOST_TEST(got.binary->cubin == kjit::compile(program, k_arch).cubin);
    cache.flush_mirror();
    kjit::Cache again(config);
    BOOST_TEST(kjit::to_string(again.lookup(program, k_arch).source) == std::string("disk"));
  }
}

BOOST_AUTO_TEST_CASE(one_cache_compiles_ahead_each_program_of_one_name)
{
  // A Cache that compiled k.cu does not speculate on it again, but does on k.cu with another -D.
  const std::string d = tmp.path() + "/one";
  write_headers(d, 2);
  settle();
  kjit::Cache cache(config);
  cache.get(program_in(d), k_arch);
  std::uint64_t adopted = kjit::cache::speculations_adopted();
  const kjit::Program other = kjit::Program(program_in(d)).option("-DZ=2");
  BOOST_TEST(cache.get(other, k_arch)->cubin == kjit::compile(other, k_arch).cubin);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  adopted = kjit::cache::speculations_adopted();
  const std::uint64_t compiled = kjit::cache::speculations_compiled();
  BOOST_TEST(cache.get(other, k_arch)->cubin == kjit::compile(other, k_arch).cubin);  // a hit
  BOOST_TEST(kjit::cache::speculations_compiled() == compiled);
  write_text(d + "/inc/v.h", "#define V 5\n");  // its entry can't serve it now; its manifest says so
  settle();
  BOOST_TEST(cache.get(other, k_arch)->cubin == kjit::compile(other, k_arch).cubin);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
}

BOOST_AUTO_TEST_CASE(entries_stored_without_program_rows_keep_their_name_from_being_compiled_ahead)
{
  // A store whose entries were stored by a kjit that wrote no program rows (no "program-rows"
  // time), a source row such a kjit wrote, and a bundle's entries (whose records don't say what
  // their key's program was): each may hold an entry that serves the lookup.
  const std::string d = tmp.path() + "/old";
  write_headers(d, 3);
  settle();
  const auto lookup_adopts = [&](const kjit::Program& program) {
    kjit::Cache cache(config);
    const std::uint64_t adopted = kjit::cache::speculations_adopted();
    const kjit::Lookup got = cache.lookup(program, k_arch);
    BOOST_TEST(got.binary->cubin == kjit::compile(program, k_arch).cubin);
    return kjit::cache::speculations_adopted() == adopted + 1;
  };
  {
    kjit::Cache cache(config);
    cache.get(program_in(d), k_arch);
  }
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(store->get(kjit::store::Table::meta, std::string(kjit::store::k_program_rows_since)).value_or("none") == "0");
    store->erase(kjit::store::Table::meta, {std::string(kjit::store::k_program_rows_since)});
  }
  BOOST_TEST(!lookup_adopts(kjit::Program(program_in(d)).option("-DZ=1")));  // k.cu's entry has no row
  // Its commit wrote the time; k.cu's first entry is older than it, but a second's tick may not say.
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    store->put({{kjit::store::Table::meta, std::string(kjit::store::k_program_rows_since), "0"}});
    store->put({{kjit::store::Table::meta, kjit::cache::source_row(program_in(d), k_arch), "stored"}});
  }
  kjit::Program renamed = program_in(d);
  renamed.name = "renamed.cu";  // not a name of the store's: only its source row may lead to it
  BOOST_TEST(!lookup_adopts(renamed));
  kjit::Program renamed_again = kjit::Program(renamed).option("-DZ=3");
  renamed_again.name = "renamed_again.cu";
  BOOST_TEST(lookup_adopts(renamed_again));  // (its source row now says "program")
  // A bundle's k.cu, imported into a new cache.
  {
    kjit::Cache cache(config);
    cache.export_bundle(tmp.path() + "/k.kjitb", {"k.cu", k_arch.str()});
  }
  config.cache_dir = tmp.path() + "/imported";
  {
    kjit::Cache cache(config);
    kjit::Program first = program_in(d);
    first.name = "first.cu";  // the new store's first entry: all of its entries have program rows
    cache.get(first, k_arch);
    BOOST_TEST(cache.import_bundle(tmp.path() + "/k.kjitb").entries >= 1u);
  }
  // Its source under another name (a project that moved) may be a predicted hit too: the import
  // wrote its source row (found by a review: it was compiled ahead, and again).
  kjit::Program moved = program_in(d);
  moved.name = "moved.cu";
  BOOST_TEST(!lookup_adopts(moved));
  BOOST_TEST(!lookup_adopts(kjit::Program(program_in(d)).option("-DZ=4")));
}

BOOST_AUTO_TEST_CASE(another_arch_is_compiled_ahead_but_not_one_whose_ptx_the_store_may_hold)
{
  const std::string d = tmp.path() + "/a";
  write_headers(d, 1);
  settle();
  kjit::Cache cache(config);
  cache.get(program_in(d), kjit::Arch::parse("compute_90"));
  std::uint64_t adopted = kjit::cache::speculations_adopted();
  // sm_80: no entry of its name can serve it (a record's arch says so).
  const kjit::Lookup other = cache.lookup(program_in(d), kjit::Arch::parse("sm_80"));
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  BOOST_TEST(other.binary->cubin == kjit::compile(program_in(d), kjit::Arch::parse("sm_80")).cubin);
  // sm_90: compute_90's PTX may be linked instead of compiling (or a manifest may lead to it).
  adopted = kjit::cache::speculations_adopted();
  const kjit::Lookup same_number = cache.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted);
  BOOST_TEST(same_number.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);
}

BOOST_AUTO_TEST_CASE(two_threads_missing_one_program_get_the_uncached_binary)
{
  // One speculates (its prediction its own: no other lookup closes it meanwhile); the other, with
  // no watch to claim, prepares and compiles as before, or waits for the first.
  const std::string d = tmp.path() + "/t";
  write_headers(d, 4);
  settle();
  kjit::Cache cache(config);
  cache.get(small_program("speculation_threads"), k_arch);
  std::shared_ptr<const kjit::Binary> got[2];
  std::thread other([&] { got[1] = cache.get(program_in(d), k_arch); });
  got[0] = cache.get(program_in(d), k_arch);
  other.join();
  const kjit::Binary plain = kjit::compile(program_in(d), k_arch);
  BOOST_TEST(got[0]->cubin == plain.cubin);
  BOOST_TEST(got[1]->cubin == plain.cubin);
  kjit::Cache second(config);
  BOOST_TEST(kjit::to_string(second.lookup(program_in(d), k_arch).source) == std::string("disk"));
}

BOOST_AUTO_TEST_CASE(a_project_that_moved_finds_its_entries_without_compiling_ahead)
{
  // Named by absolute paths, its programs' names are new at the new place: their source is not.
  const std::string from = tmp.path() + "/old";
  write_headers(from, 6);
  put(from + "/k.cu", std::string("#include \"v.h\"\n#include <w.h>\n") + k_kernel);
  settle();
  const auto at = [](const std::string& dir) {
    kjit::Program program = kjit::program_from_file(dir + "/k.cu");
    program.options = {"-I" + dir + "/inc"};
    return program;
  };
  {
    kjit::Cache cache(config);
    cache.get(at(from), k_arch);
  }
  const std::string to = tmp.path() + "/new";
  BOOST_REQUIRE(::rename(from.c_str(), to.c_str()) == 0);
  kjit::Cache cache(config);
  const std::uint64_t compiled = kjit::cache::speculations_compiled();
  const kjit::Lookup moved = cache.lookup(at(to), k_arch);
  BOOST_TEST(kjit::to_string(moved.source) == std::string("disk"));
  BOOST_TEST(kjit::cache::speculations_compiled() == compiled);  // 1 before: a compile for a hit
  BOOST_TEST(moved.binary->cubin == kjit::compile(at(to), k_arch).cubin);
}

BOOST_AUTO_TEST_CASE(nvrtc_file_accesses_are_recorded_while_a_watch_lives)
{
  const std::string d = tmp.path() + "/w";
  write_headers(d, 1);
  kjit::compile(small_program("watch_load"), k_arch);  // NVRTC loaded
  BOOST_REQUIRE(kjit::rtc::FileWatch::available());
  std::vector<kjit::rtc::FileAccess> seen;
  {
    const auto watch = kjit::rtc::FileWatch::claim();
    BOOST_REQUIRE(watch);
    BOOST_TEST(!kjit::rtc::FileWatch::claim());  // one at a time
    BOOST_REQUIRE(watch->start());
    kjit::compile(program_in(d), k_arch);
    seen = watch->accesses();
    BOOST_TEST(watch->blind().empty());
  }
  const auto opened = [&](const std::string& path) {
    return std::any_of(seen.begin(), seen.end(), [&](const kjit::rtc::FileAccess& a) {
      return a.opened && a.found && a.mine && a.path == path && a.inode != 0;
    });
  };
  BOOST_TEST(opened(d + "/inc/v.h"));
  BOOST_TEST(opened(d + "/inc/w.h"));
  BOOST_TEST(opened(d + "/inc/deeper/x.h"));
  BOOST_TEST(!opened(d + "/v.h"));
  // Nothing is recorded without a started watch.
  const auto later = kjit::rtc::FileWatch::claim();
  BOOST_REQUIRE(later);
  kjit::compile(program_in(d), k_arch);
  BOOST_TEST(later->accesses().empty());
}

BOOST_AUTO_TEST_CASE(a_child_forked_while_a_watch_is_alive_can_watch_its_own)
{
  kjit::compile(small_program("fork_load"), k_arch);
  const auto watch = kjit::rtc::FileWatch::claim();
  BOOST_REQUIRE(watch);
  BOOST_REQUIRE(watch->start());
  const pid_t child = ::fork();
  if (child == 0) {
    // The watching thread is not here: a watch of its own, and its NVRTC calls record nothing.
    const auto own = kjit::rtc::FileWatch::claim();
    ::_exit(own && own->accesses().empty() ? 0 : 1);
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));  // 1 before the fork handlers
}

BOOST_AUTO_TEST_CASE(a_file_named_through_a_paste_is_compiled_from_the_disk_and_not_cached)
{
  // __FILE__ formed by a paste kjit's scan does not see: the binary names "inc/h.h" as NVRTC
  // spelled it, which a portable key does not hold (then looked up with -I <absolute>, a stale name).
  const std::string d = tmp.path() + "/p";
  put(d + "/k.cu", "#include \"h.h\"\nextern \"C\" __global__ void k(const char** o) { *o = where(); }\n");
  put(d + "/inc/h.h", "#pragma once\n#define CAT3(a, b, c) CAT3_(a, b, c)\n#define CAT3_(a, b, c) a##b##c\n"
                      "__device__ inline const char* where() { return CAT3(__F, IL, E__); }\n");
  settle();
  const InDir in(d);
  kjit::Cache cache(config);
  cache.get(small_program("speculation_paste"), k_arch);
  kjit::Program relative = kjit::program_from_file("k.cu");
  relative.options = {"-Iinc"};
  cache.get(relative, k_arch);
  kjit::Program absolute = relative;
  absolute.options = {"-I" + d + "/inc"};
  kjit::Cache second(config);
  const kjit::Lookup got = second.lookup(absolute, k_arch);
  BOOST_TEST(got.binary->cubin == kjit::compile(absolute, k_arch).cubin);  // "inc/h.h" served before
}

BOOST_AUTO_TEST_CASE(a_folder_retargeted_after_nvrtc_opened_its_header_is_compiled_again_from_copies)
{
  // NVRTC opens other/a/sub/v.h (d1's) at once; kjit comes to other/a/sub after it leads to d2
  // (a deploy that swaps a link), where every stamp kjit watches is old.
  const std::string d = tmp.path() + "/r";
  put(d + "/d1/v.h", "#define V 1\n");
  put(d + "/d2/v.h", "#define V 2\n");
  put(d + "/inc/first.h", "#define FIRST 1\n");
  put(d + "/other/a/README", "\n");
  BOOST_REQUIRE(::symlink((d + "/d1").c_str(), (d + "/other/a/sub").c_str()) == 0);
  settle();
  const kjit::Program program =
    kjit::Program::from_source("k.cu", "#include <first.h>\n#include <a/sub/v.h>\nextern \"C\" __global__ void k(int* o) { *o = V + FIRST; }\n")
      .option("-I" + d + "/inc")
      .option("-I" + d + "/other")
      .option("--no-source-include");
  kjit::Cache cache(config);
  cache.get(small_program("speculation_retarget"), k_arch);
  bool moved = false;
  kjit::deps::set_read_hook([&](const std::string& path) {
    if (!moved && path == d + "/inc/first.h") {
      moved = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // NVRTC has opened other/a/sub/v.h
      BOOST_TEST(::symlink((d + "/d2").c_str(), (d + "/other/a/sub2").c_str()) == 0);
      BOOST_TEST(::rename((d + "/other/a/sub2").c_str(), (d + "/other/a/sub").c_str()) == 0);
    }
  });
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const kjit::Lookup got = cache.lookup(program, k_arch);
  kjit::deps::set_read_hook({});
  BOOST_TEST(moved);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted);
  BOOST_TEST(got.binary->cubin == kjit::compile(program, k_arch).cubin);  // V 2, as the key says
}

BOOST_AUTO_TEST_CASE(a_header_nvrtc_looked_for_in_vain_before_a_folder_was_swapped_is_compiled_again_from_copies)
{
  // NVRTC looks for v.h in links/inc (leading to an empty folder) and takes inc2's; kjit first
  // looks at links/inc after it leads to dB, whose v.h it reads (and that includes inc2's next).
  const std::string d = tmp.path() + "/s";
  ::mkdir(d.c_str(), 0700);
  ::mkdir((d + "/dA").c_str(), 0700);
  ::mkdir((d + "/links").c_str(), 0700);
  put(d + "/dB/v.h", "#include_next \"v.h\"\n#undef V\n#define V 9\n");
  put(d + "/inc2/v.h", "#define V 2\n");
  BOOST_REQUIRE(::symlink((d + "/dA").c_str(), (d + "/links/inc").c_str()) == 0);
  settle();
  const kjit::Program program =
    kjit::Program::from_source("k.cu", "#include \"v.h\"\nextern \"C\" __global__ void k(int* o) { *o = V; }\n")
      .option("-I" + d + "/links/inc")
      .option("-I" + d + "/inc2")
      .option("--no-source-include");
  kjit::Cache cache(config);
  cache.get(small_program("speculation_vain"), k_arch);
  const std::thread::id caller = std::this_thread::get_id();
  bool moved = false;
  kjit::deps::set_stamp_hook([&](const std::string& path, kjit::deps::FileStamp& stamp) {
    if (!moved && path == d + "/links/inc" && std::this_thread::get_id() != caller) {
      moved = true;  // the preparing thread's first look, while the caller's thread compiles
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // NVRTC has looked for links/inc/v.h
      BOOST_TEST(::symlink((d + "/dB").c_str(), (d + "/links/inc2").c_str()) == 0);
      BOOST_TEST(::rename((d + "/links/inc2").c_str(), (d + "/links/inc").c_str()) == 0);
      stamp = kjit::deps::folder_stamp_of(path);  // as taken after the swap
    }
  });
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const kjit::Lookup got = cache.lookup(program, k_arch);
  kjit::deps::set_stamp_hook({});
  BOOST_TEST(moved);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted);
  BOOST_TEST(got.binary->cubin == kjit::compile(program, k_arch).cubin);  // V 9, as the key says
}

BOOST_AUTO_TEST_CASE(a_compile_that_writes_a_file_is_not_compiled_ahead)
{
  // -time=F appends NVRTC's timings to F: a compile made twice wrote twice.
  const std::string d = tmp.path() + "/t";
  write_headers(d, 1);
  settle();
  kjit::Cache cache(config);
  cache.get(small_program("speculation_time"), k_arch);
  kjit::Program program = program_in(d);
  program.options.push_back("-time=" + d + "/plain.csv");
  kjit::compile(program, k_arch);
  program.options.back() = "-time=" + d + "/cached.csv";
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  cache.get(program, k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted);
  const auto lines = [](const std::string& text) { return std::count(text.begin(), text.end(), '\n'); };
  BOOST_TEST(lines(read_text(d + "/cached.csv")) == lines(read_text(d + "/plain.csv")));
}

BOOST_AUTO_TEST_CASE(paths_walked_by_their_folders_lead_where_walk_path_leads)
{
  // Speculation::unanswered() asks where each of NVRTC's looks leads; RealPaths walks each folder
  // once. Every kind of path: plain, through a folder symlink, a symlinked file (relative and
  // absolute target), a dangling link, a link loop, missing folders, "..", "." and the root.
  const std::string d = tmp.path() + "/walk";
  put(d + "/real/a/x.h", "");
  put(d + "/real/b/y.h", "");
  BOOST_REQUIRE(::symlink("real/a", (d + "/la").c_str()) == 0);
  BOOST_REQUIRE(::symlink("../b/y.h", (d + "/real/a/ly.h").c_str()) == 0);
  BOOST_REQUIRE(::symlink((d + "/real/b").c_str(), (d + "/real/a/lb").c_str()) == 0);
  BOOST_REQUIRE(::symlink("nowhere.h", (d + "/real/a/dangling.h").c_str()) == 0);
  BOOST_REQUIRE(::symlink("loop2", (d + "/real/a/loop1").c_str()) == 0);
  BOOST_REQUIRE(::symlink("loop1", (d + "/real/a/loop2").c_str()) == 0);
  const std::vector<std::string> paths = {
    d + "/real/a/x.h", d + "/la/x.h", d + "/la/ly.h", d + "/la/lb", d + "/la/lb/y.h", d + "/la/dangling.h",
    d + "/la/loop1", d + "/la/loop1/x.h", d + "/la/missing/x.h", d + "/missing/deeper/x.h", d + "/la/../real",
    d + "/la/..", d + "/la/.", d + "/la/", d + "/real/a/x.h/z.h", "/", "/tmp", d + "//la/x.h",
  };
  kjit::deps::RealPaths real_paths;
  for (int round = 0; round < 2; ++round) {  // the second from the folders remembered
    for (const std::string& path : paths) {
      BOOST_TEST(real_paths.real(path) == kjit::deps::walk_path(path).real, path);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_resolution_that_shed_its_absent_index_notes_each_absent_name_once)
{
  // prepare_ahead() sheds the index after close(); a compile refused from the disk may still
  // add names to the same resolution, whose folders must list each absent name once, as before.
  const std::string d = tmp.path() + "/shed";
  put(d + "/inc2/a.h", "#define A 1\n");
  put(d + "/inc2/b.h", "#define B 2\n");
  put(d + "/inc1/other.h", "");
  const kjit::Program program = includer_of_a(d, {"inc1", "inc2"});
  const kjit::deps::SearchContext context = kjit::deps::search_context(program, {});
  kjit::deps::Resolver kept(program, context);
  kjit::deps::Resolver shed(program, context);
  for (kjit::deps::Resolver* resolver : {&kept, &shed}) {
    resolver->predict();
    resolver->close();
  }
  shed.shed_absent_index();
  for (kjit::deps::Resolver* resolver : {&kept, &shed}) {
    for (const char* name : {"b.h", "b.h", "c.h", "c.h", "a.h"}) {
      resolver->add_next(name, kjit::deps::IncludeKind::angle, d + "/k.cu");
    }
  }
  const auto listed = [](const kjit::deps::Resolver& resolver) {
    std::string out;
    for (const kjit::deps::ProbedDir& dir : resolver.result().dirs) {
      out += dir.path + ":\n" + std::string(dir.absent.text());
    }
    return out;
  };
  BOOST_TEST(listed(shed) == listed(kept));
  const std::string inc1 = d + "/inc1:\n";
  const std::string all = listed(shed);
  BOOST_REQUIRE(all.find(inc1) != std::string::npos);
  for (const char* name : {"a.h\n", "b.h\n", "c.h\n"}) {
    std::size_t count = 0;
    for (std::size_t at = all.find(name); at != std::string::npos; at = all.find(name, at + 1)) {
      count += at == 0 || all[at - 1] == '\n';
    }
    BOOST_TEST(count >= 1, name);
    BOOST_TEST(count <= 2, name);  // inc1, and inc2 for c.h (each folder once)
  }
}

BOOST_AUTO_TEST_CASE(a_closed_resolution_is_closed_again_only_after_it_grew)
{
  // prepare_ahead() closes a speculation's prediction on its preparing thread; the compile closes
  // it again after NVRTC (compile_with_includes): that second close() makes no pass. A name added
  // since (NVRTC asking for one) makes the next close() find every file of that name again.
  const std::string d = tmp.path() + "/closed";
  put(d + "/inc1/a.h", "#define A 1\n");
  put(d + "/inc1/dup.h", "");
  put(d + "/inc2/dup.h", "");
  const kjit::Program program = includer_of_a(d, {"inc1", "inc2"});
  kjit::deps::Resolver resolver(program, kjit::deps::search_context(program, {}));
  resolver.predict();
  resolver.close();
  const std::uint64_t passes = kjit::deps::closure_passes();
  resolver.close();
  BOOST_TEST(kjit::deps::closure_passes() == passes);
  BOOST_TEST(resolver.find(d + "/inc2/dup.h") == nullptr);
  BOOST_TEST(resolver.add_next("dup.h", kjit::deps::IncludeKind::angle, d + "/k.cu") == d + "/inc1/dup.h");
  resolver.close();
  BOOST_TEST(kjit::deps::closure_passes() > passes);
  BOOST_TEST(resolver.find(d + "/inc2/dup.h") != nullptr);  // the name in every folder searched
  const std::uint64_t again = kjit::deps::closure_passes();
  resolver.close();
  BOOST_TEST(kjit::deps::closure_passes() == again);
}

BOOST_AUTO_TEST_CASE(a_check_that_held_after_a_moment_answers_for_it_until_the_resolution_grows)
{
  // compile_entry() checks the prediction's stamps after NVRTC returned; the adoption then asks
  // unchanged_since(NVRTC's return) and takes no stamp again. A check begun before that moment,
  // or a resolution grown since, is checked again (an edit is then seen).
  const std::string d = tmp.path() + "/held";
  put(d + "/inc/a.h", "#define A 1\n");
  put(d + "/inc/b.h", "#define B 1\n");
  const kjit::Program program = includer_of_a(d, {"inc"});
  kjit::deps::Resolver resolver(program, kjit::deps::search_context(program, {}));
  resolver.predict();
  resolver.close();
  std::size_t stamps = 0;
  kjit::deps::set_stamp_hook([&](const std::string& path, kjit::deps::FileStamp&) { stamps += path == d + "/inc/a.h"; });
  struct Unhook {
    ~Unhook() { kjit::deps::set_stamp_hook({}); }
  } unhook;
  const std::int64_t before = kjit::deps::Resolver::steady_now_ns();
  BOOST_TEST(resolver.unchanged());  // a plain check remembers nothing
  BOOST_TEST(stamps == 1u);
  BOOST_TEST(resolver.unchanged_since(before));
  BOOST_TEST(stamps == 2u);
  stamps = 1;
  BOOST_TEST(resolver.check_unchanged());
  BOOST_TEST(stamps == 2u);
  stamps = 1;
  put(d + "/inc/a.h", "#define A 22\n");  // edited after the check
  BOOST_TEST(resolver.unchanged_since(before));  // the check began after `before`, and held
  BOOST_TEST(stamps == 1u);
  BOOST_TEST(!resolver.unchanged_since(kjit::deps::Resolver::steady_now_ns()));  // a later moment: looked at again
  BOOST_TEST(stamps == 2u);
  put(d + "/inc/a.h", "#define A 1\n");
  kjit::deps::Resolver grown(program, kjit::deps::search_context(program, {}));
  grown.predict();
  const std::int64_t moment = kjit::deps::Resolver::steady_now_ns();
  BOOST_TEST(grown.check_unchanged());
  BOOST_TEST(!grown.add_next("b.h", kjit::deps::IncludeKind::angle, d + "/k.cu").empty());
  put(d + "/inc/a.h", "#define A 333\n");
  BOOST_TEST(!grown.unchanged_since(moment));  // grown since the check: looked at again
}

BOOST_AUTO_TEST_CASE(the_header_blobs_a_speculation_encoded_are_stored_and_read_back)
{
  // The preparing thread encodes the blobs of headers the store lacks while NVRTC compiles; the
  // commit stores them as they are. Each must read back as its header (decode_blob() checks the
  // content's SHA-256), and headers the store holds are not encoded again.
  const std::string d = tmp.path() + "/blobs";
  std::string long_text;
  for (int i = 0; i < 400; ++i) {
    long_text += "#define LONG_" + std::to_string(i) + " " + std::to_string(i * 7) + "\n";
  }
  put(d + "/inc/shared.h", long_text + "#define SHARED 3\n");
  put(d + "/inc/one.h", "#include <shared.h>\n" + long_text.substr(0, long_text.find("#define LONG_150")) + "#define ONE SHARED\n");
  put(d + "/inc/two.h", "#include <shared.h>\n#define TWO (SHARED + 1)\n");
  settle();
  const auto program = [&](const char* name, const char* header, const char* value) {
    return kjit::Program::from_source(name, std::string("#include <") + header +
                                              ">\nextern \"C\" __global__ void k(int* o) { *o = " + value + "; }\n")
      .option("-I" + d + "/inc");
  };
  kjit::Cache cache(config);
  cache.get(small_program("blobs_warm"), k_arch);  // the key context; a store with another name
  const std::uint64_t encoded = kjit::cache::blobs_encoded_ahead();
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const std::uint64_t shed = kjit::deps::texts_shed();
  const auto one = cache.get(program("one.cu", "one.h", "ONE"), k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  BOOST_TEST(kjit::cache::blobs_encoded_ahead() == encoded + 2);  // one.h, shared.h
  cache.get(program("two.cu", "two.h", "TWO"), k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 2);
  BOOST_TEST(kjit::cache::blobs_encoded_ahead() == encoded + 3);  // two.h: the store holds shared.h
  // Let go while NVRTC compiled: the texts of every blob encoded, and of shared.h, whose blob the
  // store held (the commit requires it there: store::Store::Row::present).
  BOOST_TEST(kjit::deps::texts_shed() == shed + 4);
  kjit::Cache reader(config);  // (a store's reads wait for the commits queued before them)
  for (const auto& [name, header] : {std::pair{"one.cu", "one.h"}, std::pair{"two.cu", "two.h"}}) {
    const std::vector<kjit::EntryInfo> infos = reader.entries({name, k_arch.str()});
    BOOST_REQUIRE(infos.size() == 1u);
    const kjit::EntryContents contents = reader.entry(infos.front().key);
    BOOST_TEST(contents.headers.size() == 2u);
    BOOST_TEST(contents.headers.at(d.substr(1) + "/inc/" + header) == read_text(d + "/inc/" + header));
    BOOST_TEST(contents.headers.at(d.substr(1) + "/inc/shared.h") == long_text + "#define SHARED 3\n");
  }
  BOOST_TEST(reader.verify(kjit::Repair::no).bad.empty());
  BOOST_TEST(reader.lookup(program("one.cu", "one.h", "ONE"), k_arch).binary->cubin == one->cubin);
}

// The manifest a miss compiled ahead stores is encoded and packed by the preparing thread, beside
// NVRTC, when the compile then records the resolution it was made from in the same copy of the
// manifest (before, after NVRTC, on the caller's path: a vendored CCCL's 2.8 MB of text, ≈ 6 ms):
// a program's first (its entry alone), and the program after an edit (its entry before the state
// before it, in this Cache's copy of the manifest, or in the store's for another Cache). Each state
// is found again from the store by a Cache of its own, with no compile.
BOOST_AUTO_TEST_CASE(the_manifest_packed_beside_nvrtc_is_stored_and_finds_each_state_again)
{
  const std::string d = tmp.path() + "/packed";
  put(d + "/inc/v.h", "#define V 1\n");
  settle();
  const kjit::Program program =
    kjit::Program::from_source("packed.cu", "#include <v.h>\nextern \"C\" __global__ void k(int* o) { *o = V; }\n")
      .option("-I" + d + "/inc");
  kjit::Cache cache(config);
  cache.get(small_program("packed_warm"), k_arch);  // the key context; a store with another name
  const std::uint64_t packed = kjit::cache::manifests_packed_ahead();
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const auto first = cache.get(program, k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  BOOST_TEST(kjit::cache::manifests_packed_ahead() == packed + 1);
  put(d + "/inc/v.h", "#define V 2\n");
  settle();
  const auto second = cache.get(program, k_arch);  // compiled ahead: its manifest is outdated
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 2);
  BOOST_TEST(kjit::cache::manifests_packed_ahead() == packed + 2);
  BOOST_TEST(second->cubin != first->cubin);
  // Another process's edit: its Cache has no copy of the manifest, the store's row is its base.
  put(d + "/inc/v.h", "#define V 3\n");
  settle();
  kjit::Cache other(config);
  const auto third = other.get(program, k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 3);
  BOOST_TEST(kjit::cache::manifests_packed_ahead() == packed + 3);
  for (const auto& [value, binary] : {std::pair{"3", third}, std::pair{"2", second}, std::pair{"1", first}}) {
    put(d + "/inc/v.h", std::string("#define V ") + value + "\n");
    settle();
    kjit::Cache reader(config);
    const kjit::Lookup found = reader.lookup(program, k_arch);
    BOOST_TEST(kjit::to_string(found.source) == std::string("disk"), "V " << value);
    BOOST_TEST(found.binary->cubin == binary->cubin, "V " << value);
  }
}

// A miss after an edit reads the store's manifest row (a vendored CCCL's: 3–4 MB of text, 5–12 ms
// to unpack and decode) only where it needs its entries: in another Cache, the lookup's check, the
// closure seed (the newest entry alone, taken with the edit: docs/includes.md, "An edit that keeps
// the closure") and the manifest packed ahead; the preparing thread's own check asks only that the
// row is still the one found outdated (before: 5 decodes).
BOOST_AUTO_TEST_CASE(a_miss_after_an_edit_decodes_the_store_s_manifest_only_where_it_needs_its_entries)
{
  const std::string d = tmp.path() + "/decoded_once";
  put(d + "/inc/v.h", "#define V 1\n");
  settle();
  const kjit::Program program =
    kjit::Program::from_source("decoded_once.cu", "#include <v.h>\nextern \"C\" __global__ void k(int* o) { *o = V; }\n")
      .option("-I" + d + "/inc");
  {
    kjit::Cache cache(config);
    cache.get(program, k_arch);
  }
  put(d + "/inc/v.h", "#define V 2\n");
  settle();
  kjit::Cache other(config);
  other.get(small_program("decoded_once_warm"), k_arch);  // the key context
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const std::uint64_t packed = kjit::cache::manifests_packed_ahead();
  const std::uint64_t decoded = kjit::deps::manifests_decoded();
  other.get(program, k_arch);  // compiled ahead: its manifest is outdated
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  BOOST_TEST(kjit::cache::manifests_packed_ahead() == packed + 1);
  // The check, the closure seed and the manifest packed ahead; not the record, which keeps that
  // one packed.
  BOOST_TEST(kjit::deps::manifests_decoded() == decoded + 3);
  // The next edit in this Cache: its copy is the row its commit stored, kept packed: the check
  // reads its newest entry and passes over the rest, the closure seed reads the newest entry of the
  // store's row, and the manifest packed ahead decodes the copy beside NVRTC.
  put(d + "/inc/v.h", "#define V 3\n");
  settle();
  other.get(program, k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 2);
  BOOST_TEST(kjit::cache::manifests_packed_ahead() == packed + 2);
  BOOST_TEST(kjit::deps::manifests_decoded() == decoded + 6);
  for (const char* value : {"1", "2", "3"}) {
    put(d + "/inc/v.h", std::string("#define V ") + value + "\n");
    settle();
    kjit::Cache reader(config);
    BOOST_TEST(kjit::to_string(reader.lookup(program, k_arch).source) == std::string("disk"), "V " << value);
  }
}

BOOST_AUTO_TEST_CASE(a_miss_after_an_edit_passes_over_the_entries_that_list_the_edited_header)
{
  // An edit loop's manifest: each entry lists the edited header. The check before NVRTC decoded
  // every entry to find that none holds (a vendored CCCL's 8: 1 691 headers each, ≈ 35 ms of a
  // miss's time outside NVRTC); after the newest, an entry that lists the header with other content
  // than it has now is passed over. An older state that holds still reads them all, in place.
  const std::string d = tmp.path() + "/passed_over";
  write_headers(d, 1);
  compile_values(config, d, 1, 4);
  set_v(d, 5);
  kjit::Cache other(config);
  other.get(small_program("passed_over_warm"), k_arch);  // the key context
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const std::uint64_t entries = kjit::deps::manifest_entries_decoded();
  other.get(program_in(d), k_arch);  // compiled ahead: none of the 4 holds
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  // The check 1 (was 4), the closure seed 1 (the newest, taken with the edit), the manifest packed
  // ahead 4, the record none (was 4: it keeps the manifest packed ahead as it is,
  // KnownManifest::packed_whole).
  BOOST_TEST(kjit::deps::manifest_entries_decoded() - entries == 6u);
  // V 2: the newest (5) read, 4 and 3 passed over, 2 holds: all 5 read in their places, 2 first.
  for (const int v : {2, 2, 1, 5, 4, 3, 2}) {
    set_v(d, v);
    expect_a_hit_not_compiled_ahead(config, program_in(d), "V " + std::to_string(v));
  }
}

BOOST_AUTO_TEST_CASE(a_packed_copy_whose_commit_failed_keeps_its_state_after_a_hit_in_the_store)
{
  // Found by a review of d752ba7. A long-lived Cache keeps a miss's manifest packed
  // (KnownManifest::packed_whole); its commit fails (a full disk). A hit on an older state of the
  // store's row then replaced that copy by the row: the state just compiled was lost from it, and
  // its next lookup was compiled again although its binary is in memory.
  const std::string mount_point = tmp.path() + "/small";
  if (!mount_small_tmpfs(mount_point, "size=4m")) {
    return;
  }
  config.cache_dir = mount_point + "/cache";
  config.store_map_size = 16 << 20;
  const std::string d = tmp.path() + "/full";
  write_headers(d, 1);
  compile_values(config, d, 1, 4);
  std::string big = "#define V 9\n// ";  // a blob that the full disk has no pages for
  std::uint64_t x = 88172645463325252ull;
  for (int n = 0; n < (1 << 20); ++n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    big += "0123456789abcdef"[x & 15];
  }
  big += "\n";
  {
    kjit::Cache a(config);
    set_v(d, 2);
    BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) == std::string("disk"));  // its copy: the row
    std::string output;
    run("dd if=/dev/zero of='" + mount_point + "/filler' bs=4k 2>/dev/null", output);  // fills the disk
    write_text(d + "/inc/v.h", big);
    settle();
    const std::uint64_t packed = kjit::cache::manifests_packed_ahead();
    BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) == std::string("compiled"));
    BOOST_TEST(kjit::cache::manifests_packed_ahead() == packed + 1);  // kept packed
    BOOST_TEST(a.stats().store_errors >= 1u);
    set_v(d, 3);
    BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) == std::string("disk"));  // the store's row
    write_text(d + "/inc/v.h", big);
    settle();
    const std::uint64_t compiled = kjit::cache::speculations_compiled();
    const std::uint64_t compiles = a.stats().compiles;
    BOOST_TEST(!a.prepare(program_in(d), k_arch).provisional(), "its copy names the big V 9");
    BOOST_TEST(kjit::to_string(a.lookup(program_in(d), k_arch).source) == std::string("memory"));
    BOOST_TEST(kjit::cache::speculations_compiled() == compiled);
    BOOST_TEST(a.stats().compiles == compiles);
  }
  ::umount2(mount_point.c_str(), MNT_DETACH);
}

BOOST_AUTO_TEST_CASE(a_stored_blob_pruned_while_nvrtc_compiles_is_stored_again_from_its_header)
{
  // two.h's compile lets shared.h's text go (its blob is in the store, one.cu's); one.cu pruned
  // meanwhile takes that blob with it: the commit stores it again from the file (found by a
  // review: the entry was left unstored, with a warning blaming another process).
  const std::string d = tmp.path() + "/pruned";
  put(d + "/inc/shared.h", std::string(2000, ' ') + "#define SHARED 3\n");
  put(d + "/inc/one.h", "#include <shared.h>\n#define ONE SHARED\n");
  put(d + "/inc/two.h", "#include <shared.h>\n#define TWO (SHARED + 1)\n");
  settle();
  const auto program = [&](const char* name, const char* header, const char* value) {
    return kjit::Program::from_source(name, std::string("#include <") + header +
                                              ">\nextern \"C\" __global__ void k(int* o) { *o = " + value + "; }\n")
      .option("-I" + d + "/inc");
  };
  kjit::Cache cache(config);
  cache.get(small_program("pruned_warm"), k_arch);
  cache.get(program("one.cu", "one.h", "ONE"), k_arch);
  bool pruned = false;
  kjit::deps::set_shed_hook([&] {
    if (!pruned) {
      pruned = true;
      kjit::Cache other(config);
      other.prune_older_than(-1);
    }
  });
  const std::uint64_t shed = kjit::deps::texts_shed();
  const auto two = cache.get(program("two.cu", "two.h", "TWO"), k_arch);
  kjit::deps::set_shed_hook({});
  BOOST_TEST(pruned);
  BOOST_TEST(kjit::deps::texts_shed() == shed + 2);  // two.h (encoded), shared.h (in the store then)
  cache.flush_mirror();
  BOOST_TEST(cache.store_problem() == "");
  BOOST_TEST(cache.stats().store_errors == 0u);
  kjit::Cache reader(config);
  const std::vector<kjit::EntryInfo> infos = reader.entries({"two.cu", k_arch.str()});
  BOOST_REQUIRE(infos.size() == 1u);
  BOOST_TEST(reader.entry(infos.front().key).headers.at(d.substr(1) + "/inc/shared.h") == read_text(d + "/inc/shared.h"));
  BOOST_TEST(reader.verify(kjit::Repair::no).bad.empty());
  BOOST_TEST(reader.lookup(program("two.cu", "two.h", "TWO"), k_arch).binary->cubin == two->cubin);
}

BOOST_AUTO_TEST_CASE(a_speculating_miss_on_a_new_store_learns_nvrtc_s_build_from_its_compile)
{
  // A new store knows no toolchain: the key needs NVRTC's build, which every PTX header names.
  // The speculation's compile shows it (rtc::CompileAhead); no probe is compiled before it, and
  // the build is the one a probe finds. Each in a fork()ed child: a process that learned nothing.
  const std::string d = tmp.path() + "/learn";
  write_headers(d, 4);
  settle();
  const auto in_child = [](const std::function<std::string()>& run) {
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(fds[0]);
      std::string out;
      try {
        out = run();
      } catch (const std::exception& e) {
        out = std::string("error: ") + e.what();
      }
      const bool written = ::write(fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size());
      ::_exit(written ? 0 : 1);
    }
    ::close(fds[1]);
    std::string out;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
      out.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    return out;
  };
  const std::string probed = in_child([&] {
    const std::string identity = kjit::rtc::nvrtc_build_identity(config);
    return identity + " " + std::to_string(kjit::rtc::build_identity_probes());
  });
  const std::string learned = in_child([&] {
    kjit::Config fresh = config;
    fresh.cache_dir = d + "/cache";
    kjit::Cache cache(fresh);
    const std::uint64_t adopted = kjit::cache::speculations_adopted();
    const kjit::Lookup found = cache.lookup(program_in(d), k_arch);
    const std::string key = cache.prepare(program_in(d), k_arch).key();  // the manifest's: the stored entry's
    const std::string identity = kjit::rtc::nvrtc_build_identity(config);
    return identity + " " + std::to_string(kjit::rtc::build_identity_probes()) + " adopted " + std::to_string(kjit::cache::speculations_adopted() - adopted) + " " +
           kjit::to_string(found.source) + " " + key;
  });
  BOOST_TEST(probed.find(" V") != std::string::npos, probed);
  BOOST_TEST(probed.substr(probed.size() - 2) == " 1");  // a process that compiled nothing probes
  const std::string identity = probed.substr(0, probed.size() - 2);
  BOOST_TEST(learned.rfind(identity + " 0 adopted 1 compiled ", 0) == 0, learned);  // no probe
  // The key the speculating Cache stored under is the one a Cache of this process (whose build
  // was probed or learned before) makes for the same files.
  kjit::Config here = config;
  here.cache_dir = d + "/cache";
  kjit::Cache cache(here);
  BOOST_TEST(learned.substr(learned.size() - 64) == cache.prepare(program_in(d), k_arch).key());
  BOOST_TEST(kjit::to_string(cache.lookup(program_in(d), k_arch).source) == std::string("disk"));
}

BOOST_AUTO_TEST_CASE(a_miss_whose_cubin_nvrtc_makes_does_not_load_nvjitlink)
{
  // Loading nvJitLink maps ≈ 30 MB (a vendored CCCL's miss: 309 → 287 MB at its peak) that a compile
  // whose cubin NVRTC makes never touches. In a store that knows the toolchain, neither a compile
  // of a prepared program nor a speculating lookup loads it (a process of its own: cache_probe).
  const std::string d = tmp.path() + "/nolink";
  write_headers(d, 2);
  for (const char* name : {"/k.cu", "/j.cu"}) {
    put(d + name, std::string("#include \"v.h\"\n#include \"inc/w.h\"\n") + k_kernel);
  }
  settle();
  {
    kjit::Cache cache(config);
    cache.get(small_program("nolink_warm"), k_arch);  // the toolchain's rows, committed by the end
  }
  for (const auto& [file, how] : {std::pair{"/k.cu", "sm_90"}, std::pair{"/j.cu", "sm_90 --lookup"}}) {
    const std::string out = probe_cache(config.cache_dir, d + file, how);
    BOOST_TEST(output_has_line(out, "result: ok"), out);
    BOOST_TEST(output_has_line(out, "compiles: 1"), out);
    BOOST_TEST(output_has_line(out, "nvrtc_loaded: 1"), out);
    BOOST_TEST(output_has_line(out, "nvjitlink_loaded: 0"), out);
  }
}

BOOST_AUTO_TEST_CASE(a_new_stores_first_miss_learns_nvjitlinks_version_without_keeping_it_loaded)
{
  // A new store learns the toolchain's versions for its keys: nvJitLink's from a load undone at
  // once (held, its ≈ 26 MB of pages stood beside NVRTC's peak: a vendored CCCL's first miss +35 MB
  // over --no-cache). Both ways a miss takes (a speculating lookup, a prepared program's compile),
  // each in a new store; a later process finds each entry under the key it was stored with.
  const std::string d = tmp.path() + "/newstore";
  write_headers(d, 2);
  for (const auto& [file, how] : {std::pair{"/k.cu", "sm_90"}, std::pair{"/j.cu", "sm_90 --lookup"}}) {
    put(d + file, std::string("#include \"v.h\"\n#include \"inc/w.h\"\n") + k_kernel);
    settle();
    const std::string cache_dir = d + "/cache" + std::string(file).substr(1, 1);
    const std::string cold = probe_cache(cache_dir, d + file, how);
    BOOST_TEST(output_has_line(cold, "result: ok"), cold);
    BOOST_TEST(output_has_line(cold, "compiles: 1"), cold);
    BOOST_TEST(output_has_line(cold, "nvjitlink_loaded: 0"), cold);
    const std::string warm = probe_cache(cache_dir, d + file, "sm_90");
    BOOST_TEST(output_has_line(warm, "disk_hits: 1"), warm);
    BOOST_TEST(output_has_line(warm, "compiles: 0"), warm);
  }
}

BOOST_AUTO_TEST_CASE(a_speculating_miss_lets_go_of_the_header_texts_whose_blobs_it_encoded)
{
  // A CUTLASS program's 19 MB of header texts were held through NVRTC's peak although the entry
  // stores their blobs, encoded while NVRTC ran (issue 36): they go once encoded, and the entry,
  // its blobs and its mirror folder still hold every header.
  const std::string d = tmp.path() + "/shed";
  write_headers(d, 1);
  settle();
  kjit::Cache cache(config);
  cache.get(small_program("shed_warm"), k_arch);
  const std::uint64_t shed = kjit::deps::texts_shed();
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const kjit::Lookup got = cache.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted + 1);
  BOOST_TEST(kjit::deps::texts_shed() == shed + 3);  // inc/v.h, inc/w.h, inc/deeper/x.h
  BOOST_TEST(got.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);
  cache.flush_mirror();
  kjit::Cache reader(config);
  const std::vector<kjit::EntryInfo> infos = reader.entries({"k.cu", k_arch.str()});
  BOOST_REQUIRE(infos.size() == 1u);
  const kjit::EntryContents contents = reader.entry(infos.front().key);
  BOOST_TEST(contents.headers.size() == 3u);
  for (const char* name : {"/inc/v.h", "/inc/w.h", "/inc/deeper/x.h"}) {
    BOOST_TEST(contents.headers.at(d.substr(1) + name) == read_text(d + name));
    BOOST_TEST(read_text(config.cache_dir + "/programs/" + infos.front().key + "/module/headers/" + d.substr(1) + name) ==
               read_text(d + name));
  }
  BOOST_TEST(reader.verify(kjit::Repair::no).bad.empty());
  BOOST_TEST(kjit::to_string(reader.lookup(program_in(d), k_arch).source) == std::string("disk"));
}

BOOST_AUTO_TEST_CASE(a_header_edited_after_its_text_was_let_go_is_compiled_from_what_is_there)
{
  // The texts go while NVRTC compiles; a header edited then makes the binary NVRTC made unusable
  // (its stamp moved), and the texts read again are not what was hashed: the program is prepared
  // and compiled again from the edited file, never from an empty or stale text.
  const std::string d = tmp.path() + "/shed_edit";
  write_headers(d, 1);
  settle();
  kjit::Cache cache(config);
  cache.get(small_program("shed_edit_warm"), k_arch);
  bool rewritten = false;
  kjit::deps::set_shed_hook([&] {
    if (!rewritten) {
      rewritten = true;
      write_text(d + "/inc/v.h", "#define V 5\n");
    }
  });
  const std::uint64_t shed = kjit::deps::texts_shed();
  const kjit::Lookup got = cache.lookup(program_in(d), k_arch);
  kjit::deps::set_shed_hook({});
  BOOST_TEST(rewritten);
  BOOST_TEST(kjit::deps::texts_shed() > shed);
  BOOST_TEST(got.binary->cubin == kjit::compile(program_in(d), k_arch).cubin);  // V 5
  settle();
  kjit::Cache second(config);
  const kjit::Lookup again = second.lookup(program_in(d), k_arch);
  BOOST_TEST(kjit::to_string(again.source) == std::string("disk"));
  BOOST_TEST(again.binary->cubin == got.binary->cubin);
  // (By its listing: a hit through a prediction reports no key, as when v.h's stamp was recorded
  // within a tick of its edit, and the manifest can't vouch for it.)
  const std::vector<kjit::EntryInfo> infos = second.entries({"k.cu", k_arch.str()});
  BOOST_TEST_REQUIRE(infos.size() == 1u);
  const kjit::EntryContents contents = second.entry(infos.front().key);
  BOOST_TEST(contents.headers.at(d.substr(1) + "/inc/v.h") == "#define V 5\n");
}

BOOST_AUTO_TEST_CASE(texts_let_go_are_read_again_for_named_copies_when_nvrtcs_binary_is_refused)
{
  // A header that names files (__FILE__) is copied with its name written in (not linked): when the
  // binary NVRTC made from the disk is refused (the working directory changed while it compiled),
  // the copies are made from the texts read again, which the preparing thread had let go.
  const std::string a = tmp.path() + "/named_a";
  const std::string b = tmp.path() + "/named_b";
  write_headers(a, 1);
  write_headers(b, 5);
  for (const std::string& d : {a, b}) {
    put(d + "/inc/w.h", "#include \"deeper/x.h\"\n#define W (X + sizeof(__FILE__))\n");
  }
  settle();
  const InDir in_a(a);
  const kjit::Program program =
    kjit::Program::from_source("k.cu", std::string("#include \"v.h\"\n#include <w.h>\n") + k_kernel)
      .option("-Iinc")
      .option("--no-source-include");
  const kjit::Binary plain = kjit::compile(program, k_arch);
  kjit::Cache cache(config);
  cache.get(small_program("speculation_named_shed"), k_arch);
  bool moved = false;
  kjit::deps::set_shed_hook([&] {
    if (!moved) {
      moved = true;
      BOOST_TEST(::chdir(b.c_str()) == 0);
    }
  });
  const std::uint64_t shed = kjit::deps::texts_shed();
  const std::uint64_t adopted = kjit::cache::speculations_adopted();
  const kjit::Lookup got = cache.lookup(program, k_arch);
  kjit::deps::set_shed_hook({});
  BOOST_TEST(::chdir(a.c_str()) == 0);
  BOOST_TEST(moved);
  BOOST_TEST(kjit::deps::texts_shed() > shed);
  BOOST_TEST(kjit::cache::speculations_adopted() == adopted);
  BOOST_TEST(got.binary->cubin == plain.cubin);  // a's headers, as the key says
}

BOOST_AUTO_TEST_SUITE_END()
