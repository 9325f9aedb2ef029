// What a program's text and options say before any header is resolved: whether they use the
// time, name files in the binary, or make the compiler read a file kjit does not see.
#include "deps/resolver.hpp"

#include <algorithm>
#include <cctype>
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
  for (const auto& option : options) {
    if (option == "-G" || option == "--device-debug") {
      return true;
    }
  }
  return false;
}

bool options_name_files(const std::vector<std::string>& options)
{
  for (const auto& option : options) {
    if (option == "-lineinfo" || option == "--generate-line-info") {
      return true;
    }
  }
  return device_debug(options);
}

const std::string& as_preprocessed(const std::string& text, std::string& storage)
{
  if (text.find("\\\n") == std::string::npos && text.find("\\\r\n") == std::string::npos &&
      text.find("??") == std::string::npos) {
    return text;
  }
  const std::string replaced = trigraphs_replaced(text);
  storage.clear();
  storage.reserve(replaced.size());
  for (std::size_t i = 0; i < replaced.size(); ++i) {
    if (replaced[i] == '\\' && i + 1 < replaced.size() && replaced[i + 1] == '\n') {
      ++i;
    } else if (replaced[i] == '\\' && i + 2 < replaced.size() && replaced[i + 1] == '\r' && replaced[i + 2] == '\n') {
      i += 2;
    } else {
      storage += replaced[i];
    }
  }
  return storage;
}

bool text_names_files(const std::string& raw)
{
  std::string storage;
  const std::string& text = as_preprocessed(raw, storage);
  for (const char* word : {"__FILE__", "__builtin_FILE", "source_location"}) {
    if (text.find(word) != std::string::npos) {
      return true;
    }
  }
  // "assert" as a word: not static_assert (it names no file), nor a name that contains it.
  return has_word(text, "assert") || text_names_program(text);
}

bool has_word(const std::string& text, std::string_view word)
{
  const auto word_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
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
  return as_preprocessed(raw, storage).find("__BASE_FILE__") != std::string::npos;
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

bool is_piece(const std::string& token, const std::string& word)
{
  return token.size() >= 4 && token.size() < word.size() && word.compare(0, token.size(), token) == 0;
}

} // namespace

void PastedWords::read(const std::string& raw)
{
  std::string storage;
  const std::string& text = as_preprocessed(raw, storage);
  m_pastes = m_pastes || text.find("##") != std::string::npos;
  const auto word_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (std::size_t at = text.find("__"); at != std::string::npos; at = text.find("__", at)) {
    if (at > 0 && word_char(text[at - 1])) {
      at += 2;
      continue;
    }
    std::size_t end = at;
    while (end < text.size() && word_char(text[end])) {
      ++end;
    }
    const std::string token = text.substr(at, end - at);
    const auto& words = looked_for_words();
    if (std::find(words.begin(), words.end(), token) != words.end()) {
      at = end;
      continue;  // a word itself (__has_include begins __has_include_next): no piece
    }
    for (const auto& word : words) {
      if (is_piece(token, word)) {
        m_words.insert(word);
      }
    }
    at = end;
  }
}

std::set<std::string> PastedWords::formed() const
{
  return m_pastes ? m_words : std::set<std::string>{};
}

bool must_be_one_copy(const std::string& content)
{
  std::string storage;
  return as_preprocessed(content, storage).find("once") != std::string::npos;  // #pragma once, _Pragma("once")
}

} // namespace kjit::deps
