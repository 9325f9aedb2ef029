// What a program's text and options say before any header is resolved: whether they use the
// time, name files in the binary, or make the compiler read a file kjit does not see.
#include "deps/resolver.hpp"

#include "deps/lex.hpp"
#include "options/option_table.hpp"
#include "util/file.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <bitset>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>
#include <string_view>

namespace kjit::deps {

bool any_program_text(const Program& program, bool (*test)(const std::string&))
{
  if (test(program.source)) {
    return true;
  }
  for (const auto& [name, content] : program.headers) {
    if (test(content)) {
      return true;
    }
  }
  // NVRTC compiles each name expression with the program (a file of its own): __TIME__ or
  // __has_include there count as in the source.
  for (const auto& expression : program.name_expressions) {
    if (test(expression)) {
      return true;
    }
  }
  return false;
}

bool device_debug(const std::vector<std::string>& options)
{
  return options::any(options, options::device_debug);
}

bool options_name_files(const std::vector<std::string>& options)
{
  return options::any(options, options::line_info) || device_debug(options);
}

const std::string& as_preprocessed(const std::string& text, std::string& storage)
{
  const bool trigraphs = util::find_text(text, "??") != std::string::npos;
  if (!trigraphs && util::find_text(text, "\\\n") == std::string::npos &&
      util::find_text(text, "\\\r\n") == std::string::npos) {
    return text;
  }
  const std::string replaced_storage = trigraphs ? trigraphs_replaced(text) : std::string();
  const std::string& replaced = trigraphs ? replaced_storage : text;
  storage.clear();
  storage.reserve(replaced.size());
  // The spans between splices, each copied whole (a vendored CCCL is 17 MB of text).
  std::size_t from = 0;
  for (std::size_t at = replaced.find('\\'); at != std::string::npos; at = replaced.find('\\', at + 1)) {
    const std::size_t after = replaced.compare(at + 1, 1, "\n") == 0     ? at + 2
                              : replaced.compare(at + 1, 2, "\r\n") == 0 ? at + 3
                                                                         : 0;
    if (after != 0) {
      storage.append(replaced, from, at - from);
      from = after;
      at = after - 1;
    }
  }
  storage.append(replaced, from);
  return storage;
}

bool text_names_files(const std::string& raw)
{
  std::string storage;
  const std::string& text = as_preprocessed(raw, storage);
  for (const char* word : {"__FILE__", "__builtin_FILE", "source_location"}) {
    if (util::find_text(text, word) != std::string::npos) {
      return true;
    }
  }
  // "assert" as a word: not static_assert (it names no file), nor a name that contains it.
  return has_word(text, "assert") || text_names_program(text);
}

bool has_word(const std::string& text, std::string_view word)
{
  const auto word_char = identifier_char;
  for (std::size_t at = util::find_text(text, word); at != std::string::npos; at = util::find_text(text, word, at + 1)) {
    if ((at == 0 || !word_char(text[at - 1])) && (at + word.size() == text.size() || !word_char(text[at + word.size()]))) {
      return true;
    }
  }
  return false;
}

bool text_uses_time(const std::string& raw)
{
  std::string storage;
  const std::string& text = as_preprocessed(raw, storage);
  return has_word(text, "__TIME__") || has_word(text, "__TIMESTAMP__") || has_word(text, "__DATE__");
}

bool program_uses_time(const Program& program)
{
  // A -D value is program text too (-DNOW=__TIME__, in any spelling): every option is looked at.
  for (const auto& option : program.options) {
    if (text_uses_time(option)) {
      return true;
    }
  }
  return any_program_text(program, text_uses_time);
}

bool text_names_program(const std::string& raw)
{
  std::string storage;
  return util::find_text(as_preprocessed(raw, storage), "__BASE_FILE__") != std::string::npos;
}

bool binary_holds(const std::string& binary, const std::string& path)
{
  if (path.empty()) {
    return false;
  }
  if (binary.find(path) != std::string::npos) {
    return true;
  }
  std::string bytes;  // "47, 116, 109, 112"
  for (const char ch : path) {
    bytes += (bytes.empty() ? "" : ", ") + std::to_string(static_cast<unsigned char>(ch));
  }
  return binary.find(bytes) != std::string::npos;
}

namespace {

// Whether `bytes` holds "<dir>/<name>" (a name of path characters) where that is a file.
bool names_file_in(std::string_view bytes, const std::string& dir)
{
  const std::string prefix = dir + "/";
  for (std::size_t at = bytes.find(prefix); at != std::string_view::npos; at = bytes.find(prefix, at + 1)) {
    std::size_t end = at + prefix.size();
    while (end < bytes.size() && static_cast<unsigned char>(bytes[end]) > ' ' && bytes[end] != '"' && bytes[end] != 0x7f) {
      ++end;
    }
    if (end > at + prefix.size() && util::is_regular_file(std::string(bytes.substr(at, end - at)))) {
      return true;
    }
  }
  return false;
}

} // namespace

bool binary_names_file_in(const std::string& binary, const std::string& dir)
{
  if (dir.empty() || !binary_holds(binary, dir)) {
    return false;  // neither as bytes nor as a byte list: the common case, one search
  }
  if (names_file_in(binary, dir)) {
    return true;
  }
  // PTX strings as byte lists ("$str[31] = {47, 116, …}"): each decoded, then looked at.
  for (std::size_t open = binary.find("= {"); open != std::string::npos; open = binary.find("= {", open + 3)) {
    const std::size_t close = binary.find('}', open);
    if (close == std::string::npos) {
      break;
    }
    std::string bytes;
    for (std::size_t at = open + 3; at < close;) {
      char* end = nullptr;
      const long value = std::strtol(binary.c_str() + at, &end, 10);
      if (end == binary.c_str() + at) {
        ++at;
        continue;
      }
      bytes += static_cast<char>(value);
      at = static_cast<std::size_t>(end - binary.c_str());
    }
    if (names_file_in(bytes, dir)) {
      return true;
    }
  }
  return false;
}

bool program_names_files(const Program& program)
{
  // A -D value is program text too: -DF=__FILE__ names the file where F is used.
  for (const auto& option : program.options) {
    if (text_names_files(option)) {
      return true;
    }
  }
  return options_name_files(program.options) || any_program_text(program, text_names_files);
}

namespace {

const std::vector<std::string>& looked_for_words()
{
  static const std::vector<std::string> words{"__FILE__",     "__builtin_FILE", "__BASE_FILE__",     "__TIME__",
                                              "__TIMESTAMP__", "__DATE__",       "__INCLUDE_LEVEL__", "__has_include",
                                              "__has_include_next"};
  return words;
}

// The words real code uses on their own everywhere (the directive, a common name, stdio's type):
// never taken as pieces, but taken as there when the rest of a word is one of them.
bool common_word(const std::string& text)
{
  return text == "include" || text == "next" || text == "FILE";
}

struct Piece {
  std::string word;
  bool first = false;  // begins the word (else ends it)
};

// Tokens of 4 characters or more that begin or end one of the words and are none of them (nor
// common_word()), each with the words it is a piece of.
using PieceTable = std::map<std::string, std::vector<Piece>, std::less<>>;
const PieceTable& pieces()
{
  static const PieceTable table = [] {
    PieceTable out;
    const auto& words = looked_for_words();
    for (const auto& word : words) {
      for (std::size_t size = 4; size < word.size(); ++size) {
        for (const bool first : {true, false}) {
          const std::string piece = first ? word.substr(0, size) : word.substr(word.size() - size);
          if (std::find(words.begin(), words.end(), piece) == words.end() && !common_word(piece)) {
            out[piece].push_back({word, first});
          }
        }
      }
    }
    return out;
  }();
  return table;
}

// The pieces' (first, last) and (second, next to last) characters: a token matching neither
// pair of a piece is no piece, without a lookup (most tokens of a text).
struct PieceEnds {
  std::bitset<256 * 256> outer;
  std::bitset<256 * 256> inner;
  static std::size_t pair(char a, char b) { return static_cast<unsigned char>(a) * 256 + static_cast<unsigned char>(b); }
  bool may_be_piece(std::string_view token) const
  {
    return outer[pair(token.front(), token.back())] && inner[pair(token[1], token[token.size() - 2])];
  }
};

const PieceEnds& piece_ends()
{
  static const PieceEnds ends = [] {
    PieceEnds out;
    for (const auto& [piece, words] : pieces()) {
      out.outer.set(PieceEnds::pair(piece.front(), piece.back()));
      out.inner.set(PieceEnds::pair(piece[1], piece[piece.size() - 2]));
    }
    return out;
  }();
  return ends;
}

} // namespace

void PastedWords::read(const std::string& raw)
{
  std::string storage;
  const std::string& text = as_preprocessed(raw, storage);
  m_pastes = m_pastes || util::find_text(text, "##") != std::string::npos;
  const auto& table = pieces();
  const PieceEnds& ends = piece_ends();
  const std::string_view view = text;
  for (std::size_t at = 0; at < view.size();) {
    if (!identifier_char(view[at])) {
      ++at;
      continue;
    }
    std::size_t end = at + 1;
    while (end < view.size() && identifier_char(view[end])) {
      ++end;
    }
    const std::string_view token = view.substr(at, end - at);
    if (token.size() >= 4 && token.size() < 19 && ends.may_be_piece(token)) {  // no piece is longer than the longest word
      if (const auto found = table.find(token); found != table.end()) {
        for (const Piece& piece : found->second) {
          (piece.first ? m_firsts : m_lasts)[piece.word].insert(token.size());
        }
      }
    }
    at = end;
  }
}

std::set<std::string> PastedWords::formed() const
{
  std::set<std::string> out;
  if (!m_pastes) {
    return out;
  }
  // A word is formed from pieces seen when what they leave of it can't be seen as a piece: 3
  // characters or fewer, or a common word; or from a first and a last piece (anything between).
  for (const auto& word : looked_for_words()) {
    const auto firsts = m_firsts.find(word);
    const auto lasts = m_lasts.find(word);
    const auto unseen = [](const std::string& rest) { return rest.size() <= 3 || common_word(rest); };
    bool formed = firsts != m_firsts.end() && lasts != m_lasts.end() &&
                  *firsts->second.begin() + *lasts->second.begin() <= word.size();
    for (const std::size_t size : firsts != m_firsts.end() ? firsts->second : std::set<std::size_t>{}) {
      formed = formed || unseen(word.substr(size));
    }
    for (const std::size_t size : lasts != m_lasts.end() ? lasts->second : std::set<std::size_t>{}) {
      formed = formed || unseen(word.substr(0, word.size() - size));
    }
    if (formed) {
      out.insert(word);
    }
  }
  return out;
}

bool must_be_one_copy(const std::string& content)
{
  std::string storage;
  return util::find_text(as_preprocessed(content, storage), "once") != std::string::npos;  // #pragma once, _Pragma("once")
}

bool text_may_define_once(const std::string& raw)
{
  std::string storage;
  const std::string& preprocessed = as_preprocessed(raw, storage);
  if (!has_word(preprocessed, "once")) {
    return false;  // most texts: one search
  }
  // The word outside comments and outside a "#pragma once" line of its own.
  const std::string text = without_comments(preprocessed);
  for (std::size_t at = util::find_text(text, "once"); at != std::string::npos; at = util::find_text(text, "once", at + 4)) {
    if ((at > 0 && identifier_char(text[at - 1])) || (at + 4 < text.size() && identifier_char(text[at + 4]))) {
      continue;  // inside a longer name (call_once)
    }
    const std::size_t line_start = text.rfind('\n', at);
    std::size_t i = line_start == std::string::npos ? 0 : line_start + 1;
    skip_space(text, i);
    const bool hash = i < text.size() && text[i] == '#';
    i += hash ? 1 : 0;
    skip_space(text, i);
    const bool pragma = hash && identifier(text, i) == "pragma";
    skip_space(text, i);
    if (!pragma || i != at) {
      return true;  // `once` as a macro's argument or body (_Pragma("once"), PRAGMA(once), …)
    }
  }
  return false;
}

} // namespace kjit::deps
