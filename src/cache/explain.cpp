// Explaining misses (which key fields differ from the closest entry) and finding orphans.
#include "cache/cache_impl.hpp"
#include "cache/entry_leads.hpp"

#include "cache/cache_dir.hpp"
#include "deps/search.hpp"
#include "store/record.hpp"

#include <algorithm>
#include <sstream>

namespace kjit {

namespace {

std::string hex_of(const std::string& raw)
{
  return util::to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
}

// The fields of program.txt and options.txt, keyed for comparison.
struct KeyFields {
  std::string name;
  std::string source;
  std::map<std::string, std::string> headers;   // in-memory header name → sha
  std::map<std::string, std::string> includes;  // "name (path)" → sha
  std::vector<std::string> expressions;
  std::vector<std::string> options;
  std::vector<std::string> named;  // "named-option …", "named-include …": a binary naming files
  std::map<std::string, std::string> singles;   // arch, nvrtc, nvjitlink, record-format, toolkit-include…
};

// Options are compared as folders here: -I{I1} and -I{I2} naming one folder twice are that
// folder repeated, not an option added.
KeyFields parse(const std::string& program_txt, const std::string& options_txt, const cache::KeyRoots& roots)
{
  KeyFields fields;
  const auto source_at = program_txt.find("\nsource:\n");
  if (source_at != std::string::npos) {
    fields.source = program_txt.substr(source_at + 9);
    if (!fields.source.empty()) {
      fields.source.pop_back();  // the newline program.txt adds after the source
    }
  }
  std::istringstream lines(program_txt.substr(0, source_at) + "\n" + options_txt);
  std::string line;
  while (std::getline(lines, line)) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) {
      continue;
    }
    const std::string field = line.substr(0, colon);
    const std::string value = line.substr(colon + 2);
    const auto space = value.find(' ');
    if (field == "name") {
      fields.name = value;
    } else if (field == "header" && space != std::string::npos) {
      fields.headers[value.substr(space + 1)] = value.substr(0, space);
    } else if (field == "include" && space != std::string::npos) {
      std::string rest = value.substr(space + 1);
      const auto tab = rest.find('\t');
      if (tab != std::string::npos) {
        rest = rest.substr(0, tab) + " (" + rest.substr(tab + 1) + ")";
      }
      fields.includes[rest] = value.substr(0, space);
    } else if (field == "name-expression") {
      fields.expressions.push_back(value);
    } else if (field == "option") {
      fields.options.push_back(cache::local_places(roots, value));
    } else if (field == "named-option" || field == "named-include") {
      fields.named.push_back(field.substr(6) + " " + value);
    } else if (field == "toolkit-include") {
      fields.singles[field] += value + " ";
    } else if (field != "source-bytes") {
      fields.singles[field] = value;
    }
  }
  return fields;
}

void diff_maps(const char* what, const std::map<std::string, std::string>& before,
               const std::map<std::string, std::string>& now, std::vector<std::string>& out)
{
  for (const auto& [name, hash] : now) {
    const auto old = before.find(name);
    if (old == before.end()) {
      out.push_back(std::string(what) + " " + name + " added");
    } else if (old->second != hash) {
      out.push_back(std::string(what) + " " + name + " changed");
    }
  }
  for (const auto& [name, hash] : before) {
    if (now.count(name) == 0) {
      out.push_back(std::string(what) + " " + name + " removed");
    }
  }
}

void diff_lists(const char* what, const std::vector<std::string>& before, const std::vector<std::string>& now,
                std::vector<std::string>& out)
{
  const std::size_t found = out.size();
  const auto occurrences = [](const std::vector<std::string>& list, const std::string& item) {
    return std::count(list.begin(), list.end(), item);
  };
  for (std::size_t i = 0; i < now.size(); ++i) {
    const std::string& item = now[i];
    if (std::find(now.begin(), now.begin() + static_cast<std::ptrdiff_t>(i), item) != now.begin() + static_cast<std::ptrdiff_t>(i)) {
      continue;  // each distinct item once
    }
    const auto had = occurrences(before, item);
    const auto has = occurrences(now, item);
    if (had == 0) {
      out.push_back(std::string(what) + " " + item + " added");
    } else if (has > had) {
      out.push_back(std::string(what) + " " + item + " repeated (" + std::to_string(has) + " times, was " +
                    std::to_string(had) + ")");
    } else if (has < had) {
      out.push_back(std::string(what) + " " + item + " given " + std::to_string(has) + " times, was " +
                    std::to_string(had));
    }
  }
  for (const auto& item : before) {
    if (std::find(now.begin(), now.end(), item) == now.end() &&
        std::find(out.begin() + static_cast<std::ptrdiff_t>(found), out.end(), std::string(what) + " " + item + " removed") == out.end()) {
      out.push_back(std::string(what) + " " + item + " removed");
    }
  }
  if (out.size() == found && before != now) {
    out.push_back(std::string(what) + "s reordered");
  }
}

