// Never stale: include scanning and resolution, manifests, shadowing, explain, orphans.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"
#include "write_lock.hpp"

#include "deps/include_scan.hpp"
#include "deps/manifest.hpp"
#include "deps/manifest_head.hpp"
#include "store/compress.hpp"
#include "store/record.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <random>
#include <csignal>
#include <cstring>
#include <sys/resource.h>
#include <sys/stat.h>
#include <functional>
#include <cstdio>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kjit::test;

namespace {

// A program that includes "params.h" through -I<dir>.
kjit::Program program_using(const std::string& include_dir, const std::string& header = "params.h")
{
  return {"tracked.cu",
          "#include \"" + header + "\"\nextern \"C\" __global__ void tracked(int* p) { *p = VALUE; }\n",
          {},
          {"-I" + include_dir},
          {}};
}

void write_aged(const std::string& path, const std::string& content)
{
  write_text(path, content);
  settle();
}

void set_mtime_by(const std::string& path, int seconds)
{
  struct timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec += seconds;
  times[1] = times[0];
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

void set_mtime_later(const std::string& path)
{
  set_mtime_by(path, 5);
}

// How much this process's peak memory grew while `body` ran, in KiB.
long peak_growth_kib(const std::function<void()>& body)
{
  struct rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  body();
  struct rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  return after.ru_maxrss - before.ru_maxrss;
}

// A limit on this process's address space: its size now and `more` bytes (a forked child's).
void limit_address_space(rlim_t more)
{
  long pages = 0;
  if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld", &pages) != 1) {
      pages = 0;
    }
    std::fclose(statm);
  }
  const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + more;
  const struct rlimit as{limit, limit};
  ::setrlimit(RLIMIT_AS, &as);
}

// `body`'s exit code in a forked child under limit_address_space(256 MiB); 3: std::bad_alloc.
int under_a_memory_limit(const std::function<int()>& body)
{
  const pid_t child = ::fork();
  if (child == 0) {
    limit_address_space(rlim_t{256} << 20);
    try {
      ::_exit(body());
    } catch (const std::bad_alloc&) {
      ::_exit(3);
    } catch (...) {
      ::_exit(4);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

BOOST_AUTO_TEST_SUITE(include_scan)

// The scanners' substring search (util::find_text: memchr on the needle's first character that is
// not '_') answers as std::string::find for every start, needle and text, '_'-heavy ones included.
BOOST_AUTO_TEST_CASE(find_text_answers_as_string_find)
{
  std::mt19937 random(36);
  const std::string alphabet = "__a_b\n";
  const auto make = [&](std::size_t size) {
    std::string out;
    for (std::size_t i = 0; i < size; ++i) {
      out += alphabet[random() % alphabet.size()];
    }
    return out;
  };
  for (int round = 0; round < 20000; ++round) {
    const std::string text = make(random() % 24);
    const std::string needle = make(random() % 6);
    for (std::size_t from = 0; from <= text.size() + 1; ++from) {
      BOOST_TEST_REQUIRE(kjit::util::find_text(text, needle, from) == text.find(needle, from),
                         "find '" << needle << "' in '" << text << "' from " << from);
    }
  }
  BOOST_TEST(kjit::util::find_text("x__FILE__ __FILE__", "__FILE__", 2) == 10u);
  BOOST_TEST(kjit::util::find_text("____", "__") == 0u);
  BOOST_TEST(kjit::util::find_text("ab", "") == 0u);
  BOOST_TEST(kjit::util::find_text("ab", "", 3) == std::string::npos);
}

// The manifests' and closure rows' unescaping (util::unescape_line, which copies the runs between
// backslashes whole) answers as the character-by-character reading it replaced, and gives back
// what escape_line() wrote, for any text; escape_line() writes what it always wrote.
BOOST_AUTO_TEST_CASE(unescape_line_reads_what_escape_line_writes)
{
  // The stored form (manifests, closure rows) escape_line() writes, one character at a time: the
  // version that copies runs whole must write the same bytes.
  const auto reference_escape = [](const std::string& text) {
    std::string out;
    for (const char ch : text) {
      out += ch == '\\' ? "\\\\" : ch == '\n' ? "\\n" : ch == '\r' ? "\\r" : ch == '\t' ? "\\t" : std::string(1, ch);
    }
    return out;
  };
  const auto reference = [](const std::string& line) {
    std::string out;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) {
        const char next = line[++i];
        out += next == 'n' ? '\n' : next == 'r' ? '\r' : next == 't' ? '\t' : next;
      } else {
        out += line[i];
      }
    }
    return out;
  };
  std::mt19937 random(38);
  const std::string alphabet = "\\\\ntr\n\r\tab";
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (std::size_t i = random() % 16; i > 0; --i) {
      text += alphabet[random() % alphabet.size()];
    }
    BOOST_TEST_REQUIRE(kjit::util::unescape_line(text) == reference(text), "'" << text << "'");
    BOOST_TEST_REQUIRE(kjit::util::unescape_line(kjit::util::escape_line(text)) == text, "'" << text << "'");
    BOOST_TEST_REQUIRE(kjit::util::escape_line(text) == reference_escape(text), "'" << text << "'");
  }
  BOOST_TEST(kjit::util::unescape_line("a\\") == "a\\");  // a backslash at the end stays
}

// A number ending in an exponent letter ends before anything but a sign (a held-out mutant of
// strip_comments ran 0x1e on into the comment after it, whose #include was then seen).
BOOST_AUTO_TEST_CASE(a_comment_right_after_a_number_hides_its_includes)
{
  BOOST_TEST(kjit::deps::scan_includes("int x = 0x1e/*\n#include \"hidden.h\"\n*/;\n#include \"seen.h\"\n", {}).size() == 1u);
  BOOST_TEST(kjit::deps::scan_includes("int y = 1e+5;\n#include \"seen.h\"\n", {}).size() == 1u);
}

