// The user headers of one compile: resolved as nvcc resolves them, read once, hashed, stamped.
#pragma once

#include <kjit/program.hpp>
#include <kjit/uncached.hpp>

#include "deps/include_scan.hpp"
#include "deps/search.hpp"
#include "util/hash.hpp"
#include "util/test_hook.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace kjit::deps {

// What one stat() says about a path; equal stamps mean "unchanged" for the manifest. ctime is in
// it so that an edit whose mtime was forged back (same size, same inode) still shows. The device
// is in it because an inode number names a file on one filesystem only: two files on two
// filesystems may have the same number, size and timestamps.
struct FileStamp {
  bool exists = false;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint64_t inode = 0;
  std::uint64_t device = 0;
  friend bool operator==(const FileStamp& a, const FileStamp& b)
  {
    return a.exists == b.exists && a.size == b.size && a.mtime_ns == b.mtime_ns && a.ctime_ns == b.ctime_ns &&
           a.inode == b.inode && a.device == b.device;
  }
};

FileStamp stamp_of(const std::string& path);
// stamp_of() of a folder; not exists when `dir` is not a folder.
FileStamp folder_stamp_of(const std::string& dir);

// The clock the kernel stamps files with (CLOCK_REALTIME_COARSE; a file's stamp is that or, on
// Linux 6.13 and later, a finer and later time).
std::int64_t stamp_clock_ns();

// Whether `stamp` is "too new" to stand for its content after `start_ns` (stamp_clock_ns() when
// the content was read): a change made after that moment within the same timestamp tick would
// keep the stamp. A tick is what the filesystem keeps of a time: read off the value, 2 s for a
// whole second (ext3, ext4 with 128-byte inodes, HFS+: 1 s; FAT: 2 s), else 10 to the power of
// its trailing zero digits (1 ns on ext4, xfs, btrfs, tmpfs; 100 ns on CIFS; 1 µs on some NFS
// servers). Compared with the start to the nanosecond instead, an edit in the second of a compile,
// after its start, would keep the stamp the compile recorded on a filesystem of whole seconds.
bool too_new(const FileStamp& stamp, std::int64_t start_ns);

// A user header (outside the toolkit) that the compile may read.
struct DiskHeader {
  std::string name;  // the include name it was first found under (for people; the path identifies it)
  std::string path;  // absolute, normalized
  util::Sha256 hash;
  FileStamp stamp;
  std::string content;  // empty when the header came from a manifest, or shed
  // The name the binary gives it (Resolver::spelled()) when the compile's binary may name files
  // (Resolver::names_files()); empty otherwise: the key then leaves every spelling out (portable).
  std::string spelled;
  // Let go by Resolver::shed_texts() while NVRTC compiled (its blob was encoded): `content` is
  // empty, and `shed_size` is the size it had until Resolver::restore_texts() reads it again.
  bool shed = false;
  std::uint64_t shed_size = 0;
  std::uint64_t size() const { return shed ? shed_size : content.size(); }
};

// Whether `options` ask for debug information (-G, --device-debug).
bool device_debug(const std::vector<std::string>& options);
// Whether a binary of `options` names files whatever its text says: -G, -lineinfo and their long forms.
bool options_name_files(const std::vector<std::string>& options);
// `text` as the preprocessor's first phases leave it, for the questions below: trigraphs replaced
// and backslash-newline splices (also before a CR LF) joined. `storage` holds it when the text has
// a splice or "??" (most have neither: `text` itself is returned). Trigraphs are replaced whatever
// the standard (C++14 and before have them): a "??/" that is no trigraph only makes an answer
// more careful. Issue 38: `sizeof(__FI\⏎LE__)`, `__TI\⏎ME__`, `#pragma on\⏎ce` got past
// questions asked of the raw text.
const std::string& as_preprocessed(const std::string& text, std::string& storage);
// The words kjit looks for that a token paste may form (issue 38: `#define CAT(a,b) a##b` and
// `CAT(__FI,LE__)` is __FILE__ to the preprocessor), over every text of a program: the pieces and
// the `##` may be in different files. A piece is a token of 4 characters or more that begins or
// ends one of the words and is none of them (__has_include begins __has_include_next), nor
// "include", "next" or "FILE", which real code uses on its own. A word is formed when some text
// pastes and pieces of it leave nothing a piece could show: 3 characters or fewer, or one of those
// three (`__has_ ## include`), or a first and a last piece (`__FI ## LE__`). None of the pieces is
// in the toolkit's 1 982 headers nor in CUTLASS's 825; shorter tokens are (`__b`, `__h` in
// libcu++, `__F` in CUTLASS's half.h, all with `##` elsewhere), so a word pasted from pieces of 3
// characters or fewer at both ends (`__F ## IL ## E__`) is not seen.
class PastedWords {
public:
  // Reads `text` (as_preprocessed()) for `##` and pieces.
  void read(const std::string& text);
  // The words some text's `##` may form from the pieces read: empty while no text pastes.
  std::set<std::string> formed() const;
  // Whether a text read has `##`.
  bool pastes() const { return m_pastes; }
  // Whether a text read has a piece of a word (which another text's `##` may join).
  bool has_pieces() const { return !m_firsts.empty() || !m_lasts.empty(); }

private:
  bool m_pastes = false;
  std::map<std::string, std::set<std::size_t>> m_firsts;  // word → sizes of its first pieces read
  std::map<std::string, std::set<std::size_t>> m_lasts;   // word → sizes of its last pieces read
};

