// Differential stress test: random small projects changed step by step; after every step the
// cached PTX equals plain NVRTC's on the files as they are now. KJIT_STRESS_STEPS and
// KJIT_STRESS_SEED make the long run (tools/stress-keys).
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "rtc/compiler.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <algorithm>
#include <map>
#include <random>
#include <sys/stat.h>
#include <thread>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("compute_80");
constexpr int k_names = 6;                                      // h0.h … h5.h
const char* const k_folders[] = {"src", "incA", "incB", "incC"};  // src holds the main source

class Project {
public:
  Project(const std::string& root, unsigned seed) : m_root(root), m_random(seed)
  {
    for (const char* folder : k_folders) {
      ::mkdir((root + "/" + folder).c_str(), 0700);
    }
    ::mkdir((root + "/src/sub").c_str(), 0700);  // holds nothing: "sub/../../incC/h1.h" is incC/h1.h
    // incL is incB by another name (a symlinked folder): one file, two paths.
    ::symlink((root + "/incB").c_str(), (root + "/incL").c_str());
    for (int name = 0; name < k_names; ++name) {  // a plain header of every name in incC
      write_text(root + "/incC/h" + std::to_string(name) + ".h",
                 "#undef H" + std::to_string(name) + "_V\n#define H" + std::to_string(name) + "_V " +
                   std::to_string(100 + name) + "\n");
    }
    for (int i = 0; i < 6; ++i) {
      write_header();
    }
    write_source();
  }

  // The main source, spelled one of three ways (a binary naming files names it so).
  std::string source() const { return m_root + (m_dir_spelling == 1 ? "/./src/k.cu" : m_dir_spelling == 2 ? "//src/k.cu" : "/src/k.cu"); }

  std::vector<std::string> options()
  {
    std::vector<std::string> out;
    for (int folder : m_order) {
      const std::string dir = folder == 4 ? std::string("incL") : k_folders[folder];
      out.push_back("-I" + m_root + (m_dir_spelling == 1 ? "/./" + dir : m_dir_spelling == 2 ? "/" + dir + "/" : "/" + dir));
    }
    if (m_has) {
      define(out, "HAS=\"h" + std::to_string(m_name) + ".h\"");
    }
    if (m_flag) {
      define(out, "FLAG=1");
    }
    define(out, "NAME=h" + std::to_string(m_name));
    out.push_back(m_cxx14 ? "-std=c++14" : "-std=c++17");  // C++14 has trigraphs: ??/ is a backslash
    if (m_debug != 0) {
      out.push_back(m_debug == 1 ? "-lineinfo" : "-G");  // the binary names the files: the user's, as plain NVRTC's
    }
    if (m_pre) {
      out.push_back("-include=" + m_root + "/incC/pre.h");
    }
    return out;
  }