BOOST_AUTO_TEST_CASE(finds_includes_in_all_their_forms)
{
  const std::string text = "#include \"a.h\"\n"
                           "  #  include <b/c.h>\n"
                           "// #include \"commented.h\"\n"
                           "/* #include \"block.h\" */\n"
                           "#ifdef USE_D\n#include \"d.h\"\n#endif\n"
                           "#define HEADER \"e.h\"\n#include HEADER\n"
                           "#include FROM_OPTION\n"
                           "#if __has_include(<f.h>)\n#endif\n"
                           "#include \\\n  \"continued.h\"\n"
                           "const char* s = \"#include \\\"string.h\\\"\";\n";
  const auto found = kjit::deps::scan_includes(text, {{"FROM_OPTION", "<g.h>"}});
  std::vector<std::string> names;
  for (const auto& directive : found) {
    names.push_back(directive.name + (directive.conditional ? "?" : "") + (directive.quoted ? "q" : "a"));
  }
  // A macro's <name> is left to the compiler (computed: the macros among its tokens are expanded there).
  const std::vector<std::string> expected{"a.hq", "b/c.ha", "d.h?q", "e.hq", "a", "f.h?a", "continued.hq"};
  BOOST_TEST(names == expected, boost::test_tools::per_element());
  BOOST_TEST(found[6].line == 13);
}

// Form feed and vertical tab are white space inside a directive line (C++ [lex.pptoken]); a
// scanner that stops at them hides the include and lets the compile take a stale copy.
BOOST_AUTO_TEST_CASE(form_feed_and_vertical_tab_do_not_hide_an_include)
{
  const auto found = kjit::deps::scan_includes("#\finclude \"ff.h\"\n\v#include \"vt.h\"\n#\vinclude <av.h>\n", {});
  std::vector<std::string> names;
  for (const auto& directive : found) {
    names.push_back(directive.name);
  }
  const std::vector<std::string> expected{"ff.h", "vt.h", "av.h"};
  BOOST_TEST(names == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(includes, CacheFixture)

BOOST_AUTO_TEST_CASE(editing_a_header_recompiles_and_touching_it_does_not)
{
  const std::string inc = tmp.path() + "/inc";
  ::mkdir(inc.c_str(), 0700);
  write_aged(inc + "/params.h", "#define VALUE 1111\n");
  const kjit::Program program = program_using(inc);
  {
    kjit::Cache cache(config);
    const auto prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
    BOOST_TEST_REQUIRE(prepared.included_headers().size() == 1u);
    BOOST_TEST(prepared.included_headers()[0].path == inc + "/params.h");
    BOOST_TEST(cache.get(prepared)->ptx.find("1111") != std::string::npos);
  }
  write_aged(inc + "/params.h", "#define VALUE 2222\n");
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, kjit::Arch::parse("sm_90"))->ptx.find("2222") != std::string::npos);
    BOOST_TEST(cache.stats().compiles == 1u);
  }
  // Touched, same content: a new stamp, in the past (one in the future is too new to stand for the
  // content, as one within the lookup's own timestamp tick is: the lookup hashes it every time).
  set_mtime_by(inc + "/params.h", -5);
  settle();
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, kjit::Arch::parse("sm_90"))->ptx.find("2222") != std::string::npos);
    BOOST_TEST(cache.stats().compiles == 0u);
    BOOST_TEST(cache.stats().disk_hits == 1u);
    BOOST_TEST(cache.stats().header_rehashes == 1u);
  }
  {
    kjit::Cache cache(config);  // the manifest now has the new stamp: no re-hash
    cache.get(program, kjit::Arch::parse("sm_90"));
    BOOST_TEST(cache.stats().header_rehashes == 0u);
    BOOST_TEST(cache.stats().compiles == 0u);
  }
  write_aged(inc + "/params.h", "#define VALUE 1111\n");  // back to the first state: its entry serves
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(program, kjit::Arch::parse("sm_90"))->ptx.find("1111") != std::string::npos);
  BOOST_TEST(cache.stats().compiles == 0u);
}

// A folder the resolution watches (here the first -I folder, where params.h is looked for and
// not found) whose stamp is at or after the resolution's start is "too new", as a header is: with
// coarse timestamps (kernels before 6.13, some filesystems) a file created there within the same
// tick keeps the folder's stamp, and a manifest recorded with it would never see that file (the
// binary of the second folder's params.h served where the first folder's is read). No manifest is
// recorded; before, one was.
BOOST_AUTO_TEST_CASE(a_watched_folder_changed_at_the_resolution_start_records_no_manifest)
{
  const std::string first = tmp.path() + "/first";
  const std::string second = tmp.path() + "/second";
  put(second + "/params.h", "#define VALUE 2222\n");
  std::filesystem::create_directories(first);
  settle();
  set_mtime_later(first);  // as a change within the resolution's timestamp tick reads
  kjit::Program program = program_using(second);
  program.options.insert(program.options.begin(), "-I" + first);
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, kjit::Arch::parse("sm_90"))->ptx.find("2222") != std::string::npos);
  }
  const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  BOOST_TEST(store->count(kjit::store::Table::manifests) == 0u);
  BOOST_TEST(store->count(kjit::store::Table::entries) == 1u);
}