// Whether NVRTC must see a file of this content by two names as one file (it may say #pragma
// once, which goes by inode): its hard links are hard links between the copies too.
bool must_be_one_copy(const std::string& content);
// Whether `text` may define a macro that says `#pragma once` (`#define PO _Pragma("once")`): a
// header saying PO holds no "once" of its own (issue 38). Then every file of the program must be
// one copy (Resolver::once_by_macro()).
bool text_may_define_once(const std::string& text);
// Whether `text` may put a file's name into the binary: __FILE__, __builtin_FILE,
// source_location, __BASE_FILE__, or the word assert (which uses __FILE__; not static_assert).
bool text_names_files(const std::string& text);
// Whether `text` names the program itself (__BASE_FILE__): the name NVRTC was given, which #line
// does not change (so the program NVRTC gets must be named as the user's: the -G stub).
bool text_names_program(const std::string& text);
// options_name_files(), or text_names_files() of the source, an in-memory header, a name
// expression or an option (a -D value: -DF=__FILE__).
bool program_names_files(const Program& program);
// Whether `word` occurs in `text` as a whole identifier (not inside a longer name).
bool has_word(const std::string& text, std::string_view word);
// Whether `text` may put the time of its compile into the binary: __TIME__, __TIMESTAMP__ or
// __DATE__ as whole identifiers. Such a program is compiled each time, never cached (as ccache does).
bool text_uses_time(const std::string& text);
// text_uses_time() of the source, an in-memory header, a name expression or an option (a -D value).
bool program_uses_time(const Program& program);
// Whether `test` holds for the program's source, one of its in-memory headers or one of its name
// expressions (NVRTC compiles them with the program).
bool any_program_text(const Program& program, bool (*test)(const std::string&));

// Whether `binary` (PTX, a cubin) holds `path`: as raw bytes, or as PTX writes a string's bytes
// ("47, 116, 109, 112": a $str initializer). What tells that a binary names a file through a
// macro kjit reads nothing of (a toolkit header's __FILE__ in _CCCL_ASSERT).
bool binary_holds(const std::string& binary, const std::string& path);
// Whether `binary` names a file below the folder `dir`: "<dir>/<name>" where that is a file on disk,
// as raw bytes or in a PTX string's byte list. A string that only holds the folder's path ("<dir>/
// holds the headers") names none.
bool binary_names_file_in(const std::string& binary, const std::string& dir);

