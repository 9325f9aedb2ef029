// Direct rows and manifests: their bytes for the size limit, and their removal with their entries.
#include "cache/entry_leads.hpp"

#include "cache/direct_index.hpp"
#include "store/record.hpp"

namespace kjit::cache {

namespace {

constexpr std::size_t k_key_bytes = 32;

// Raw manifest key → the raw keys of the records that name it.
std::map<std::string, std::vector<std::string>, std::less<>> manifest_users(const store::Store& store)
{
  std::map<std::string, std::vector<std::string>, std::less<>> users;
  store.for_each(store::Table::entries, [&](std::string_view key, std::string_view bytes) {
    if (const auto named = store::input_field(bytes, store::InputField::manifest_key)) {
      users[std::string(*named)].emplace_back(key);
    }
  });
  return users;
}

} // namespace

std::string manifest_head_key(std::string_view manifest_key)
{
  return std::string(manifest_key) + "h";
}

std::optional<std::string_view> manifest_of_head(std::string_view key)
{
  if (key.size() == k_key_bytes + 1 && key.back() == 'h') {
    return key.substr(0, k_key_bytes);
  }
  return std::nullopt;
}

LeadBytes lead_bytes(const store::Store& store, bool per_entry)
{
  LeadBytes out;
  store.for_each(store::Table::direct, [&](std::string_view key, std::string_view row) {
    out.total += key.size() + row.size();
    if (per_entry && row.size() >= k_key_bytes) {
      out.per_entry[std::string(row.substr(0, k_key_bytes))] += key.size() + row.size();
    }
  });
  std::map<std::string, std::size_t, std::less<>> manifests;
  store.for_each(store::Table::manifests, [&](std::string_view key, std::string_view value) {
    out.total += key.size() + value.size();
    if (per_entry) {
      manifests[std::string(manifest_of_head(key).value_or(key))] += key.size() + value.size();  // a head: its manifest's
    }
  });
  if (per_entry) {
    for (const auto& [manifest, users] : manifest_users(store)) {
      const auto it = manifests.find(manifest);
      for (const std::string& user : it == manifests.end() ? std::vector<std::string>{} : users) {
        out.per_entry[user] += it->second / users.size();
      }
    }
  }
  return out;
}

std::set<std::string> manifest_keys(const store::Store& store, const std::vector<std::string>& keys)
{
  std::set<std::string> out;
  for (const std::string& key : keys) {
    store.visit(store::Table::entries, key, [&](std::string_view bytes) {
      if (const auto named = store::input_field(bytes, store::InputField::manifest_key)) {
        out.emplace(*named);
      }
    });
  }
  return out;
}

void erase_leads(store::Store& store, const std::vector<std::string>& keys, const std::set<std::string>& manifests)
{
  const std::set<std::string_view> gone(keys.begin(), keys.end());
  std::vector<std::string> rows;
  store.for_each(store::Table::direct, [&](std::string_view input_digest, std::string_view row) {
    if (row.size() >= k_key_bytes && gone.count(row.substr(0, k_key_bytes)) != 0) {
      rows.emplace_back(input_digest);
    }
  });
  store.erase(store::Table::direct, rows);
  // Every manifest listed before the records are read (one a writer commits meanwhile comes with
  // the record naming it): a manifest a disk hit wrote for another spelling of an entry's program
  // (another manifest key, named by no record) or one an older format left would stay for good.
  std::set<std::string, std::less<>> candidates = {manifests.begin(), manifests.end()};
  store.for_each(store::Table::manifests, [&](std::string_view key, std::string_view) { candidates.emplace(key); });
  std::vector<std::string> unused;
  if (!candidates.empty()) {
    const auto users = manifest_users(store);  // the records that remain
    for (const std::string& key : candidates) {
      if (users.count(manifest_of_head(key).value_or(key)) == 0) {  // a head goes with its manifest
        unused.push_back(key);
      }
    }
  }
  store.erase(store::Table::manifests, unused);
}

} // namespace kjit::cache