// A folder watched only for the names looked for there in vain (here the source's folder, where
// "params.h" is looked for first) whose stamp is too new is recorded with a stamp no folder has:
// every later lookup asks its names again (an lstat each), which sees a file made there whatever its
// stamp says. Before, no manifest was recorded, and a fresh Cache compiled again: a cache folder
// made beside the sources as the first lookup starts (the library corpus's flaky miss, one CI run in
// three) cost a second compile of a whole library.
BOOST_AUTO_TEST_CASE(a_folder_watched_for_names_changed_at_the_resolution_start_still_leads_to_the_entry)
{
  const std::string app = tmp.path() + "/app";
  const std::string inc = tmp.path() + "/inc";
  put(inc + "/params.h", "#define VALUE 3333\n");
  put(app + "/tracked.cu", "#include \"params.h\"\nextern \"C\" __global__ void tracked(int* p) { *p = VALUE; }\n");
  settle();
  set_mtime_later(app);  // as a file made there within the resolution's timestamp tick reads
  kjit::Program program = kjit::program_from_file(app + "/tracked.cu");
  program.options = {"-I" + inc};
  const kjit::Arch sm90 = kjit::Arch::parse("sm_90");
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, sm90)->ptx.find("3333") != std::string::npos);
  }
  {
    const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(manifest_rows(*store).size() == 1u);
  }
  {
    kjit::Cache cache(config);
    const kjit::Lookup found = cache.lookup(program, sm90);
    BOOST_TEST(kjit::to_string(found.source) == std::string("disk"));
    BOOST_TEST(cache.stats().compiles == 0u);
  }
  // A header made beside the source shadows the -I one: the names asked again see it.
  put(app + "/params.h", "#define VALUE 4444\n");
  set_mtime_later(app);
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(program, sm90)->ptx.find("4444") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_prepared_program_is_served_for_the_headers_on_disk_now)
{
  // get(prepared) served the key prepare() had made: after an edit of its header, the binary of
  // the old header, from the memory tier or (memory_limit 0) the store, while get(program) and a
  // prepared program whose entry was gone compiled the new one.
  const std::string inc = tmp.path() + "/inc";
  ::mkdir(inc.c_str(), 0700);
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  for (const std::size_t memory_limit : {std::size_t(256) << 20, std::size_t(0)}) {
    write_aged(inc + "/params.h", "#define VALUE 1111\n");
    kjit::Config with_limit = config;
    with_limit.memory_limit = memory_limit;
    kjit::Cache cache(with_limit);
    const kjit::Program program = program_using(inc);
    cache.get(program, arch);  // its manifest: the next prepare() is final
    const auto prepared = cache.prepare(program, arch);
    BOOST_TEST_REQUIRE(!prepared.provisional());
    BOOST_TEST(cache.get(prepared)->ptx.find("1111") != std::string::npos);
    write_aged(inc + "/params.h", "#define VALUE 2222\n");
    BOOST_TEST(cache.get(prepared)->ptx.find("2222") != std::string::npos, memory_limit);  // was 1111
    BOOST_TEST(cache.lookup(prepared).binary->ptx.find("2222") != std::string::npos, memory_limit);
    write_aged(inc + "/params.h", "#define VALUE 1111\n");
    BOOST_TEST(cache.get(prepared)->ptx.find("1111") != std::string::npos, memory_limit);
  }
  // A prepared program that reads no disk file stays a memory hit without any check.
  kjit::Cache cache(config);
  const auto plain = cache.prepare(small_program("prepared_plain"), arch);
  cache.get(plain);
  const std::uint64_t stats_before = cache.stats().header_stats;
  BOOST_TEST(std::string(kjit::to_string(cache.lookup(plain).source)) == "memory");
  BOOST_TEST(cache.stats().header_stats == stats_before);
}

BOOST_AUTO_TEST_CASE(a_prepared_program_is_served_for_the_headers_on_disk_now_by_another_cache)
{
  // Which keys prepare() made from the disk was known only to the Cache that prepared them:
  // another Cache (of the same folder) took the key as it was and served the old header's binary
  // from the store, while get(program) compiled the new one.
  const std::string inc = tmp.path() + "/inc";
  ::mkdir(inc.c_str(), 0700);
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  write_aged(inc + "/params.h", "#define VALUE 1111\n");
  const kjit::Program program = program_using(inc);
  std::optional<kjit::PreparedProgram> prepared;
  {
    kjit::Cache first(config);
    first.get(program, arch);  // its manifest: the next prepare() is final
    prepared.emplace(first.prepare(program, arch));
    BOOST_TEST_REQUIRE(!prepared->provisional());
  }
  write_aged(inc + "/params.h", "#define VALUE 2222\n");
  kjit::Cache second(config);
  BOOST_TEST(second.get(*prepared)->ptx.find("2222") != std::string::npos);  // was 1111
  BOOST_TEST(second.lookup(*prepared).binary->ptx.find("2222") != std::string::npos);
  BOOST_TEST(second.get(program, arch)->ptx.find("2222") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_new_header_earlier_in_the_path_shadows_the_old_one)
{
  const std::string first = tmp.path() + "/first";
  const std::string second = tmp.path() + "/second";
  ::mkdir(first.c_str(), 0700);
  ::mkdir(second.c_str(), 0700);
  write_aged(second + "/params.h", "#define VALUE 3333\n");
  kjit::Program program = program_using(first);
  program.options.push_back("-I" + second);
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, kjit::Arch::parse("sm_90"))->ptx.find("3333") != std::string::npos);
  }
  write_aged(first + "/params.h", "#define VALUE 4444\n");
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(prepared.included_headers().at(0).path == first + "/params.h");
  BOOST_TEST(cache.get(prepared)->ptx.find("4444") != std::string::npos);
  BOOST_TEST(cache.stats().compiles == 1u);
}

