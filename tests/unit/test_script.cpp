// Scripts: tuning keys, folder names, fingerprints, spaces and patterns, the script hash, and the
// errors of bad input.
#include <boost/test/unit_test.hpp>

#include "script_samples.hpp"

#include <kjit/script.hpp>

#include <cmath>
#include <set>

using kjit::test::CacheFixture;
using kjit::test::macro_script;
using kjit::test::template_script;
using kjit::test::test_batch;

BOOST_AUTO_TEST_SUITE(script_keys)

BOOST_AUTO_TEST_CASE(tuning_keys_round_up_to_four_buckets_per_octave)
{
  const std::pair<std::uint64_t, std::uint64_t> cases[] = {
    {0, 0},       {1, 1},       {3, 3},       {4, 4},       {8, 8},       {9, 10},      {1000, 1024},
    {1024, 1024}, {1025, 1280}, {1100, 1280}, {1280, 1280}, {1281, 1536}, {2047, 2048},
    {std::uint64_t(1) << 40, std::uint64_t(1) << 40}, {(std::uint64_t(1) << 40) + 1, (std::uint64_t(5) << 38)},
  };
  for (const auto& [n, key] : cases) {
    BOOST_TEST(kjit::tuning_key(n) == key, "tuning_key(" << n << ") = " << kjit::tuning_key(n) << ", expected " << key);
  }
  // Four keys in each octave: [1024, 2048) has 1024, 1280, 1536, 1792.
  std::set<std::uint64_t> keys;
  for (std::uint64_t n = 1024; n < 2048; ++n) {
    keys.insert(kjit::tuning_key(n));
  }
  BOOST_TEST(keys.size() == 4u + 1u);  // and 2048 for 1793..2047
  BOOST_TEST(kjit::tuning_key(std::uint64_t(1) << 63) == std::uint64_t(1) << 63);
  BOOST_CHECK_THROW(kjit::tuning_key((std::uint64_t(1) << 63) + 1), kjit::ScriptError);
}

BOOST_AUTO_TEST_CASE(folder_names_are_snake_case_and_never_leave_scripts)
{
  BOOST_TEST(kjit::script_folder_name("MatmulF16") == "matmul_f16");
  BOOST_TEST(kjit::script_folder_name("my_script") == "my_script");
  BOOST_TEST(kjit::script_folder_name("../../etc/passwd") == "etc_passwd");
  BOOST_TEST(kjit::script_folder_name("") == "script");
  BOOST_TEST(kjit::script_folder_name("..") == "script");
  BOOST_TEST(kjit::script_folder_name("/") == "script");
  BOOST_TEST(kjit::script_folder_name("a\nb\x01" "c\x7f") == "a_b_c");
  const std::string hostile[] = {"../x", "/abs/path", "a/../../b", std::string(300, 'A'), "\xff\xfe", ".hidden",
                                 "name with spaces", std::string("nul\0byte", 8)};
  for (const auto& name : hostile) {
    const std::string folder = kjit::script_folder_name(name);
    BOOST_TEST(!folder.empty());
    BOOST_TEST(folder.size() <= 96u);
    BOOST_TEST(folder.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos, folder);
  }
  // Two long names that share their head still get different folders.
  BOOST_TEST(kjit::script_folder_name(std::string(200, 'a') + "1") != kjit::script_folder_name(std::string(200, 'a') + "2"));
}