// A folder where an include was looked for: a file appearing there could change what is found.
// When its stamp changes, the change matters only if one of the `absent` names appeared there,
// unless the folder is `whole` (passed whole, searched for names only NVRTC forms, or an entry
// whose own stamp is watched): then any change does. A compile writing its outputs next to its
// source (the CLI's default) changes that folder after every lookup, which then re-resolved every
// header (0.35 s for a vendored CCCL): the names are what tell that apart.
// Names (one step) looked for in a folder and not found, each followed by '\n'. One text, not a
// set: a vendored CCCL's manifest holds ≈ 100 folders of hundreds of names each, and a warm hit
// decodes it (a set per folder made that 0.18 s); the names are read only after a change. Shared
// by the copies and by the entries that list the same names (a manifest's "absent-same"): the
// 8 entries of a vendored CCCL's manifest held 8 copies of its 2.2 MB, 18 of its 25 MB decoded,
// made and copied at each decode and each copy of a manifest.
class AbsentNames {
public:
  AbsentNames() = default;
  explicit AbsentNames(std::string text);
  std::string_view text() const { return m_text ? std::string_view(*m_text) : std::string_view(); }
  operator std::string_view() const { return text(); }
  bool empty() const { return text().empty(); }
  std::size_t size() const { return text().size(); }
  // Adds `name` and its '\n' (to a copy of its own when the text is shared).
  void append(std::string_view name);
  // The same text (first: the same one, shared).
  friend bool operator==(const AbsentNames& a, const AbsentNames& b)
  {
    return a.m_text == b.m_text || a.text() == b.text();
  }

private:
  std::shared_ptr<std::string> m_text;  // never changed while shared; empty: no names
};

struct ProbedDir {
  std::string path;
  FileStamp stamp;
  bool whole = false;
  AbsentNames absent;  // looked for there and not found
  // Its stamp was too new at the resolution's start: a manifest records unsettled() instead (or
  // nothing, when the folder is watched whole). The resolution keeps the real one, to which a
  // speculation compares the folder after its compile.
  bool too_new = false;
};

// Whether `name` is one of `dir`'s absent names.
bool listed_absent(const ProbedDir& dir, std::string_view name);

// Whether `dir` changed in a way that can change what a compile finds (see ProbedDir); `now`
// is its stamp now.
bool folder_changed(const ProbedDir& dir, const FileStamp& now);

// The stamp a manifest records for a folder whose stamp was too new to stand for it (ProbedDir::
// too_new): no times (a ctime of 0, which the kernel never gives), so it never equals the folder's
// and every check of a folder watched for names asks them again (an lstat each). A folder watched
// whole can't be recorded so.
FileStamp unsettled(FileStamp stamp);

// What a closed resolution knows beyond its files, so that another compile of the same program
// (another arch, other name expressions) can start from it instead of predicting again
// (Resolver's seeded constructor; docs/includes.md, "A closure used again").
struct ClosureState {
  util::Sha256 seed_key{};  // seed_key() of the program it was closed for; all zero: none
  std::set<std::string> computed_dirs;   // Resolver::computed_dirs()
  std::set<std::string> climbing_names;  // the names of Resolver::names() with a ".." in them
  bool once_by_macro = false;            // Resolver::once_by_macro()
  bool names_files = false;              // Resolver::names_files()
  std::string two_names;                 // Resolver::two_names()
  // What another source may reach through the closure's headers without saying it itself (for
  // fits_closure()): the macros whose definitions say `include` (a __has_include wrapper such as
  // CCCL's _CCCL_HAS_INCLUDE, or an alias), and whether a header pastes (`##`: a source's piece
  // `__FI` and a header's CAT() form __FILE__).
  std::set<std::string> include_macros;
  bool pastes = false;
};

struct Resolution {
  std::vector<DiskHeader> headers;  // unique by path, in discovery order
  std::vector<ProbedDir> dirs;      // unique by path
  bool recordable = true;           // false: a header was "too new" or kept changing; no manifest
  std::optional<ClosureState> closure;  // set when the resolution may seed another compile
};

// How many folders resolvers listed (readdir) in this process: a test checks that a miss of a
// program that looks nothing up lists none.
std::uint64_t folder_listings() noexcept;
// How many passes close() made in this process (a close() of a resolution closed and unchanged
// since makes none): for a test.
std::uint64_t closure_passes() noexcept;

// Tests: how many header texts this process let go (Resolver::shed_texts()).
KJIT_TEST_HOOK std::uint64_t texts_shed() noexcept;
// Test hook: called after a preparing thread let its texts go, while NVRTC compiles (cache.cpp).
KJIT_TEST_HOOK void set_shed_hook(std::function<void()> hook);
void after_shed();

// Test hook: called after a header is read and before its second stamp (to rewrite it there).
KJIT_TEST_HOOK void set_read_hook(std::function<void(const std::string& path)> hook);
// Test hook: may change every stamp taken (stamp_of, the folders watched) as a filesystem other
// than the test's would give it (timestamps in whole seconds, an inode number met again on another
// filesystem); empty for none.
KJIT_TEST_HOOK void set_stamp_hook(std::function<void(const std::string& path, FileStamp& stamp)> hook);