BOOST_AUTO_TEST_CASE(conditional_includes_cycles_and_macro_paths)
{
  const std::string inc = tmp.path() + "/inc";
  ::mkdir(inc.c_str(), 0700);
  write_aged(inc + "/a.h", "#pragma once\n#include \"b.h\"\n#define A_VALUE 10\n");
  write_aged(inc + "/b.h", "#ifndef B_H\n#define B_H\n#include \"a.h\"\n#define B_VALUE 20\n#endif\n");
  write_aged(inc + "/chosen.h", "#define CHOSEN 30\n");
  write_aged(inc + "/maybe.h", "#define MAYBE 40\n");
  kjit::Program program{"cond.cu",
                        "#include \"a.h\"\n"
                        "#define CHOICE \"chosen.h\"\n#include CHOICE\n"
                        "#ifdef NEVER_DEFINED\n#include \"maybe.h\"\n#include \"does_not_exist.h\"\n#endif\n"
                        "extern \"C\" __global__ void cond(int* p) { *p = A_VALUE + B_VALUE + CHOSEN; }\n",
                        {},
                        {"-I" + inc},
                        {}};
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
  std::vector<std::string> paths;
  for (const auto& header : prepared.included_headers()) {
    paths.push_back(header.path);
  }
  std::sort(paths.begin(), paths.end());
  const std::vector<std::string> expected{inc + "/a.h", inc + "/b.h", inc + "/chosen.h", inc + "/maybe.h"};
  BOOST_TEST(paths == expected, boost::test_tools::per_element());
  BOOST_TEST(cache.get(prepared)->ptx.find("60") != std::string::npos);

  write_aged(inc + "/maybe.h", "#define MAYBE 41\n");  // tracked conservatively: a possible extra compile
  kjit::Cache again(config);
  again.get(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(again.stats().compiles == 1u);
}

BOOST_AUTO_TEST_CASE(a_missing_include_names_the_file_and_the_includer)
{
  const std::string inc = tmp.path() + "/inc";
  ::mkdir(inc.c_str(), 0700);
  write_aged(inc + "/outer.h", "#include \"inner_missing.h\"\n");
  kjit::Program program{"missing.cu", "#include \"outer.h\"\n__global__ void k() {}\n", {}, {"-I" + inc}, {}};
  kjit::Cache cache(config);
  try {
    cache.get(program, kjit::Arch::parse("sm_90"));
    BOOST_FAIL("expected CompileError");
  } catch (const kjit::CompileError& e) {
    BOOST_TEST(e.log().find("inner_missing.h") != std::string::npos, e.log());
    BOOST_TEST(e.log().find(inc + "/outer.h") != std::string::npos, e.log());
    BOOST_TEST(e.log().find("kjit-includes") == std::string::npos, e.log());  // no private paths
  }
  // The compiler's answer decides (the scanner is never the authority): one compile.
  BOOST_TEST(cache.stats().compiles == 1u);
}

BOOST_AUTO_TEST_CASE(two_hundred_headers_cost_one_stat_each_and_no_rehash)
{
  const std::string inc = tmp.path() + "/many";
  ::mkdir(inc.c_str(), 0700);
  std::string source;
  for (int i = 0; i < 200; ++i) {
    write_text(inc + "/h" + std::to_string(i) + ".h", "#define H" + std::to_string(i) + " " + std::to_string(i) + "\n");
    source += "#include <h" + std::to_string(i) + ".h>\n";
  }
  source += "extern \"C\" __global__ void many(int* p) { *p = H199; }\n";
  settle();
  const kjit::Program program{"many.cu", source, {}, {"-I" + inc}, {}};
  {
    kjit::Cache cache(config);
    cache.get(program, kjit::Arch::parse("sm_90"));
  }
  kjit::Cache cache(config);
  const auto binary = cache.get(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(cache.stats().disk_hits == 1u);
  BOOST_TEST(cache.stats().header_stats == 200u);
  BOOST_TEST(cache.stats().header_rehashes == 0u);
  BOOST_TEST(cache.stats().compiles == 0u);
}

BOOST_AUTO_TEST_CASE(what_is_compiled_is_what_was_hashed)
{
  // The disk header is handed to NVRTC in memory, with the content whose hash is in the key.
  const std::string inc = tmp.path() + "/inc";
  ::mkdir(inc.c_str(), 0700);
  write_aged(inc + "/params.h", "#define VALUE 5555\n");
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(program_using(inc), kjit::Arch::parse("sm_90"));
  write_aged(inc + "/params.h", "#define VALUE 6666\n");  // changed after prepare, before compile
  const auto binary = cache.get(prepared);
  BOOST_TEST(binary->ptx.find("6666") != std::string::npos);
  const auto fresh = cache.prepare(program_using(inc), kjit::Arch::parse("sm_90"));
  BOOST_TEST(fresh.key() != prepared.key());
  BOOST_TEST(cache.get(fresh).get() == binary.get());
}

BOOST_AUTO_TEST_CASE(explain_names_the_changed_header_option_and_arch)
{
  const std::string inc = tmp.path() + "/inc";
  ::mkdir(inc.c_str(), 0700);
  write_aged(inc + "/params.h", "#define VALUE 7\n");
  kjit::Program program = program_using(inc);
  program.options.push_back("-DMODE=1");
  kjit::Cache cache(config);
  cache.get(program, kjit::Arch::parse("sm_90"));
  const std::string first_key = cache.prepare(program, kjit::Arch::parse("sm_90")).key();
  BOOST_TEST(cache.explain(program, kjit::Arch::parse("sm_90")).hit);

  write_aged(inc + "/params.h", "#define VALUE 8\n");
  const kjit::MissExplanation header_changed = cache.explain(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(!header_changed.hit);
  BOOST_TEST(header_changed.closest_key == first_key);
  BOOST_TEST_REQUIRE(header_changed.differences.size() == 1u);
  BOOST_TEST(header_changed.differences[0] == "include params.h (" + inc + "/params.h) changed");

  kjit::Program other = program;
  other.options.back() = "-DMODE=2";
  const auto option_changed = cache.explain(other, kjit::Arch::parse("sm_80"));
  const std::vector<std::string> expected{"include params.h (" + inc + "/params.h) changed", "option -DMODE=2 added",
                                          "option -DMODE=1 removed", "arch sm_90 -> sm_80"};
  BOOST_TEST(option_changed.differences == expected, boost::test_tools::per_element());

  kjit::Program unknown = program;
  unknown.name = "never_seen.cu";
  BOOST_TEST(cache.explain(unknown, kjit::Arch::parse("sm_90")).closest_key.empty());
}

BOOST_AUTO_TEST_CASE(entries_of_another_toolchain_are_orphans)
{
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(small_program("current"), kjit::Arch::parse("sm_90"));
  cache.get(prepared);
  BOOST_TEST(cache.orphans().empty());
  {
    // Store an entry as an older NVRTC build would have made it.
    auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
    std::string key_bytes(32, '\x01');
    kjit::store::Entry entry;
    entry.program_name = "old.cu";
    entry.program_txt = "kjit-program 1\nname: old.cu\n";
    entry.options_txt = "kjit-options 1\narch: compute_90\nnvrtc: 12.0 V12.0.1 CL-1\nnvjitlink: 12.0\n";
    entry.binary.arch = "compute_90";
    entry.binary.ptx = "// old";
    store->put(kjit::store::Table::entries, key_bytes,
               kjit::store::encode_record(entry, kjit::util::digest_of_bytes(key_bytes)));
  }
  const auto orphans = cache.orphans();
  BOOST_TEST_REQUIRE(orphans.size() == 1u);
  BOOST_TEST(orphans[0] == "0101010101010101010101010101010101010101010101010101010101010101");
  BOOST_TEST(cache.remove_orphans() == 1u);
  BOOST_TEST(cache.orphans().empty());
  BOOST_TEST(cache.disk_entries() == 1u);
}

BOOST_AUTO_TEST_CASE(damaged_manifests_are_ignored)
{
  kjit::deps::Resolution entry;
  entry.headers.push_back({"a.h", "/x/a.h", kjit::util::sha256("a"), {true, 1, 2, 3}, {}, {}});
  entry.dirs.push_back({"/x", {true, 0, 5, 6}, false, {}});
  const std::string encoded = kjit::deps::encode_manifest({entry});
  const auto decoded = kjit::deps::decode_manifest(encoded);
  BOOST_TEST_REQUIRE(decoded.has_value());
  BOOST_TEST((*decoded)[0].headers[0].path == "/x/a.h");
  BOOST_TEST(((*decoded)[0].headers[0].stamp == entry.headers[0].stamp));
  BOOST_TEST((*decoded)[0].dirs[0].path == "/x");
  std::string damaged = encoded;
  damaged[damaged.size() - 3] ^= 1;
  BOOST_TEST(!kjit::deps::decode_manifest(damaged).has_value());
  BOOST_TEST(!kjit::deps::decode_manifest(encoded.substr(0, encoded.size() / 2)).has_value());
}

// "absent-same" is the names of the first folder of its path in the entry before, as they stand
// after that entry's lines (as decode_manifest() read them before ManifestReader; a review found
// three texts, checksummed but never written by the encoder, that the reader read otherwise).
BOOST_AUTO_TEST_CASE(absent_same_names_the_first_folder_of_its_path_in_the_entry_before)
{
  const std::string dir = "dir 1 0 5 5 1 1\npath /p\n";
  const auto decoded = [](const std::string& body) {
    const std::string text = "kjit-manifest 8 " + kjit::util::to_hex(kjit::util::checksum(body)) + "\n" + body;
    std::string names;  // each folder's absent names, each entry ended by '|'; "-" when it does not decode
    const auto manifest = kjit::deps::decode_manifest(text, "ctx");
    for (const kjit::deps::Resolution& entry : manifest ? *manifest : kjit::deps::Manifest{}) {
      for (const kjit::deps::ProbedDir& d : entry.dirs) {
        names += "[" + std::string(d.absent.text()) + "]";
      }
      names += "|";
    }
    return manifest ? names : std::string("-");
  };
  // The first /p of the entry before has no names: damaged.
  BOOST_TEST(decoded("context ctx\nentry\n" + dir + dir + "absent x\nentry\n" + dir + "absent-same\n") == "-");
  // The last of two absent lines stands.
  BOOST_TEST(decoded("context ctx\nentry\n" + dir + "absent x\nabsent y\nentry\n" + dir + "absent-same\n") ==
             "[y]|[y]|");
  // absent-same after an absent line takes the entry before's, and the next entry's takes that.
  BOOST_TEST(decoded("context ctx\nentry\n" + dir + "absent x\nentry\n" + dir + "absent y\nabsent-same\nentry\n" + dir +
                     "absent-same\n") == "[x]|[x]|[x]|");
  // A chain, and a folder twice with absent-same on the second.
  BOOST_TEST(decoded("context ctx\nentry\n" + dir + "absent x\nentry\n" + dir + "absent-same\nentry\n" + dir +
                     "absent-same\n") == "[x]|[x]|[x]|");
  BOOST_TEST(decoded("context ctx\nentry\n" + dir + "absent x\nentry\n" + dir + dir + "absent-same\n") == "[x]|[][x]|");
}

// A manifest keeps what each state it let go read with other content than its newest entry (format
// 8), and says a state may hold only while each of those headers has that content again; one of
// format 7 may have let any state go.
BOOST_AUTO_TEST_CASE(a_manifest_keeps_what_the_states_it_let_go_read_differently)
{
  const std::string d = tmp.path() + "/let_go";
  put(d + "/same.h", "same\n");
  put(d + "/my.h", "#define V 0\n");
  const auto state = [&](int v) {
    kjit::deps::Resolution entry;
    entry.headers.push_back({"same.h", d + "/same.h", kjit::util::sha256("same\n"), {}, {}, {}});
    entry.headers.push_back({"my.h", d + "/my.h", kjit::util::sha256("#define V " + std::to_string(v) + "\n"), {}, {}, {}});
    if (v == 0) {
      for (int i = 0; i <= static_cast<int>(kjit::deps::k_let_go_headers); ++i) {  // one too many to keep
        entry.headers.push_back({"x.h", d + "/x" + std::to_string(i) + ".h", kjit::util::sha256("x"), {}, {}, {}});
      }
    }
    return entry;
  };
  kjit::deps::Manifest manifest;
  kjit::deps::LetGo let_go;
  for (int v = 0; v <= 9; ++v) {  // newest first: 0 (the widest) and 1 are let go
    manifest.insert(manifest.begin(), state(v));
    kjit::deps::let_go_of_oldest(manifest, let_go);
  }
  BOOST_TEST(manifest.size() == kjit::deps::k_manifest_entries);
  BOOST_TEST_REQUIRE(let_go.states.size() == 2u);
  BOOST_TEST(let_go.states[1].headers.empty());  // 0: more than k_let_go_headers differ, may hold anything
  BOOST_TEST_REQUIRE(let_go.states[0].headers.size() == 1u);  // 1: only my.h differs from 9's
  BOOST_TEST(let_go.states[0].headers[0].first == d + "/my.h");
  BOOST_TEST((let_go.states[0].headers[0].second == kjit::util::sha256("#define V 1\n")));

  const std::string encoded = kjit::deps::encode_manifest(manifest, "ctx", let_go);
  kjit::deps::LetGo decoded_let_go;
  decoded_let_go.tracked = false;
  const auto decoded = kjit::deps::decode_manifest(encoded, "ctx", &decoded_let_go);
  BOOST_TEST_REQUIRE(decoded.has_value());
  BOOST_TEST(decoded->size() == manifest.size());
  BOOST_TEST(decoded_let_go.tracked);
  BOOST_TEST_REQUIRE(decoded_let_go.states.size() == 2u);
  BOOST_TEST(decoded_let_go.states[0].headers == let_go.states[0].headers);
  BOOST_TEST(decoded_let_go.states[1].headers.empty());

  // A state let go that read the newest entry's very headers is not kept (it holds only where
  // the newest does).
  kjit::deps::Manifest same = manifest;
  kjit::deps::LetGo same_let_go;
  same.insert(same.begin(), same.back());  // the oldest's headers again, newest
  kjit::deps::let_go_of_oldest(same, same_let_go);
  BOOST_TEST(same.size() == kjit::deps::k_manifest_entries);
  BOOST_TEST(same_let_go.states.empty());

  let_go.states.pop_back();  // 1 alone: may hold only while my.h says 1
  BOOST_TEST(!kjit::deps::let_go_may_hold(let_go));
  put(d + "/my.h", "#define V 1\n");
  BOOST_TEST(kjit::deps::let_go_may_hold(let_go));
  put(d + "/my.h", "#define V 12\n");
  BOOST_TEST(!kjit::deps::let_go_may_hold(let_go));
  let_go.tracked = false;
  BOOST_TEST(kjit::deps::let_go_may_hold(let_go));

  // Format 7 (no let-go lines) reads as untracked; a let-go line in it is a damaged manifest.
  const std::string old_text = kjit::deps::encode_manifest(manifest, "ctx", kjit::deps::LetGo{false, {}});
  const std::string body = old_text.substr(old_text.find('\n') + 1);
  const auto with_magic = [](const std::string& magic, const std::string& text) {
    return magic + " " + kjit::util::to_hex(kjit::util::checksum(text)) + "\n" + text;
  };
  kjit::deps::LetGo old_let_go;
  BOOST_TEST(kjit::deps::decode_manifest(with_magic("kjit-manifest 7", body), "ctx", &old_let_go).has_value());
  BOOST_TEST(!old_let_go.tracked);
  const std::string tracked_body = encoded.substr(encoded.find('\n') + 1);
  BOOST_TEST(!kjit::deps::decode_manifest(with_magic("kjit-manifest 7", tracked_body), "ctx").has_value());
}

BOOST_AUTO_TEST_CASE(manifests_are_stored_packed_and_one_stored_as_text_is_read_too)
{
  // A vendored CCCL's manifest is 2.8 MB of text (mostly its folders' absent names), stored as it
  // was: each miss of another -D grew the store by 3.7 MB. Now one zstd frame (145 KB).
  const std::string dir = tmp.path() + "/packed";
  std::string header = "#pragma once\n";
  for (int i = 0; i < 40; ++i) {
    header += "#if __has_include(<absent_" + std::to_string(i) + ".h>)\n#endif\n";
  }
  put(dir + "/params.h", header + "#define VALUE 17\n");
  settle();
  const kjit::Program program = program_using(dir);
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const auto plain = kjit::Cache(config).get(program, arch);
  std::vector<std::pair<std::string, std::string>> rows;
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    rows = manifest_rows(*store);
    BOOST_TEST_REQUIRE(rows.size() == 1u);
    const auto text = kjit::store::unpacked(rows[0].second);
    BOOST_TEST_REQUIRE(text.has_value());
    BOOST_TEST(text->rfind("kjit-manifest ", 0) == 0u);
    BOOST_TEST(rows[0].second.rfind("kjit-manifest ", 0) != 0u);  // a frame, not the text
    BOOST_TEST(rows[0].second.size() < text->size());
    BOOST_TEST(text->find("absent_39.h") != std::string::npos);
    store->put({{kjit::store::Table::manifests, rows[0].first, *text}});  // as an older kjit wrote it
  }
  kjit::Cache cache(config);
  const std::uint64_t decoded = kjit::deps::manifests_decoded();
  const kjit::Lookup again = cache.lookup(program, arch);
  BOOST_TEST(kjit::to_string(again.source) == std::string("disk"));
  BOOST_TEST(kjit::deps::manifests_decoded() == decoded + 1);  // found through the manifest
  BOOST_TEST(again.binary->cubin == plain->cubin);
  // A damaged frame is no manifest: the lookup resolves again, and still finds its entry.
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    const std::string frame = kjit::store::packed(store->get(kjit::store::Table::manifests, rows[0].first).value_or(""));
    BOOST_TEST_REQUIRE(frame.rfind("kjit-manifest ", 0) != 0u);
    BOOST_TEST(!kjit::store::unpacked(frame.substr(0, frame.size() - 9)).has_value());
    store->put({{kjit::store::Table::manifests, rows[0].first, frame.substr(0, frame.size() - 9)}});
  }
  const kjit::Lookup damaged = kjit::Cache(config).lookup(program, arch);
  BOOST_TEST(damaged.binary->cubin == plain->cubin);
}

BOOST_AUTO_TEST_CASE(a_damaged_frame_claiming_two_gib_is_no_value_and_takes_no_memory_for_it)
{
  // 17 bytes whose frame header claims 2 GiB: unpacked() zero-filled that much before zstd failed
  // (a review: a lookup took 4.7 s and 2.1 GB). Streamed, its memory grows with what comes out.
  const std::string frame("\x28\xb5\x2f\xfd\xe0\x00\x00\x00\x80\x00\x00\x00\x00\x09\x00\x00x", 17);
  BOOST_TEST(peak_growth_kib([&] { BOOST_TEST(!kjit::store::unpacked(frame).has_value()); }) < 256 * 1024);
  // A frame that says less than it holds, or more, is no value either.
  const std::string text = std::string(4000, 'a') + "kjit";
  const std::string packed = kjit::store::packed(text);
  BOOST_TEST_REQUIRE(packed.size() < text.size());
  BOOST_TEST(kjit::store::unpacked(packed).value_or("") == text);
  BOOST_TEST(!kjit::store::unpacked(packed + "x").has_value());
  BOOST_TEST(!kjit::store::unpacked(packed.substr(0, packed.size() - 1)).has_value());
}

BOOST_AUTO_TEST_CASE(a_damaged_frame_of_an_ordinary_ratio_is_no_value_and_no_exception)
{
  // Found by a review of f2ffb46: 4 MiB whose header claims 1 GiB (256 times) were decoded in one
  // pass into a buffer of the claim: 1 GiB zero-filled, and std::bad_alloc out of Cache::lookup()
  // where that much memory was not to be had.
  std::string frame("\x28\xb5\x2f\xfd\xe0\x00\x00\x00\x40\x00\x00\x00\x00\x09\x00\x00", 16);
  frame.resize(frame.size() + (std::size_t{1} << 22), 'x');
  BOOST_TEST(under_a_memory_limit([&] { return kjit::store::unpacked(frame).has_value() ? 1 : 0; }) == 0);
  BOOST_TEST(peak_growth_kib([&] { BOOST_TEST(!kjit::store::unpacked(frame).has_value()); }) < 128 * 1024);
  // A manifest row of that frame: resolved again, as any damaged row.
  const std::string dir = tmp.path() + "/damaged_ratio";
  put(dir + "/params.h", "#pragma once\n#define VALUE 17\n");
  settle();
  const kjit::Program program = program_using(dir);
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const auto plain = kjit::Cache(config).get(program, arch);
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    const auto rows = manifest_rows(*store);
    BOOST_TEST_REQUIRE(rows.size() == 1u);
    store->put({{kjit::store::Table::manifests, rows[0].first, frame}});
  }
  BOOST_TEST(under_a_memory_limit([&] { return kjit::Cache(config).lookup(program, arch).binary->cubin == plain->cubin ? 0 : 1; }) == 0);
}

