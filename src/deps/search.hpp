// Where a compile's includes are searched, as nvcc/NVRTC search them: the resolution context.
#pragma once

#include <kjit/program.hpp>

#include <string>
#include <unordered_map>
#include <vector>

namespace kjit::deps {

// How an #include names a file; decides where the search starts.
enum class IncludeKind { quoted, angle, next };

// The folders and files that decide which file an include name means. Built from a Program's
// options; NVRTC itself is given none of the user folders (kjit passes copies of what it hashed).
struct SearchContext {
  std::string source_dir;                 // absolute folder of the main source; empty: none searched
  std::vector<std::string> include_dirs;  // absolute -I folders, in order
  std::vector<std::string> include_spelled;  // the same, as written (NVRTC names files found there by it)
  std::string program_spelled;            // the program's name as given (NVRTC names its files by it)
  std::vector<std::string> pre_includes;  // -include=/--pre-include= names, as written
  std::string cwd;                        // where relative pre-includes are looked for first (as NVRTC does)
  std::vector<std::string> toolkit_dirs;  // the toolkit's include folders, searched last
  std::vector<std::string> nvrtc_options; // the program's options without -I and pre-includes

  // Every field, one per line: part of the manifest's key, so a manifest made with another
  // context is never found here.
  std::string text() const;
};

// The search context of `program`. The main source's folder is its name's folder relative to the
// working directory (what NVRTC itself searches; program_from_file names programs by their path);
// --no-source-include turns it off. Throws OptionError for an -I naming a file or a missing
// folder, an empty -D, an option missing its value; Error for a NUL byte in the source.
SearchContext search_context(const Program& program, const std::vector<std::string>& toolkit_dirs);

// Candidate paths for `name` included from a file in `includer_dir` (empty for a pre-include),
// in nvcc's order: the includer's folder for "…", then the -I folders (for #include_next, those
// after `found_in`, the -I folder the includer was found in, or all of them when it was found
// elsewhere). Toolkit folders are not listed: NVRTC searches them itself.
std::vector<std::string> user_candidates(const SearchContext& context, const std::string& name, IncludeKind kind,
                                         const std::string& includer_dir, const std::string& found_in = {});

// Joins and tidies ("a/./b", "a//b"); ".." is kept (resolved by walk_path, through the file
// system); absolute names are returned as they are.
std::string join_path(const std::string& dir, const std::string& name);

// Where an absolute path leads, followed component by component as the kernel follows it.
struct PathWalk {
  std::string real;     // symlink-free; past the first missing component, joined as text
  bool climbed = false; // ".." met at "/": the kernel stays there, a copy of the tree elsewhere would climb out
  std::vector<std::string> links;  // each symlink met (its path, with no symlink before it)
};
PathWalk walk_path(const std::string& path);
// walk_path(path).real for many paths in few folders: each folder is walked once, then each path's
// last component looked at (an lstat; a symlink there is walked whole). For one pass over paths
// that are not expected to change meanwhile.
class RealPaths {
public:
  std::string real(const std::string& path);

private:
  std::unordered_map<std::string, std::string> m_folders;  // a folder's path → walk_path's .real
};
// Whether a path has a ".." component.
bool has_dot_dot(const std::string& path);
std::string dir_of(const std::string& path);

} // namespace kjit::deps