// Builds a Resolution. Every header is read with a stamp before and after the read (read again
// when they differ); one modified within the tick of the start of the resolution, or after it, is too_new() and makes
// the result not recordable (ccache's rule: a later edit within the same timestamp tick would go
// unseen). Not thread-safe; one per compile.
class Resolver {
public:
  Resolver(const Program& program, const SearchContext& context);
  // A resolver that starts from `seed`: a resolution recorded closed for this program (its
  // closure's seed_key is seed_key() of `program`), found unchanged on disk, each header's content
  // read again and matching its hash. Nothing is predicted; close() adds nothing. Where the compile
  // needs more (NVRTC asks for a name), unseed() starts over as the other constructor does.
  Resolver(const Program& program, const SearchContext& context, Resolution seed);
  bool seeded() const { return m_seeded; }
  // Forgets the seed: the prediction the other constructor and predict() make.
  void unseed();
  // This resolution's ClosureState under `seed_key` (after the compile: what a later compile of
  // the same program may start from).
  ClosureState closure_state(const util::Sha256& seed_key) const;

  // Follows every include the scanner sees in the source, the pre-includes and each header
  // added (the prediction). Never throws for a missing file: the compiler's answer decides.
  void predict();
  // Resolves `name` included from `includer` (a header path, the main source's path, or empty
  // for a pre-include) as nvcc would and adds the first existing candidate not yet added.
  // Returns the path added, or empty when there is nothing new to add. Not for a seeded resolver
  // (unseed() first: its private folder holds the seed's files).
  std::string add_next(const std::string& name, IncludeKind kind, const std::string& includer);
  // Adds the header at `path` (and predicts its includes); false if it is not a regular file.
  // `includer` and `kind`: the directive it answers (for spelled()); none for a closure's file.
  bool add(const std::string& name, const std::string& path, const std::string& includer = {},
           IncludeKind kind = IncludeKind::angle);
  // Makes the prediction a faithful sub-replica of the disk: adds every existing file that an
  // include (or __has_include) of a known name could reach in any folder the compile searches,
  // so that NVRTC, searching only what kjit passes, answers every search as it would on disk.
  // Probes through macros are expanded with every value the scanned files give them.
  void close();
  // Frees what only speeds up noting absent names (a vendored CCCL's ≈ 100 000 of them: 22 ms to
  // free): for a resolution closed on a thread that has time, before the last reference goes on
  // the caller's path. What it notes later still goes in once, found by its folder's list.
  void shed_absent_index();
  // Lets go of the text of each header `encoded` holds (its blob made: the entry stores that, and
  // the mirror reads it from the store), for the rest of the compile: a CUTLASS program's 19 MB,
  // otherwise held at NVRTC's peak. Only for a closed, faithful resolution whose
  // headers_name_program() was answered (a compile that takes NVRTC's binary from the disk reads no
  // text again); restore_texts() before anything else reads them. `taken`, when given, gets each
  // text let go (moved, not freed: the mirror's early links take them, no copy made).
  void shed_texts(const std::function<bool(const util::Sha256&)>& encoded,
                  const std::function<void(const DiskHeader&, std::string&&)>& taken = {});
  // Reads each shed text again; false (some still shed) when one is no longer what was hashed.
  bool restore_texts();
  // Why the private folder cannot answer as the disk would (a __has_include operand no value
  // of which is a header name, a name climbing above "/"), or why the binary must not be cached
  // (the source, an in-memory header or a header added uses the time: text_uses_time()); empty
  // otherwise. Such a program is compiled from the disk, like `--no-cache`, and never stored.
  const std::string& unfaithful() const { return m_unfaithful; }
  // Why, when unfaithful() says something (the first reason found).
  UncachedReason unfaithful_reason() const { return m_unfaithful_reason; }
  // The binary of a compile from the private folder names a copy there (binary_holds()):
  // something kjit did not read (a toolkit macro's __FILE__) names a file, so the copies had no
  // #line and the key has no names. unfaithful() says so: compiled from the disk, never cached.
  void copies_named();
  // The compile is made from the files on disk for `reason` (a copy can't carry a file's names):
  // unfaithful() says so, never cached (NVRTC reads more than the key holds: computed includes).
  void compiled_from_disk(UncachedReason why, const std::string& reason);
  // Notes a name NVRTC asked for (for the checks of unfaithful()).
  void check_name(const std::string& dir, const std::string& name);
  // check_name() for a name an #include (or NVRTC) asks for: an absolute one is unfaithful too.
  void check_include_name(const std::string& dir, const std::string& name);

