// The one table of NVRTC options (src/options): its shape, and the answers the key, the spelling
// and the compile paths take from it.
#include <boost/test/unit_test.hpp>

#include "cache/key.hpp"
#include "options/option_table.hpp"

#include <set>

namespace opt = kjit::options;

BOOST_AUTO_TEST_SUITE(option_table)

BOOST_AUTO_TEST_CASE(each_name_is_one_option_and_the_table_is_sorted)
{
  std::set<std::string_view> names;
  const auto& table = opt::table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    for (const std::string_view name : {table[i].short_name, table[i].long_name}) {
      if (!name.empty()) {
        BOOST_TEST(names.insert(name).second, name);
        BOOST_TEST(opt::find(name) == &table[i], name);
      }
    }
    if (i > 0) {
      BOOST_TEST((table[i - 1].long_name <= table[i].long_name), table[i].long_name);
    }
    // A value taken as it is is a value taken apart; a value joined in the key is a value.
    BOOST_TEST(((table[i].traits & opt::value_verbatim) == 0 || (table[i].traits & opt::value_apart) != 0));
    BOOST_TEST(((table[i].traits & opt::keyed_joined) == 0 || (table[i].traits & opt::value_apart) != 0));
    BOOST_TEST(((table[i].traits & opt::int_value) == 0 || table[i].most > 0));
  }
}

BOOST_AUTO_TEST_CASE(parse_reads_a_value_after_the_name_or_joined_to_I_D_U)
{
  std::string_view value;
  BOOST_TEST(opt::parse("-ftz=true", &value) == opt::find("--ftz"));
  BOOST_TEST(value == "true");
  BOOST_TEST(opt::parse("-Iinc", &value) == opt::find("--include-path"));
  BOOST_TEST(value == "inc");
  BOOST_TEST(opt::parse("-DX=1", &value) == opt::find("-D"));
  BOOST_TEST(value == "X=1");
  BOOST_TEST(opt::parse("-G=1") == nullptr);  // a flag takes no value
  BOOST_TEST(opt::parse("-Gx") == nullptr);
  BOOST_TEST(opt::parse("--no-such-option") == nullptr);
  BOOST_TEST(opt::has("--generate-line-info", opt::line_info));
  BOOST_TEST(opt::has("-G", opt::device_debug));
  BOOST_TEST(!opt::has("-lineinfo", opt::device_debug));
}

BOOST_AUTO_TEST_CASE(the_key_names_an_option_by_its_long_name_as_before)
{
  // The key texts must not change: each pair as key.cpp's own table named it.
  const std::pair<const char*, const char*> keyed[] = {
    {"-ftz=true", "--ftz=true"}, {"-prec-div=false", "--prec-div=false"}, {"-use_fast_math", "--use_fast_math"},
    {"-maxrregcount=32", "--maxrregcount=32"}, {"-Xptxas=-v", "--ptxas-options=-v"},
    {"-include=pre.h", "--pre-include=pre.h"}, {"-rdc=true", "--relocatable-device-code=true"},
    {"-dc", "--device-c"}, {"-w", "--disable-warnings"}, {"-default-device", "--device-as-default-execution-space"},
    {"-Ofc=max", "--Ofast-compile=max"}, {"-dopt=on", "--dopt=on"}, {"-dlto", "--dlink-time-opt"},
    {"-jtd=5", "--jump-table-density=5"},
    // Unchanged: a flag given a value, a value option given alone, names keyed short, others.
    {"-w=1", "-w=1"}, {"-ftz", "-ftz"}, {"-lineinfo", "-lineinfo"}, {"-G", "-G"}, {"-split-compile=4", "-split-compile=4"},
    {"--ftz=true", "--ftz=true"}, {"-Xnvvm=-O1", "-Xnvvm=-O1"}};
  for (const auto& [given, key] : keyed) {
    BOOST_TEST(opt::keyed_name(given) == key, given);
  }
  BOOST_TEST(opt::joined_prefix("-Xptxas") == "--ptxas-options=");
  BOOST_TEST(opt::joined_prefix("--maxrregcount") == "--maxrregcount=");
  BOOST_TEST(opt::joined_prefix("-ftz").empty());
  const std::vector<std::string> normalized =
    kjit::cache::normalize_options({"-Xptxas", "-v", "-maxrregcount", "32", "-ftz=true", "-w", "-Xnvvm", "-w"});
  const std::vector<std::string> expected{"--ptxas-options=-v", "--maxrregcount=32", "--ftz=true", "--disable-warnings",
                                          "-Xnvvm", "-w"};
  BOOST_TEST(normalized == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(options_that_make_the_compiler_read_an_unkeyed_file)
{
  BOOST_TEST(!opt::file_reading({"-Xptxas=--options-file=f.txt"}).empty());
  BOOST_TEST(!opt::file_reading({"--use-pch=x.pch"}).empty());
  BOOST_TEST(opt::file_reading({"-lineinfo", "-DX=1"}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