BOOST_AUTO_TEST_CASE(a_folders_absent_names_are_written_once_for_the_entries_that_share_them)
{
  // The entries an edited header adds probe the same folders: a vendored CCCL's 2.4 MB of absent
  // names were written, unpacked and decoded once per entry (a hit on four entries: 53 ms, 38 now).
  kjit::deps::Resolution newer;
  newer.headers.push_back({"a.h", "/x/a.h", kjit::util::sha256("a2"), {true, 2, 2, 3}, {}, {}});
  newer.dirs.push_back({"/x", {true, 0, 5, 6}, false, kjit::deps::AbsentNames("cstdio\nvector\n")});
  newer.dirs.push_back({"/y", {true, 0, 5, 6}, false, kjit::deps::AbsentNames("only_y.h\n")});
  kjit::deps::Resolution older = newer;
  older.headers[0].hash = kjit::util::sha256("a1");
  older.dirs[1].absent = kjit::deps::AbsentNames("other.h\n");
  kjit::deps::Resolution oldest = older;
  oldest.dirs.erase(oldest.dirs.begin());  // /x not probed: nothing to be the same as below
  const std::string text = kjit::deps::encode_manifest({newer, older, oldest}, "ctx");
  BOOST_TEST(text.find("vector") == text.rfind("vector"));  // once: /x's names in `older` are the same
  BOOST_TEST(text.find("absent-same") != std::string::npos);
  const auto decoded = kjit::deps::decode_manifest(text, "ctx");
  BOOST_TEST_REQUIRE(decoded.has_value());
  BOOST_TEST_REQUIRE(decoded->size() == 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const kjit::deps::Resolution& want = i == 0 ? newer : i == 1 ? older : oldest;
    BOOST_TEST_REQUIRE((*decoded)[i].dirs.size() == want.dirs.size());
    for (std::size_t d = 0; d < want.dirs.size(); ++d) {
      BOOST_TEST((*decoded)[i].dirs[d].path == want.dirs[d].path);
      BOOST_TEST((*decoded)[i].dirs[d].absent.text() == want.dirs[d].absent.text());
    }
  }
  // Decoded once and shared: 8 entries of a vendored CCCL held 8 copies of its 2.2 MB of names.
  BOOST_TEST((*decoded)[1].dirs[0].absent.text().data() == (*decoded)[0].dirs[0].absent.text().data());
  BOOST_TEST((*decoded)[1].dirs[1].absent.text().data() != (*decoded)[0].dirs[1].absent.text().data());
  // "absent-same" with no such folder in the entry before, or in a first entry: damaged.
  const auto with_body = [](const std::string& body) {
    return "kjit-manifest 7 " + kjit::util::to_hex(kjit::util::checksum(body)) + "\n" + body;
  };
  const std::string dir = "dir 1 0 5 6 0 0\npath /x\n";
  BOOST_TEST(kjit::deps::decode_manifest(with_body("context ctx\nentry\n" + dir + "absent a.h\\n\nentry\n" + dir + "absent-same\n"), "ctx").has_value());
  BOOST_TEST(!kjit::deps::decode_manifest(with_body("context ctx\nentry\n" + dir + "absent-same\n"), "ctx").has_value());
  BOOST_TEST(!kjit::deps::decode_manifest(with_body("context ctx\nentry\n" + dir + "absent a.h\\n\nentry\ndir 1 0 5 6 0 0\npath /z\nabsent-same\n"), "ctx").has_value());
}