  // Every include name seen (by the scanner, in a probe's values, or asked for by NVRTC).
  const std::set<std::string>& names() const { return m_names; }
  // The folders a computed #include (one only NVRTC expands) is searched from first: its
  // includers' folders (the -I folders come after them).
  const std::set<std::string>& computed_dirs() const { return m_computed_dirs; }

  const DiskHeader* find(const std::string& path) const;
  // The name NVRTC, compiling on disk, gives the header at `path` (in __FILE__, assert, -lineinfo,
  // messages): the folder of its includer's name (or the -I folder as written) and the include
  // name, joined as written ("sub/./x.h", "inc//../y.h"). `path` itself when not known.
  const std::string& spelled(const std::string& path) const;
  // A header that directives name two ways (spelled() differs), or one file added by two names
  // that must be one copy (a symlinked folder, or must_be_one_copy()): a copy carries only one
  // name, so a binary that names files can't be made from copies. Empty when none.
  const std::string& two_names() const { return m_two_names; }
  // Whether the binary may name files: options_name_files(), or text_names_files() of the source
  // or of a header added. From then on every header carries its spelled() name.
  bool names_files() const { return m_names_files; }
  // Whether a header added names the program (text_names_program(): __BASE_FILE__). Each header
  // is read for it once: a call after more were added reads only those (a speculating miss asks
  // on its preparing thread, and the compile's own question, after NVRTC, reads nothing).
  bool headers_name_program();
  // Whether a text of the program or an option may define `#pragma once` as a macro
  // (text_may_define_once()): then any header may say it, and must_be_one_copy() holds for all.
  bool once_by_macro() const { return m_once_by_macro; }
  // True while every header added still has the stamp it was read with (a stat each). Only
  // reads: lookups of one provisional key may share a prediction (Cache::Impl::predicted_key()).
  bool unchanged() const;
  // unchanged(), remembering when it began if it held (for unchanged_since()): by the one thread
  // that owns this resolution (the compile's).
  bool check_unchanged();
  // unchanged(), or true at once where a check_unchanged() that began at `since`
  // (steady_now_ns()) or later held and nothing was added since: a speculation's prediction is
  // checked once after NVRTC returned, not again by the adoption (a stat per header: 3.5 ms for a
  // vendored CCCL).
  bool unchanged_since(std::int64_t since) const;
  static std::int64_t steady_now_ns();
  // Whether a file appearing at `path` (absolute, where a search found nothing) is one this
  // resolution watches for: its folder (or the deepest one of it that exists) is watched whole or
  // with that name among its absent ones. What tells that a name NVRTC looked for and did not find
  // is one the key answers for (cache/speculation.cpp).
  bool absence_watched(const std::string& path) const;
  // Watches for a file appearing at `path` (absolute: a name NVRTC looked for in vain that the
  // prediction did not see): absence_watched() holds after.
  void watch_absence(const std::string& path) { probe(path); }
  const std::string& main_path() const { return m_main_path; }
  // stamp_clock_ns() before the first header was read: a header whose stamp is not too_new() by
  // it shows every later change in its stamp.
  std::int64_t start_ns() const { return m_start_ns; }
  const SearchContext& context() const { return m_context; }
  Resolution& result() { return m_result; }
  const Resolution& result() const { return m_result; }
  // The resolved path of each pre-include (empty where no user file was found, or an in-memory
  // header has its name).
  const std::vector<std::string>& pre_include_paths() const { return m_pre_paths; }

private:
  // Where NVRTC finds the main source: its name in the source folder (or the working directory).
  static std::string main_path_of(const Program& program, const SearchContext& context);
  void follow(const std::string& text, const std::string& includer);
  // Makes the program unfaithful when it has a computed #include and a text that may form an
  // absolute name for it (may_form_absolute_name): NVRTC would read that file on disk.
  void check_formed_names();
  // Makes the program unfaithful when a macro of a text (or -D) stands for __has_include itself
  // rather than calling it (an alias): the probes it makes are not followed.
  void check_probe_aliases();
  // The program uses the time (text_uses_time()): unfaithful() says so, and nothing is recordable.
  void time_used();
  // From now on every header carries its spelled() name (names_files()).
  void name_files();
  // Reads `text` for pasted words (PastedWords) and acts on each newly formed one as on the word
  // itself: the time refuses, __FILE__ names files, the others refuse (a probe, the program's name
  // or its include depth that kjit's copies or stub can't keep).
  void read_pastes(const std::string& text);
  // Makes the program unfaithful for `reason` (the first reason found stays).
  void refuse(UncachedReason why, std::string reason);
  // Watches the folder `candidate` is looked for in (its deepest existing one) and, when the
  // name is not there, that name. `whole`: any change of that folder matters (ProbedDir::whole).
  void probe(const std::string& candidate, bool whole = false);
  // The ProbedDir of `path`, made with `stamp` the first time (too_new() makes the result not
  // recordable); whole when `whole` or the folder is one of m_whole_dirs.
  ProbedDir& watched(const std::string& path, const FileStamp& stamp, bool whole);
  // From now on every header must be one copy (once_by_macro()): files already added by two
  // names are checked again for two_names().
  void once_through_macros();
  // Sets two_names() when `path` is the file at `first` by a name spelled otherwise, and NVRTC
  // must see one file (one inode with #pragma once, or one real path).
  void check_one_file(const std::string& first, const std::string& path);
  // Adds `name` to the absent names of `dir` (once).
  void note_absent(ProbedDir& dir, const std::string& name);
  // Watches `dir` whole from now on (a folder searched for names only NVRTC forms).
  void watch_whole(const std::string& dir);
  // Makes `dir` watched whole: any change matters (not recordable when its stamp is too new).
  void mark_whole(ProbedDir& dir);
  // Watches an entry that is there but was not taken (a dangling link's target, an unreadable file).
  void watch_entry(const std::string& entry);
  // Whether `path` is a regular file, answered from one readdir() per folder (then one stat()).
  bool listed_file(const std::string& path);
  const std::set<std::string>* listing(const std::string& dir);
  // The stamp of `dir` when this resolution first asked, or null when it is not a folder.
  const FileStamp* folder_stamp(const std::string& dir);
  // Adds the files of the -I folder `dir` named like a file at the top of a toolkit folder.
  void add_toolkit_namesakes(const std::string& dir);
  // Adds every file below dir/relative (and watches every folder of it).
  void add_tree(const std::string& dir, const std::string& relative);
  // spelled() of `candidate`, found for `name` included (as `kind`) from `includer` (may be empty).
  std::string spell(const std::string& candidate, const std::string& name, IncludeKind kind,
                    const std::string& includer) const;