std::vector<std::string> differences(const KeyFields& before, const KeyFields& now)
{
  std::vector<std::string> out;
  if (before.source != now.source) {
    out.push_back("source changed (" + std::to_string(before.source.size()) + " -> " +
                  std::to_string(now.source.size()) + " bytes)");
  }
  diff_maps("header", before.headers, now.headers, out);
  diff_maps("include", before.includes, now.includes, out);
  std::vector<std::string> list_changes;
  diff_lists("name expression", before.expressions, now.expressions, list_changes);
  diff_lists("option", before.options, now.options, list_changes);
  diff_lists("name in the binary:", before.named, now.named, list_changes);
  out.insert(out.end(), list_changes.begin(), list_changes.end());
  for (const auto& [field, value] : now.singles) {
    const auto old = before.singles.find(field);
    const std::string old_value = old == before.singles.end() ? "(none)" : old->second;
    if (old_value != value) {
      const bool toolchain = field == "nvrtc" || field == "nvjitlink";
      out.push_back((toolchain ? "toolchain: " : "") + field + " " + old_value + " -> " + value);
    }
  }
  return out;
}

} // namespace

MissExplanation Cache::explain(const Program& program, const Arch& arch)
{
  const PreparedProgram prepared = prepare(program, arch);
  MissExplanation explanation;
  explanation.key = prepared.key();
  // The tiers below the store (bundles, the remote) answer the lookup too: a record there is a hit
  // (the lookup verifies it; one that fails is compiled again).
  const auto in_a_tier = [this](const util::Sha256& key) {
    for (const auto& tier : m_impl->tiers) {
      if (tier->get(key).kind == tier::TierAnswer::Kind::record) {
        return true;
      }
    }
    return false;
  };
  const util::Sha256 prepared_key = prepared.m_key;
  if ((m_impl->store && m_impl->store->get(store::Table::entries, bytes_of(prepared_key))) ||
      (!m_impl->is_provisional(prepared_key) && in_a_tier(prepared_key))) {
    explanation.hit = true;
    return explanation;
  }
  if (!m_impl->store) {
    return explanation;
  }
  if (m_impl->is_provisional(prepared_key)) {
    // No manifest holds (a folder changed, the project moved): the lookup then looks up the
    // prediction's own key, and so does this, or it would say miss where the lookup hits.
    util::Sha256 predicted_entry_key{};
    if (m_impl->predicted_key(prepared, predicted_entry_key)) {
      explanation.key = util::to_hex(predicted_entry_key);
      if (const auto bytes = m_impl->store->get(store::Table::entries, bytes_of(predicted_entry_key))) {
        std::string why;
        const auto entry = store::decode_record(*bytes, predicted_entry_key, store::Sections::all, why);
        if (entry && entry->kind != store::EntryKind::failure) {
          explanation.hit = true;  // a remembered failure is compiled again: a miss
          return explanation;
        }
      } else if (in_a_tier(predicted_entry_key)) {
        explanation.hit = true;
        return explanation;
      }
    }
  }
  const cache::KeyRoots roots = cache::key_roots(prepared.program());
  const KeyFields now = parse(prepared.program_txt(), prepared.options_txt(), roots);
  // Not validated by a manifest: say which header or part of the resolution context is why.
  std::vector<std::string> context_changes;
  if (m_impl->is_provisional(prepared_key)) {
    const util::Sha256 manifest_key = prepared.m_manifest_key;
    const deps::SearchContext search = deps::search_context(prepared.program(), m_impl->key_context().toolkit_include_dirs);
    context_changes = m_impl->manifest_changes(manifest_key, search.text());
  }
  std::vector<std::string> candidates;
  const std::string prefix = store::names_prefix(program.name);
  m_impl->store->for_each_prefix(store::Table::names, prefix, [&](std::string_view name_key, std::string_view name) {
    if (name == program.name) {
      candidates.emplace_back(name_key.substr(prefix.size()));
    }
  });
  std::size_t best = SIZE_MAX;
  for (const auto& candidate : candidates) {
    const auto bytes = m_impl->store->get(store::Table::entries, candidate);
    std::string why;
    const auto entry =
      bytes ? store::decode_record(*bytes, util::digest_of_bytes(candidate), store::Sections::all, why) : std::nullopt;
    if (!entry) {
      continue;
    }
    std::vector<std::string> diff = differences(parse(entry->program_txt, entry->options_txt, roots), now);
    // An entry with the same texts is the closest whatever the context says (rank 0).
    const std::size_t rank = diff.empty() ? 0 : diff.size() + 1;
    if (diff.empty()) {
      diff = context_changes;  // same texts: the headers or folders of the resolution changed
    }
    for (std::string& line : diff) {
      // A header the prediction does not reach (a computed include): "removed" from the texts,
      // while the manifest knows it was edited.
      const auto cut = line.size() - std::min<std::size_t>(line.size(), 8);
      if (line.compare(0, 8, "include ") == 0 && line.compare(cut, 8, " removed") == 0) {
        const std::string edited = cache::local_places(roots, line.substr(0, cut)) + " changed";
        if (std::find(context_changes.begin(), context_changes.end(), edited) != context_changes.end()) {
          line = edited;
        }
      }
    }
    if (rank < best) {
      best = rank;
      explanation.closest_key = hex_of(candidate);
      explanation.differences = std::move(diff);
    }
  }
  if (explanation.closest_key.empty()) {
    explanation.differences = context_changes;
  }
  for (std::string& line : explanation.differences) {
    line = cache::local_places(roots, line);  // the key's {I1}/{src} places, as folders here
  }
  return explanation;
}