// Held-out mutants of manifest.cpp (docs/testing.md, issue 35's run): a path with escaped
// characters reads back as written, and a manifest made in another resolution context is not used.
BOOST_AUTO_TEST_CASE(manifests_keep_odd_paths_and_their_context)
{
  kjit::deps::Resolution entry;
  const std::string odd = "/x/tab\there/new\nline/cr\rhere/back\\slash/t.h";
  entry.headers.push_back({"t.h", odd, kjit::util::sha256("t"), {true, 1, 2, 3}, {}, {}});
  const std::string encoded = kjit::deps::encode_manifest({entry}, "context A");
  const auto decoded = kjit::deps::decode_manifest(encoded, "context A");
  BOOST_TEST_REQUIRE(decoded.has_value());
  BOOST_TEST((*decoded)[0].headers[0].path == odd);
  BOOST_TEST(!kjit::deps::decode_manifest(encoded, "context B").has_value());
  BOOST_TEST(!kjit::deps::decode_manifest(encoded).has_value());
}

// Held-out mutants of include_scan.cpp and key.cpp (issue 35's run): the value of every option
// that takes one is not read as a -D, and a header outside the -I folders and the source folder is
// named in the key by its way from the source folder.
BOOST_AUTO_TEST_CASE(option_values_are_not_defines_and_headers_beside_the_source_are_named_by_their_way)
{
  const auto defines = kjit::deps::defines_from_options(
    {"-U", "-DA=1", "--undefine-macro", "-DB=1", "-I", "-DC=1", "--include-path", "-DD=1", "-include", "-DE=1",
     "--pre-include", "-DF=1", "-DG=7"});
  BOOST_TEST(defines.size() == 1u);
  BOOST_TEST(defines.at("G") == "7");

  const std::string d = tmp.path() + "/way";
  put(d + "/proj/common/x.h", "#define X 1\n");
  put(d + "/proj/src/k.cu", "#include \"../common/x.h\"\nextern \"C\" __global__ void k(int* o) { *o = X; }\n");
  kjit::Cache cache(config);
  const kjit::Program program = kjit::program_from_file(d + "/proj/src/k.cu");
  cache.get(program, kjit::Arch::parse("sm_90"));
  const std::string text = cache.prepare(program, kjit::Arch::parse("sm_90")).program_txt();
  BOOST_TEST(text.find("\t{src}/../common/x.h\n") != std::string::npos, text);
}