BOOST_AUTO_TEST_CASE(a_saved_star_matches_any_value_and_nothing_else_does)
{
  const kjit::Fingerprint here{"0.1.0", "sm_90", "NVIDIA H100", "9.0", "13.0"};
  kjit::Fingerprint saved = here;
  BOOST_TEST(saved.accepts(here));
  saved.gpu = "NVIDIA A100";
  BOOST_TEST(!saved.accepts(here));
  saved.gpu = "*";
  BOOST_TEST(saved.accepts(here));
  saved.compute_capability = "8.0";
  BOOST_TEST(!saved.accepts(here));
  const kjit::Fingerprint anything{"*", "*", "*", "*", "*"};
  BOOST_TEST(anything.accepts(here));
  BOOST_TEST(!here.accepts(anything));  // "*" in the current one is only a value
  const kjit::Fingerprint none = kjit::current_fingerprint(kjit::Arch::parse("sm_80"));
  BOOST_TEST(none.arch == "sm_80");
  BOOST_TEST(!none.cuda_version.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(script, CacheFixture)

BOOST_AUTO_TEST_CASE(schedules_are_the_cartesian_product_in_order)
{
  kjit::Cache cache(config);
  const kjit::BuiltScript built = template_script().build(cache, test_batch());
  const auto& schedules = built.schedules();
  BOOST_TEST_REQUIRE(schedules.size() == 4u);
  const char* kernels[] = {"kern<64,1>", "kern<64,2>", "kern<128,1>", "kern<128,2>"};
  for (std::size_t i = 0; i < 4; ++i) {
    BOOST_TEST(schedules[i].index == i);
    BOOST_TEST(schedules[i].built);
    BOOST_TEST(schedules[i].kernel == kernels[i]);
    BOOST_TEST(schedules[i].program_key.size() == 64u);
    BOOST_TEST(built.binary(i)->lowered_names.at(0).first == kernels[i]);
    BOOST_TEST(!built.binary(i)->cubin.empty());
  }
  BOOST_TEST(built.schedules()[1].values[1].second == "2");
  BOOST_TEST(built.arch().str() == "sm_80");
  BOOST_TEST(built.folder() == "matmul_f16");
}

BOOST_AUTO_TEST_CASE(the_hash_changes_with_source_space_options_pattern_headers_sizes_and_arch)
{
  kjit::Cache cache(config);
  const kjit::Script base = macro_script();
  kjit::BuiltScript first = base.build(cache, test_batch());
  first.set_table({{{1024}, 2, "", {}}}, kjit::current_fingerprint(first.arch()));
  BOOST_TEST(first.table().size() == 1u);
  std::vector<kjit::Script> variants(6, base);
  variants[0].source += "// changed\n";
  variants[1].space[0].values.push_back("256");
  variants[2].options.push_back("-DEXTRA=1");
  variants[3].size_names = {"m"};
  variants[4].arch = kjit::Arch::parse("sm_90");
  variants[5].headers["extra.h"] = "#define X 1\n";
  std::set<std::string> hashes{first.hash()};
  for (const auto& variant : variants) {
    kjit::BuiltScript other = variant.build(cache, test_batch());
    hashes.insert(other.hash());
    BOOST_TEST(other.table().empty());  // the old table is not reused
  }
  BOOST_TEST(hashes.size() == 7u);
  // The pattern too.
  kjit::Script swapped = template_script();
  swapped.name_expression = "kern<{UNROLL},{BLOCK}>";
  BOOST_TEST(swapped.build(cache, test_batch()).hash() != template_script().build(cache, test_batch()).hash());
  // The same script again: the same hash and its table.
  kjit::BuiltScript again = base.build(cache, test_batch());
  BOOST_TEST(again.hash() == first.hash());
  BOOST_TEST(again.table().size() == 1u);
}

BOOST_AUTO_TEST_CASE(bad_spaces_and_patterns_are_script_errors)
{
  kjit::Cache cache(config);
  auto expect_error = [&](const kjit::Script& script, const std::string& fragment) {
    try {
      script.build(cache, test_batch());
      BOOST_ERROR("no error for: " + fragment);
    } catch (const kjit::ScriptError& e) {
      BOOST_TEST(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  kjit::Script s = macro_script();
  s.space.clear();
  expect_error(s, "tuning space is empty");
  s = macro_script();
  s.space[0].name = "1BLOCK";
  expect_error(s, "not a C identifier");
  s = macro_script();
  s.space.push_back(s.space[0]);
  expect_error(s, "given twice");
  s = macro_script();
  s.space[0].values.clear();
  expect_error(s, "has no values");
  s = macro_script();
  s.space[0].values = {"1,2"};
  expect_error(s, "control character or ','");
  s = template_script();
  s.name_expression = "kern<{BLOCK},{WARPS}>";
  expect_error(s, "'WARPS', which is not a tuning parameter");
  s.name_expression = "kern<{BLOCK>";
  expect_error(s, "'{' without '}'");
  s = macro_script();
  s.size_names = {};
  expect_error(s, "no size names");
  // Identical schedules: a value twice, a pattern that leaves out a parameter (or names none).
  s = macro_script();
  s.space[0].values.push_back(s.space[0].values.front());
  expect_error(s, "twice (two identical schedules)");
  s = template_script();
  s.name_expression = "kern<64>";
  expect_error(s, "does not name tuning parameter 'BLOCK'");
  // Too many schedules: counted (10^8 here), never built, before anything is compiled.
  s = macro_script();
  s.space.clear();
  for (int i = 0; i < 8; ++i) {
    kjit::TuningParameter parameter{"P" + std::to_string(i), {}};
    for (int v = 0; v < 10; ++v) {
      parameter.values.push_back(std::to_string(v));
    }
    s.space.push_back(parameter);
  }
  expect_error(s, "more than 4096 schedules");
  // A newline in a field the hashed text keeps on one line: it could write another line (before,
  // one header named "x.h\nheader: <sha of B> y.h" hashed as the two headers x.h and y.h = B).
  s = macro_script();
  s.headers = {{"x.h\nheader: " + std::string(64, '0') + " y.h", "// x\n"}};
  expect_error(s, "newline");
  s = macro_script();
  s.options = {"-DA=1\noption: -DB=2"};
  expect_error(s, "newline");
  s = template_script();
  s.name_expression = "kern<{BLOCK},\n{UNROLL}>";
  expect_error(s, "newline");
  BOOST_TEST(cache.disk_entries() == 0u);  // nothing was compiled
}

BOOST_AUTO_TEST_CASE(when_no_schedule_builds_the_error_lists_them)
{
  kjit::Cache cache(config);
  kjit::Script script = macro_script();
  script.source = "this is not CUDA\n";
  try {
    script.build(cache, test_batch());
    BOOST_ERROR("no error");
  } catch (const kjit::ScriptError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("none of its 3 schedules built") != std::string::npos, what);
    BOOST_TEST(what.find("schedule 2 (BLOCK=128)") != std::string::npos, what);
  }
  // Still recorded, so `kjit script show` can say why.
  const auto scripts = kjit::stored_scripts(cache);
  BOOST_TEST_REQUIRE(scripts.size() == 1u);
  BOOST_TEST(!scripts[0].schedules[0].built);
  BOOST_TEST(!scripts[0].schedules[0].log.empty());
}

BOOST_AUTO_TEST_CASE(a_miss_with_no_way_to_choose_is_an_error_and_one_schedule_needs_none)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  try {
    built.choose({1000});
    BOOST_ERROR("no error");
  } catch (const kjit::ScriptError& e) {
    BOOST_TEST(std::string(e.what()).find("n=1024") != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW(built.choose({1, 2}), kjit::ScriptError);  // one size name
  BOOST_CHECK_THROW(built.binary(3), kjit::ScriptError);
  // A given table takes tuning keys and one key per size name.
  const kjit::Fingerprint here = kjit::current_fingerprint(built.arch());
  BOOST_CHECK_THROW(built.set_table({{{1000}, 0, "", {}}}, here), kjit::ScriptError);
  BOOST_CHECK_THROW(built.set_table({{{1024, 8}, 0, "", {}}}, here), kjit::ScriptError);
  BOOST_CHECK_THROW(built.set_table({{{1024}, 7, "", {}}}, here), kjit::ScriptError);
  // One row per key: which of two would serve is not for sort order to decide.
  BOOST_CHECK_THROW(built.set_table({{{1024}, 0, "", {}}, {{64}, 0, "", {}}, {{1024}, 1, "", {}}}, here),
                    kjit::ScriptError);
  BOOST_TEST(built.table().empty());  // nothing stored by the refused tables
  // A lock wait that is not a number of seconds from 0 to a day: NaN waited for ever.
  for (const double bad : {std::nan(""), -1.0, 1e9, HUGE_VAL}) {
    kjit::TuningOptions tuning;
    tuning.lock_timeout_s = bad;
    BOOST_CHECK_THROW(built.set_tuning(tuning), kjit::ScriptError);
  }
  kjit::Script single = macro_script();
  single.space[0].values = {"64"};
  kjit::BuiltScript one = single.build(cache, test_batch());
  BOOST_TEST(one.choose({12345}) == 0u);
  BOOST_TEST_REQUIRE(one.table().size() == 1u);
  BOOST_TEST(one.table()[0].how == "single");
  BOOST_TEST(one.dispatch({7}) == one.binary(0));
}

BOOST_AUTO_TEST_SUITE_END()