  Program m_program;  // a copy: a prediction made in prepare() is used again by the compile
  SearchContext m_context;
  std::string m_main_path;
  std::int64_t m_start_ns = 0;
  Resolution m_result;
  std::map<std::string, std::size_t> m_index;       // path → m_result.headers index
  std::map<std::string, std::string> m_found_in;    // path → -I folder it was found through
  std::map<std::string, std::string> m_spelled;     // path → spelled()
  std::set<std::string> m_names;                    // include names seen
  std::map<std::string, std::size_t> m_probed;  // paths watched: index in m_result.dirs
  std::set<std::string> m_whole_dirs;           // folders watched whole (ProbedDir::whole)
  // The names noted absent in each folder, by its place in m_result.dirs (hashed: a vendored CCCL
  // notes ≈ 100 000 pairs, whose folders share long prefixes).
  std::vector<std::unordered_set<std::string>> m_absent;
  bool m_texts_shed = false;   // shed_texts(): some DiskHeader::shed
  bool m_absent_shed = false;  // shed_absent_index(): ProbedDir::absent is searched instead
  std::size_t m_read_for_program = 0;  // headers headers_name_program() has read
  bool m_headers_name_program = false;
  PastedWords m_pasted;
  // How many __has_include wrappers the scan knew when every text that names one was last scanned
  // (close()): a wrapper learned after a text that calls it was scanned has that text scanned again.
  std::size_t m_wrappers_followed = 0;
  std::set<std::string> m_pasted_seen;  // formed words acted on
  std::set<std::string> m_watched_links;  // links whose targets are watched (watch_entry)
  std::vector<std::string> m_pending;               // headers added, not scanned yet
  std::vector<std::string> m_pre_paths;
  std::map<std::string, std::optional<std::set<std::string>>> m_listings;  // folder → its names
  std::map<std::string, FileStamp> m_folders;       // folder_stamp()'s answers
  ScanMacros m_scan;                                // macros and __has_include wrappers of every file scanned
  std::set<std::string> m_operands;                 // __has_include operands that are macros
  std::map<std::string, std::string> m_defines;     // -D NAME=VALUE
  std::string m_unfaithful;
  UncachedReason m_unfaithful_reason = UncachedReason::formed_name;
  std::string m_two_names;  // see two_names()
  bool m_names_files = false;  // see names_files()
  bool m_once_by_macro = false;  // see once_by_macro()
  bool m_formed_source = false;      // check_formed_names() has read the source, its headers and -D
  std::size_t m_formed_checked = 0;  // headers check_formed_names() has read
  std::map<std::string, bool> m_formed_asked;  // the names it asked OpenEnds about, and the answers
  std::map<std::string, std::string> m_real_files;  // inode, size, mtime, ctime → first path added
  std::set<std::string> m_closed_dirs;   // folders and names close() has tried together
  std::set<std::string> m_closed_names;
  // Bumped by each public call that may add headers or names (add, add_next, predict; a refusal
  // adds none, and close() does nothing once refused); close() returns at once while it equals
  // m_closed_at, the value its last finished pass left: a speculation's prediction, closed on its preparing thread, is not closed
  // again on the caller's path after NVRTC (a pass over a vendored CCCL's names: 5 ms).
  std::uint64_t m_changes = 0;
  std::optional<std::uint64_t> m_closed_at;
  // m_changes and steady_now_ns() at the start of the last check_unchanged() that held.
  std::optional<std::pair<std::uint64_t, std::int64_t>> m_held;
  std::set<std::string> m_namesake_dirs;  // includers' folders whose toolkit namesakes are passed
  std::set<std::string> m_computed_dirs;  // see computed_dirs()
  std::set<std::string> m_memory_includers;  // where the in-memory headers are (cwd/name)
  bool m_seeded = false;  // see seeded()
};