namespace {

// The raw keys of entries that this toolchain and record format will never return.
std::vector<std::string> orphan_keys(store::Store& store, const cache::KeyContext& context)
{
  const std::string nvrtc = "\nnvrtc: " + context.nvrtc_identity + "\n";
  const std::string nvjitlink = "\nnvjitlink: " + context.nvjitlink_identity + "\n";
  std::vector<std::string> keys;
  store.for_each(store::Table::entries, [&](std::string_view key, std::string_view bytes) {
    std::string why;
    const auto entry = store::decode_record(bytes, util::digest_of_bytes(key), store::Sections::all, why);
    // Another toolchain, a record this version can't read (an older format), or key texts made
    // before keys were portable (an absolute toolkit folder): no lookup makes such a key now.
    if (!entry || entry->options_txt.find(nvrtc) == std::string::npos ||
        entry->options_txt.find(nvjitlink) == std::string::npos ||
        entry->options_txt.find("\ntoolkit-include: /") != std::string::npos) {
      keys.emplace_back(key);
    }
  });
  return keys;
}

} // namespace

std::vector<std::string> Cache::orphans()
{
  const Impl::ToolchainRowsAtEnd rows_at_end(*m_impl);
  std::vector<std::string> hex;
  if (m_impl->store) {
    for (const auto& key : orphan_keys(*m_impl->store, m_impl->key_context())) {
      hex.push_back(hex_of(key));
    }
  }
  return hex;
}

std::size_t Cache::remove_orphans()
{
  const Impl::ToolchainRowsAtEnd rows_at_end(*m_impl);
  if (!m_impl->store) {
    return 0;
  }
  const std::vector<std::string> keys = orphan_keys(*m_impl->store, m_impl->key_context());
  const std::set<std::string> manifests = cache::manifest_keys(*m_impl->store, keys);
  m_impl->store->erase(store::Table::entries, keys);  // with the header blobs only they used
  cache::erase_leads(*m_impl->store, keys, manifests);  // their direct rows and manifests
  m_impl->mirror_removed(keys);
  return keys.size();
}

} // namespace kjit