  // One random change; returns what it did (for the failure message).
  std::string change()
  {
    switch (pick(17)) {
    case 16:
      m_cxx14 = !m_cxx14;
      return m_cxx14 ? "-std=c++14" : "-std=c++17";
    case 15:  // -I folders and the source spelled another way: the same files, other names
      m_dir_spelling = (m_dir_spelling + 1 + pick(2)) % 3;
      return "spelling " + std::to_string(m_dir_spelling);
    case 14: {  // a file a toolkit header probes for (<cuda/std/version> asks for <version>)
      const std::string path = m_root + "/" + k_folders[1 + pick(3)] + "/version";
      if (exists(path)) {
        std::remove(path.c_str());
      } else {
        write_text(path, "#define VERSION_V " + std::to_string(1 + pick(9)) + "\n");
      }
      return "toggle " + path;
    }
    case 12:
      m_debug = (m_debug + 1 + pick(2)) % 3;
      return m_debug == 0 ? "no -lineinfo/-G" : m_debug == 1 ? "-lineinfo" : "-G";
    case 13:
      m_spelling = pick(4);
      return "-D spelling";
    case 9: {  // a hard link: one file by two names (with #pragma once in it, one file to NVRTC too)
      const std::string path = some_header();
      if (path.empty()) {
        return "link nothing";
      }
      const std::string to = m_root + "/" + k_folders[1 + pick(3)] + "/h" + std::to_string(pick(k_names)) + ".h";
      std::remove(to.c_str());
      ::link(path.c_str(), to.c_str());
      return "hard link " + path + " " + to;
    }
    case 10:  // the symlinked folder in the -I list (or out of it)
      if (m_order.size() == 3) {
        m_order.insert(m_order.begin() + pick(4), 4);
      } else {
        m_order.erase(std::find(m_order.begin(), m_order.end(), 4));
      }
      return "-I incL";
    case 11:
      m_has = !m_has;
      return "-DHAS";
    case 0: return write_header();
    case 1: {  // touch: new stamps, same content
      const std::string path = some_header(true);
      if (!path.empty()) {
        ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
      }
      return "touch " + path;
    }
    case 2: {  // move to another folder
      const std::string path = some_header();
      if (path.empty()) {
        return "move nothing";
      }
      const std::string to = m_root + "/" + k_folders[1 + pick(3)] + "/" + path.substr(path.rfind('/') + 1);
      std::rename(path.c_str(), to.c_str());
      return "move " + path + " " + to;
    }
    case 3: {  // rename to another name
      const std::string path = some_header();
      if (path.empty()) {
        return "rename nothing";
      }
      const std::string to = path.substr(0, path.rfind('/') + 1) + "h" + std::to_string(pick(k_names)) + ".h";
      std::rename(path.c_str(), to.c_str());
      return "rename " + path + " " + to;
    }
    case 4: {
      if (pick(3) == 0) {  // a header that comes and goes: compile errors, then it appears
        const std::string gone = m_root + "/incA/gone.h";
        if (exists(gone)) {
          std::remove(gone.c_str());
        } else {
          write_text(gone, "#define GONE_V 7\n");
        }
        return "toggle " + gone;
      }
      const std::string path = some_header();
      if (!path.empty()) {
        std::remove(path.c_str());
      }
      return "remove " + path;
    }
    case 5:
      std::shuffle(m_order.begin(), m_order.end(), m_random);  // incL (4) too, when listed
      return "reorder -I";
    case 6:
      m_flag = !m_flag;
      m_name = pick(k_names);
      return "defines";
    case 7:
      m_pre = !m_pre;
      write_text(m_root + "/incC/pre.h", "#define PRE_V " + std::to_string(pick(100)) + "\n");
      return "pre-include";
    default: return write_source();
    }
  }

private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(m_random); }

  // -D in each spelling NVRTC takes.
  void define(std::vector<std::string>& out, const std::string& definition) const
  {
    switch (m_spelling) {
    case 1: out.insert(out.end(), {"-D", definition}); break;
    case 2: out.push_back("--define-macro=" + definition); break;
    case 3: out.insert(out.end(), {"--define-macro", definition}); break;
    default: out.push_back("-D" + definition);
    }
  }

  // A header that exists; incC's plain ones (the base every name falls back to) are only ever
  // rewritten or touched, so most steps compile.
  std::string some_header(bool any_folder = false)
  {
    for (int tries = 0; tries < 20; ++tries) {
      const std::string path =
        m_root + "/" + k_folders[pick(any_folder ? 4 : 3)] + "/h" + std::to_string(pick(k_names)) + ".h";
      if (exists(path)) {
        return path;
      }
    }
    return {};
  }

  std::string include_line(int name)
  {
    const std::string file = "h" + std::to_string(name) + ".h";
    const std::string directive = pick(6) == 0 ? "#inc\\\nlude" : "#include";  // a line splice in the word
    return pick(2) == 0 ? directive + " \"" + file + "\"\n" : directive + " <" + file + ">\n";
  }

  std::string write_header()
  {
    const int folder = pick(4);
    const int name = pick(k_names);
    const std::string guard = "G_" + std::string(k_folders[folder]) + "_" + std::to_string(name) + "_" +
                              std::to_string(m_version);
    const bool once = pick(3) == 0;
    // #pragma once as written, across a splice, as _Pragma, or through the source's macro PO.
    const char* const onces[] = {"#pragma once\n", "#pragma on\\\nce\n", "_Pragma(\"once\")\n", "#ifdef PO\nPO\n#endif\n"};
    std::string text = (once ? onces[pick(4)] + ("struct S" + guard + " {};\n") : "#ifndef " + guard + "\n#define " + guard + "\n") +
                       "#undef H" + std::to_string(name) + "_V\n#define H" + std::to_string(name) + "_V " +
                       std::to_string(++m_version) + "\n";
    const int extra = folder == 3 ? 4 : pick(5);  // incC's stay plain
    if (extra == 0) {
      text += include_line(pick(k_names));
    } else if (extra == 1) {
      text += "#if FLAG\n" + include_line(pick(k_names)) + "#endif\n";
    } else if (extra == 2) {
      text += "#include_next <h" + std::to_string(name) + ".h>\n";
    } else if (extra == 3) {
      text += "#include HDR\n";
    }
    text += once ? "" : "#endif\n";
    const std::string path = m_root + "/" + k_folders[folder] + "/h" + std::to_string(name) + ".h";
    write_text(path, text);
    return "write " + path;
  }

  std::string write_source()
  {
    std::string text = "#define STR(x) #x\n#define XSTR(x) STR(x)\n#define HDR XSTR(NAME.h)\n"
                       "#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\n";
    if (pick(2) == 0) {
      text += "#define PO _Pragma(\"once\")\n";  // said by the headers that test for it
    }
    if (pick(4) == 0) {
      text += "#include <cuda/std/version>\n";  // a toolkit header that probes for <version>
    }
    const int count = 1 + pick(3);
    for (int i = 0; i < count; ++i) {
      const int kind = pick(9);
      const std::string name = "h" + std::to_string(pick(k_names)) + ".h";
      text += kind == 0   ? std::string("#include HDR\n")
              : kind == 1 ? "#include_next <" + name + ">\n"  // from the main source
              : kind == 2 ? "#include \"sub/../../incC/" + name + "\"\n"  // through a folder holding nothing
              : kind == 3 ? std::string("#include XSTR(sub/../../incC/NAME.h)\n")  // the same, computed
              : kind == 4 && pick(3) == 0 ? "#include \"" + m_root + "/incC/" + name + "\"\n"  // absolute: not cached
                          : include_line(pick(k_names));
    }
    const int probe = pick(8);  // __has_include through a -D, a macro of the source, a function-like macro
    if (probe == 1) {
      // (not "defined(HAS) && __has_include(HAS)": NVRTC parses the operand even when HAS is undefined)
      text += "#ifdef HAS\n#if __has_include(HAS)\n#define HAS_V 3\n#endif\n#endif\n";
    } else if (probe == 2 || probe == 3) {
      text += "#define OPT \"h" + std::to_string(pick(k_names)) + ".h\"\n#if __has_include(OPT)\n#define HAS_V 5\n#endif\n";
    } else if (probe == 4) {
      text += "#if __has_include(XSTR(NAME.h))\n#define HAS_V 7\n#endif\n";
    }
    if (pick(3) == 0) {
      text += "#if FLAG\n#include \"gone.h\"\n#endif\n";
    }
    text += "extern \"C\" __global__ void k(int* o, const char** file) {\n  int v = 0;\n";
    // The source's name in the binary: as written, across a splice, through a trigraph splice
    // (C++14), pasted, or its size.
    const char* const names[] = {"  *file = __FILE__;\n", "  *file = __FI\\\nLE__;\n", "  *file = __FI?\?/\nLE__;\n",
                                 "  *file = CAT(__FI, LE__);\n", "  v += sizeof(CAT(__FI, LE__));\n"};
    if (pick(3) == 0) {
      text += names[pick(5)];
    }
    for (int i = 0; i < k_names; ++i) {
      const std::string macro = "H" + std::to_string(i) + "_V";
      text += "#ifdef " + macro + "\n  v += " + macro + " * " + std::to_string(i + 1) + ";\n#endif\n";
    }
    text += "#ifdef GONE_V\n  v += GONE_V * 10000;\n#endif\n";
    text += "#ifdef VERSION_V\n  v += VERSION_V * 1000000;\n#endif\n";
    text += "#ifdef HAS_V\n  v += HAS_V * 100000;\n#endif\n";
    text += "#ifdef PRE_V\n  v += PRE_V * 1000;\n#endif\n  *o = v;\n}\n";
    write_text(source(), text);
    return "write the source";
  }

  std::string m_root;
  std::mt19937 m_random;
  std::vector<int> m_order{1, 2, 3};
  bool m_flag = false;
  bool m_pre = false;
  bool m_has = false;
  bool m_cxx14 = false;
  int m_debug = 0;         // 1: -lineinfo, 2: -G
  int m_dir_spelling = 0;  // how -I folders and the source are spelled (source())
  int m_spelling = 0;
  int m_name = 0;
  int m_version = 0;
};