// A host under a file-size limit (ulimit -f) below a header's size is not killed by SIGXFSZ when
// the header is copied into the compile's private include folder: the copy fails as any failed
// write does (a kjit::Error). Before, the copy ended the process. (The header says `assert`, so
// it gets a copy that names it; an old header that names nothing is linked, not copied.)
BOOST_AUTO_TEST_CASE(a_header_past_the_file_size_limit_is_not_a_signal)
{
  const std::string dir = tmp.path() + "/limited";
  BOOST_TEST_REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  write_aged(dir + "/params.h", "#define VALUE 7\n// assert\n// " + std::string(8192, 'x') + "\n");
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    limit_file_size_in_child(4096);
    int code = 3;
    try {
      kjit::Cache cache(config);
      code = cache.get(program_using(dir), kjit::Arch::parse("sm_90")) != nullptr ? 0 : 4;
    } catch (const kjit::Error& e) {
      code = std::string(e.what()).find("File too large") != std::string::npos ? 1 : 2;
    } catch (...) {
    }
    ::_exit(code);
  }
  const int status = wait_status(child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 1), status_text(status));
}

// A manifest's head (deps/manifest_head.hpp): a vendored CCCL's hit unpacked, checked and decoded
// 6.4 MB of manifest text, 2.2 MB of it the names its folders were searched for in vain, and an
// edit's check before NVRTC did too. The head holds the newest entry with the absent names of its
// small folders, and what the other entries read otherwise.
namespace {

// The name of the header `i` of searched_in_vain().
std::string long_name(int i)
{
  std::string name = "a_header_with_a_long_name_" + std::to_string(i) + "_";
  name.resize(228, 'x');
  return name + ".h";
}

// A program in `first` whose headers, in `second`, are included with quotes: each is asked of
// `first` in vain first (300 names of 230 characters: more absent names than a head keeps of a
// folder, k_head_absent_bytes), a folder watched for those names (not whole, as an -I folder is).
kjit::Program searched_in_vain(const std::string& first, const std::string& second, int value)
{
  std::filesystem::create_directories(first);
  std::filesystem::create_directories(second);
  std::string source;
  for (int i = 0; i < 300; ++i) {
    const std::string name = long_name(i);
    write_text(second + "/" + name, "#define LONG_" + std::to_string(i) + " " + std::to_string(i) + "\n");
    source += "#include \"" + name + "\"\n";
  }
  write_text(second + "/value.h", "#define VALUE " + std::to_string(value) + "\n");
  source += "#include \"value.h\"\nextern \"C\" __global__ void k(int* p) { *p = VALUE + LONG_0; }\n";
  write_text(first + "/vain.cu", source);
  kjit::Program program = kjit::program_from_file(first + "/vain.cu");
  program.options = {"-I" + second};
  return program;
}

// searched_in_vain() below `root` (its `first` and `second`), compiled and stored once.
kjit::Program stored_in_vain(const kjit::Config& config, const std::string& root, int value)
{
  const kjit::Program program = searched_in_vain(root + "/first", root + "/second", value);
  settle();
  kjit::Cache(config).get(program, kjit::Arch::parse("sm_90"));
  return program;
}


} // namespace

