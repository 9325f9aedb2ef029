// Work a cold miss does not repeat: the toolkit is found once per Cache, folders are listed only
// where a name is looked up in them; and what that must not lose (issue 10, per-miss costs).
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/key.hpp"
#include "deps/resolver.hpp"
#include "rtc/compiler.hpp"
#include "rtc/toolkit.hpp"

#include <algorithm>
#include <optional>
#include <sys/stat.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("sm_90");

bool has_option(const std::vector<std::string>& options, const std::string& option)
{
  return std::find(options.begin(), options.end(), option) != options.end();
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(miss_work, CacheFixture)

BOOST_AUTO_TEST_CASE(misses_find_the_toolkit_once_per_cache_not_per_miss)
{
  kjit::Cache cache(config);
  cache.get(small_program("toolkit_once_0"), k_arch);  // the key context: the toolkit is found
  const std::uint64_t before = kjit::rtc::toolkit_finds();
  for (int i = 1; i <= 3; ++i) {
    cache.get(small_program("toolkit_once_" + std::to_string(i)), k_arch);
  }
  BOOST_TEST(cache.stats().compiles == 4u);
  BOOST_TEST(kjit::rtc::toolkit_finds() == before);  // was 3 finds (12 stats) per miss

  // A new Cache finds it again: a toolkit changed since the last Cache is seen there.
  kjit::Cache second(config);
  second.get(small_program("toolkit_once_4"), k_arch);
  BOOST_TEST(kjit::rtc::toolkit_finds() > before);
}

BOOST_AUTO_TEST_CASE(a_toolkit_folder_added_is_seen_when_the_toolkit_is_found_again)
{
  const std::string root = tmp.path() + "/cuda";
  put(root + "/include/x.h", "\n");
  kjit::Config other = config;
  other.cuda_home = root;
  BOOST_TEST(kjit::rtc::remember_toolkit(other).include_dirs == std::vector<std::string>{root + "/include"});
  ::mkdir((root + "/include/cccl").c_str(), 0700);
  // The remembered toolkit serves the misses of the Cache that found it…
  BOOST_TEST(!has_option(kjit::rtc::implicit_options(other, k_arch), "-I" + root + "/include/cccl"));
  // …and the next Cache (its key context finds the toolkit anew) sees the new folder.
  BOOST_TEST(kjit::rtc::remember_toolkit(other).include_dirs.size() == 2u);
  BOOST_TEST(has_option(kjit::rtc::implicit_options(other, k_arch), "-I" + root + "/include/cccl"));
  // Another root is never served the remembered one.
  kjit::Config third = config;
  third.cuda_home = tmp.path() + "/elsewhere";
  BOOST_TEST(kjit::rtc::toolkit_for(third).root == third.cuda_home);
  BOOST_TEST(kjit::rtc::toolkit_for(third).include_dirs.empty());
}

BOOST_AUTO_TEST_CASE(a_miss_that_looks_no_name_up_lists_no_folder)
{
  // A string program's folder is the working folder, watched on every miss: by its stamp (a
  // stat), not by listing it (its size is the user's, not kjit's).
  kjit::Cache cache(config);
  cache.get(small_program("no_listing_0"), k_arch);
  const std::uint64_t before = kjit::deps::folder_listings();
  cache.get(small_program("no_listing_1"), k_arch);
  BOOST_TEST(cache.stats().compiles == 2u);
  BOOST_TEST(kjit::deps::folder_listings() == before);
}

BOOST_AUTO_TEST_CASE(a_header_appearing_in_the_watched_source_folder_changes_the_result)
{
  const std::string d = tmp.path() + "/w";
  put(d + "/inc/x.h", "#define V 1111\n");
  put(d + "/src/k.cu", "\n");
  settle();
  const kjit::Program program{d + "/src/k.cu",
                              "#include \"x.h\"\nextern \"C\" __global__ void k(int* p) { *p = V; }\n",
                              {},
                              {"-I" + d + "/inc"},
                              {}};
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(program, k_arch)->ptx.find("1111") != std::string::npos);
  put(d + "/src/x.h", "#define V 2222\n");  // found before the -I folder's (the includer's folder)
  settle();
  BOOST_TEST(cache.get(program, k_arch)->ptx.find("2222") != std::string::npos);
  kjit::Cache fresh(config);
  BOOST_TEST(fresh.get(program, k_arch)->ptx.find("2222") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_miss_of_a_program_without_headers_makes_its_key_once)
{
  // prepare() made the key texts; the compile made them again from the same program, arch,
  // context and (no) headers. Now it takes prepare()'s, and the entry is stored under them.
  kjit::Cache cache(config);
  cache.get(small_program("key_once_0"), k_arch);  // the key context
  const kjit::Program program = small_program("key_once_1");
  const std::uint64_t before = kjit::cache::keys_made();
  BOOST_TEST(std::string(kjit::to_string(cache.lookup(program, k_arch).source)) == "compiled");
  BOOST_TEST(kjit::cache::keys_made() - before == 1u);  // was 2
  const kjit::PreparedProgram prepared = cache.prepare(program, k_arch);
  cache.stats();  // waits for the commit: the entry is in the store
  const kjit::EntryContents stored = cache.entry(prepared.key());
  BOOST_TEST(stored.program_txt == prepared.program_txt());
  BOOST_TEST(stored.options_txt == prepared.options_txt());

  // What still makes them again after the compile: disk headers (the compile may have read
  // others than prepare() knew), -lineinfo (the working directory is in the key: the one of the
  // compile), each found under the key of what was compiled.
  const std::string inc = tmp.path() + "/inc";
  put(inc + "/v.h", "#define V 7\n");
  settle();
  kjit::Program with_header = small_program("key_once_2");
  with_header.source = "#include <v.h>\n" + with_header.source;
  with_header.options.push_back("-I" + inc);
  kjit::Program line_info = small_program("key_once_3");
  line_info.options.push_back("-lineinfo");
  for (const kjit::Program& other : {with_header, line_info}) {
    const std::uint64_t start = kjit::cache::keys_made();
    BOOST_TEST(std::string(kjit::to_string(cache.lookup(other, k_arch).source)) == "compiled");
    BOOST_TEST(kjit::cache::keys_made() - start >= 2u);
    BOOST_TEST(std::string(kjit::to_string(cache.lookup(other, k_arch).source)) == "memory");
  }
}

BOOST_AUTO_TEST_CASE(a_prepared_program_without_headers_is_not_prepared_again_for_a_namesake_bit)
{
  // Keys made from disk headers were marked by their first 16 bits only: a program without any
  // header whose key shared them with one of the marked keys (one in 13 after 5000 programs with
  // headers were prepared) was prepared again on every lookup (about 10 us instead of 0.03 us).
  kjit::Cache cache(config);
  kjit::Program with_include = small_program("namesake_include");
  with_include.source = "// include\n" + with_include.source;  // may include: its key is marked
  const std::string marked = cache.prepare(with_include, k_arch).key().substr(0, 4);
  std::optional<kjit::PreparedProgram> plain;
  for (int i = 0; i < (1 << 21) && !plain; ++i) {  // 1 in 65536 shares the 16 bits
    kjit::Program program = small_program("namesake_plain");
    program.source += "// " + std::to_string(i) + "\n";
    kjit::PreparedProgram prepared = cache.prepare(program, k_arch);
    if (prepared.key().compare(0, 4, marked) == 0) {
      plain = std::move(prepared);
    }
  }
  BOOST_TEST_REQUIRE(plain.has_value());
  BOOST_TEST_REQUIRE(cache.get(*plain) != nullptr);
  const std::uint64_t before = kjit::cache::keys_made();
  BOOST_TEST(std::string(kjit::to_string(cache.lookup(*plain).source)) == "memory");
  BOOST_TEST(kjit::cache::keys_made() == before);  // was 1 more: prepared again
}

BOOST_AUTO_TEST_SUITE_END()
