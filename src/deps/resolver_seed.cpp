// A resolution closed by an earlier compile of the same program, used again: the other arch of a
// program, or its other name expressions, compile without predicting and closing its headers anew.
#include "deps/resolver.hpp"

#include "deps/formed_names.hpp"
#include "util/hash.hpp"

#include <algorithm>
#include <cctype>

namespace kjit::deps {

namespace {

// Whether a name expression can change nothing a resolution depends on: no double underscore
// (__FILE__, __has_include, a piece a paste could join), no paste, no include, and none of the
// words the resolver looks for in a program's texts.
bool plain_expression(const std::string& expression)
{
  return expression.find("__") == std::string::npos && expression.find("##") == std::string::npos &&
         expression.find("include") == std::string::npos && !text_names_files(expression) &&
         !text_uses_time(expression) && !text_may_define_once(expression);
}

// A directive as source_directives() lists it: `"name"` or `<name>`.
std::string directive_text(const IncludeDirective& directive)
{
  return directive.quoted ? "\"" + directive.name + "\"" : "<" + directive.name + ">";
}

void add_field(util::Sha256Hasher& hasher, std::string_view field)
{
  hasher.update(std::to_string(field.size())).update(":").update(field);
}

bool seeds(const Program& program, const SearchContext& context)
{
  return program.headers.empty() && context.pre_includes.empty() && !options_name_files(program.options) &&
         !any_program_text(program, text_names_program) &&
         std::all_of(program.name_expressions.begin(), program.name_expressions.end(), plain_expression);
}

// Every identifier of `text` defined as empty: a macro table in which every name may end open.
ScanMacros all_names_empty(const std::string& text)
{
  ScanMacros macros;
  for (std::size_t at = 0; at < text.size();) {
    const auto first = static_cast<unsigned char>(text[at]);
    if (std::isalpha(first) == 0 && first != '_') {
      ++at;
      continue;
    }
    std::size_t end = at;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) != 0 || text[end] == '_')) {
      ++end;
    }
    macros.values[text.substr(at, end - at)].insert("");
    at = end;
  }
  return macros;
}

} // namespace

util::Sha256 seed_key(const Program& program, const SearchContext& context, const std::string& toolchain)
{
  if (!seeds(program, context)) {
    return {};
  }
  util::Sha256Hasher hasher;
  hasher.update("kjit closure seed 1\n");
  add_field(hasher, program.name);
  add_field(hasher, program.source);
  for (const auto& option : program.options) {
    add_field(hasher, option);
  }
  add_field(hasher, context.text());
  add_field(hasher, toolchain);
  return hasher.finish();
}

util::Sha256 library_key(const Program& program, const SearchContext& context, const std::string& toolchain)
{
  if (!seeds(program, context)) {
    return {};
  }
  util::Sha256Hasher hasher;
  hasher.update("kjit closure library 1\n");
  add_field(hasher, dir_of(program.name));
  for (const auto& option : program.options) {
    add_field(hasher, option);
  }
  SearchContext shared = context;
  shared.program_spelled = dir_of(context.program_spelled);
  add_field(hasher, shared.text());
  add_field(hasher, toolchain);
  return hasher.finish();
}

std::optional<std::set<std::string>> source_directives(const Program& program)
{
  ScanMacros macros;
  std::set<std::string> out;
  for (const IncludeDirective& directive : scan_includes(program.source, defines_from_options(program.options), &macros)) {
    if (directive.computed || directive.macro || directive.probe || directive.next) {
      return std::nullopt;
    }
    out.insert(directive_text(directive));
  }
  return out;
}

bool fits_closure(const Program& program, const ClosureState& closure, const std::set<std::string>& directives)
{
  std::string storage;
  const std::string& text = as_preprocessed(program.source, storage);
  // As the preprocessor reads it (splices joined) and as written (where its trigraphs still are).
  for (const char* word : {"##", "%:%:", "??", "__has_include", "include_next", "__INCLUDE_LEVEL__"}) {
    if (text.find(word) != std::string::npos || program.source.find(word) != std::string::npos) {
      return false;
    }
  }
  if (text_uses_time(program.source) || (text_names_files(program.source) && !closure.names_files) ||
      (text_may_define_once(program.source) && !closure.once_by_macro)) {
    return false;
  }
  ScanMacros defined;
  for (const IncludeDirective& directive : scan_includes(program.source, defines_from_options(program.options), &defined)) {
    if (directive.computed || directive.macro || directive.probe || directive.next ||
        directives.count(directive_text(directive)) == 0) {
      return false;
    }
  }
  if (!defined.values.empty() || !defined.functions.empty() || !defined.wrappers.empty()) {
    return false;  // a definition may give a header's probe another name, or end a name open
  }
  // What the source may reach through the headers' macros: a __has_include wrapper or alias
  // called, a piece of a word that a header's `##` joins.
  const ScanMacros names = all_names_empty(program.source);  // every name of the source, as empty
  for (const auto& [name, unused] : names.values) {
    if (closure.include_macros.count(name) != 0) {
      return false;
    }
  }
  if (closure.pastes) {
    PastedWords pieces;
    pieces.read(program.source);
    if (pieces.has_pieces()) {
      return false;
    }
  }
  return closure.computed_dirs.empty() || !may_form_absolute_name(program.source, OpenEnds(names));
}

Resolver::Resolver(const Program& program, const SearchContext& context, Resolution seed)
  : m_program(program), m_context(context), m_main_path(main_path_of(program, context)), m_start_ns(stamp_clock_ns()),
    m_result(std::move(seed)), m_defines(defines_from_options(program.options)), m_seeded(true)
{
  const ClosureState& closure = *m_result.closure;
  m_computed_dirs = closure.computed_dirs;
  m_names = closure.climbing_names;
  m_once_by_macro = closure.once_by_macro;
  m_names_files = closure.names_files;
  m_two_names = closure.two_names;
  for (std::size_t i = 0; i < m_result.headers.size(); ++i) {
    const DiskHeader& header = m_result.headers[i];
    m_index[header.path] = i;
    if (!header.spelled.empty()) {
      m_spelled[header.path] = header.spelled;
    }
  }
}

void Resolver::unseed()
{
  Resolver fresh(m_program, m_context);
  fresh.predict();
  *this = std::move(fresh);
}

ClosureState Resolver::closure_state(const util::Sha256& seed_key) const
{
  if (m_seeded) {
    ClosureState state = *m_result.closure;  // what the closure's own resolver knew
    state.seed_key = seed_key;
    return state;
  }
  ClosureState state;
  state.seed_key = seed_key;
  state.computed_dirs = m_computed_dirs;
  for (const auto& name : m_names) {
    if (has_dot_dot(name)) {
      state.climbing_names.insert(name);
    }
  }
  state.once_by_macro = m_once_by_macro;
  state.names_files = m_names_files;
  state.two_names = m_two_names;
  state.include_macros = m_scan.wrappers;
  const auto says_include = [&](const std::map<std::string, std::set<std::string>>& table) {
    for (const auto& [name, definitions] : table) {
      for (const auto& definition : definitions) {
        if (definition.find("include") != std::string::npos) {
          state.include_macros.insert(name);
        }
      }
    }
  };
  says_include(m_scan.values);
  says_include(m_scan.functions);
  state.pastes = m_pasted.pastes();
  return state;
}

} // namespace kjit::deps