BOOST_AUTO_TEST_CASE(a_hit_and_an_edit_of_a_big_manifest_are_decided_by_its_head)
{
  const std::string first = tmp.path() + "/first";
  const std::string second = tmp.path() + "/second";
  const kjit::Program program = searched_in_vain(first, second, 100);
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  settle();
  for (int v = 101; v <= 103; ++v) {  // three entries of the manifest
    write_aged(second + "/value.h", "#define VALUE " + std::to_string(v) + "\n");
    BOOST_TEST(kjit::Cache(config).get(program, arch)->ptx.find(std::to_string(v + 0)) != std::string::npos);
  }
  {
    const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(manifest_rows(*store).size() == 1u);
    BOOST_TEST(manifest_heads(*store) == 1u);
  }
  // A fresh process's hit: the head alone (the manifest's text is not read).
  std::uint64_t heads = kjit::deps::manifest_heads_decoded();
  std::uint64_t manifests = kjit::deps::manifests_decoded();
  {
    kjit::Cache cache(config);
    BOOST_TEST(kjit::to_string(cache.lookup(program, arch).source) == std::string("disk"));
    BOOST_TEST(cache.stats().compiles == 0u);
  }
  BOOST_TEST(kjit::deps::manifest_heads_decoded() == heads + 1);
  BOOST_TEST(kjit::deps::manifests_decoded() == manifests + 1);  // the head's entry
  // An edit none of the entries read: outdated from the head (compiled, the new value).
  write_aged(second + "/value.h", "#define VALUE 104\n");
  heads = kjit::deps::manifest_heads_decoded();
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, arch)->ptx.find("104") != std::string::npos);
    BOOST_TEST(cache.stats().compiles == 1u);
  }
  BOOST_TEST(kjit::deps::manifest_heads_decoded() == heads + 1);
  // Back to an older value: the head can't tell, the manifest finds its entry (a hit).
  write_aged(second + "/value.h", "#define VALUE 102\n");
  {
    kjit::Cache cache(config);
    const kjit::Lookup found = cache.lookup(program, arch);
    BOOST_TEST(kjit::to_string(found.source) == std::string("disk"));
    BOOST_TEST(found.binary->ptx.find("102") != std::string::npos);
  }
}

// A file that appears in a folder whose absent names the head left out shadows a header: the
// head's stamps of that folder send the lookup to the manifest, which asks its names (a fresh
// process, and a long-lived Cache that kept the head's entry).
BOOST_AUTO_TEST_CASE(a_header_shadowed_in_a_folder_the_head_left_out_is_compiled)
{
  const std::string first = tmp.path() + "/first";
  const kjit::Program program = stored_in_vain(config, tmp.path(), 200);
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  kjit::Cache long_lived(config);
  BOOST_TEST(kjit::to_string(long_lived.lookup(program, arch).source) == std::string("disk"));
  for (const bool fresh : {true, false}) {
    const std::string value = fresh ? "201" : "202";
    write_aged(first + "/value.h", "#define VALUE " + value + "\n");
    std::optional<kjit::Cache> own;
    kjit::Cache& cache = fresh ? own.emplace(config) : long_lived;
    const kjit::Lookup found = cache.lookup(program, arch);
    BOOST_TEST(found.binary->ptx.find(value) != std::string::npos, (fresh ? "a fresh Cache" : "a long-lived Cache"));
    BOOST_TEST(kjit::to_string(found.source) == std::string("compiled"));
  }
}

// A touched header (its content the same) with a file that shadows a header in a folder the head
// left out: the head's touched-header path stored the new stamps and served the old entry, the
// elided folder not compared (found by a review: a wrong binary). It reads the manifest now.
BOOST_AUTO_TEST_CASE(a_touched_header_and_a_shadow_in_a_folder_the_head_left_out_are_compiled)
{
  const kjit::Program program = stored_in_vain(config, tmp.path(), 300);
  write_text(tmp.path() + "/second/" + long_name(5), "#define LONG_5 5\n");  // touched: the same content
  write_aged(tmp.path() + "/first/value.h", "#define VALUE 301\n");         // shadows second/value.h
  kjit::Cache cache(config);
  const kjit::Lookup found = cache.lookup(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(kjit::to_string(found.source) == std::string("compiled"));
  BOOST_TEST(found.binary->ptx.find("301") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