std::string ptx_or_error(const std::function<std::string()>& compile)
{
  try {
    return compile();
  } catch (const kjit::CompileError& e) {
    if (std::getenv("KJIT_STRESS_VERBOSE") != nullptr) {
      BOOST_TEST_MESSAGE(e.log());
    }
    return "error";
  }
}

long from_env(const char* name, long fallback)
{
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtol(value, nullptr, 10) : fallback;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(key_stress, CacheFixture)

BOOST_AUTO_TEST_CASE(cached_equals_uncached_after_every_random_step)
{
  const long steps = from_env("KJIT_STRESS_STEPS", 60);
  const unsigned seed = static_cast<unsigned>(from_env("KJIT_STRESS_SEED", 22));
  Project project(tmp.path(), seed);
  std::unique_ptr<kjit::Cache> cache = std::make_unique<kjit::Cache>(config);
  std::string history;
  long compared = 0;
  long errors = 0;
  long uncached = 0;  // compiles kjit could not make faithful (compiled from the disk, never looked up)
  std::map<std::string, long> reasons;  // why, by the words of the log line
  kjit::set_log_sink([&uncached, &reasons](std::string_view line) {
    if (line.find("not cached") == std::string_view::npos) {
      return;
    }
    ++uncached;
    for (const char* why : {"by another name", "is included as", "is absolute", "climbs above", "__has_include",
                            "may form an absolute name", "-G ", "retry"}) {
      if (line.find(why) != std::string_view::npos) {
        ++reasons[why];
        return;
      }
    }
    ++reasons[std::string(line)];
  });
  for (long step = 0; step < steps; ++step) {
    const int changes = step == 0 ? 0 : 1 + static_cast<int>(step % 3);
    for (int i = 0; i < changes; ++i) {
      history += project.change() + "; ";
    }
    if (step % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(12));  // lets some manifests be recorded
    }
    if (step % 5 == 4) {
      cache = std::make_unique<kjit::Cache>(config);  // a new process's view: disk tier and manifests only
    }
    const std::vector<std::string> options = project.options();
    const std::string want = ptx_or_error([&] {
      kjit::Program program{project.source(), read_text(project.source()), {}, options, {}};
      return kjit::rtc::compile(config, program, k_arch).ptx;
    });
    const std::string got = ptx_or_error([&] {
      kjit::Program program = kjit::program_from_file(project.source());
      program.options = options;
      return cache->get(program, k_arch)->ptx;
    });
    ++compared;
    errors += want == "error" ? 1 : 0;
    if (want == "error" && std::getenv("KJIT_STRESS_VERBOSE") != nullptr) {
      BOOST_TEST_MESSAGE("source of step " << step << ":\n" << read_text(project.source()));
    }
    BOOST_TEST_REQUIRE(got == want, "step " << step << " (seed " << seed << ") after: " << history);
    history.clear();
  }
  kjit::set_log_sink({});
  BOOST_TEST_MESSAGE("stress: " << compared << " steps compared, " << errors << " of them compile errors, " << uncached
                                << " compiled from the disk (not cached)");
  for (const auto& [why, count] : reasons) {
    BOOST_TEST_MESSAGE("  " << count << " x " << why);
  }
  BOOST_TEST(compared == steps);
}

BOOST_AUTO_TEST_SUITE_END()