// The key under which a closed resolution of `program` may seed another compile: the program
// (its name, source, in-memory headers and options), the resolution context and the toolchain's
// include folders, but not the arch (kjit resolves the same headers for every arch) nor name
// expressions that can change nothing a resolution depends on. All zero when `program` can't
// seed one: name expressions that may (__FILE__, ##, include, …), -G or -lineinfo, a pre-include,
// in-memory headers, or a text that names the program (__BASE_FILE__).
// `toolchain` names the toolkit's headers (their fingerprint): which user files are named like a
// toolkit header's, and so passed, depends on them.
util::Sha256 seed_key(const Program& program, const SearchContext& context, const std::string& toolchain);

// A closure may also seed the first compile of *another* program of the same library: another
// source in the same folder, with the same options, includes and folders (docs/includes.md, "A
// closure used again"). library_key() names what those programs share (seed_key() without the
// program's name and source; the name's folder stays: a binary naming files names headers by it);
// all zero where seed_key() is.
util::Sha256 library_key(const Program& program, const SearchContext& context, const std::string& toolchain);
// The #include directives of `program`'s source as `"name"` or `<name>`, or nullopt when one is not
// a plain one (computed, through a macro, #include_next, a __has_include probe).
std::optional<std::set<std::string>> source_directives(const Program& program);
// Whether a closure recorded for a program whose source had `directives` (source_directives())
// serves `program` as well: its source defines no macro, includes only some of those same names
// the same way (so every header is reached by the names it was), and holds none of the words that
// change a resolution or its copies (a paste, a trigraph, __has_include, #include_next,
// __INCLUDE_LEVEL__, the time) unless the closure already has what they need (names_files,
// once_by_macro); nor, where the closure has computed includes, anything that may form an absolute
// name with every name it holds taken as empty.
bool fits_closure(const Program& program, const ClosureState& closure, const std::set<std::string>& directives);

} // namespace kjit::deps

namespace kjit::deps {
// The kind of the #include at `line` (1-based) of `text`; a computed one counts as quoted (its
// search is the widest: a wrong first guess only adds a file NVRTC then does not take).
IncludeKind directive_kind(const std::string& text, int line);
} // namespace kjit::deps
