// The LMDB store: one environment per path per process, map growth, stale readers, read-only mode.
#pragma once

#include "util/hash.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

namespace kjit::store {

// Named databases inside the environment.
enum class Table {
  entries,     // key digest (32 bytes) → record
  meta,        // text key → text value (toolchain identities, …)
  quarantine,  // key digest + ":" + unix time → reason "\n" damaged record
  manifests,   // direct key (source, in-memory headers, options, toolchain) → manifest
  names,       // program name + '\0' + key digest → "" (entries by program name, for explain)
};
constexpr int k_table_count = 5;

// Thread-safe. Every call is one short LMDB transaction. Raw LMDB types stay in store.cpp.
// After fork() the child must not use a Store opened by its parent (calls throw StoreError);
// the default cache reopens one by itself.
class Store {
public:
  // Opens (creating if needed) the environment in `dir`. If the folder can't be written, opens
  // it read-only: hits are served and writes are skipped. Throws StoreError if it can't open.
  static std::shared_ptr<Store> open(const std::string& dir, std::size_t initial_map_size);

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  bool writable() const noexcept { return m_writable; }
  const std::string& path() const noexcept { return m_path; }
  std::size_t map_size() const;

  std::optional<std::string> get(Table table, std::string_view key) const;
  // Calls `visit` with the value's bytes where LMDB maps them, inside the read transaction (they
  // are valid only during the call; don't call the store from it). Returns false if not found.
  bool visit(Table table, std::string_view key, const std::function<void(std::string_view value)>& visit) const;

  struct Row {
    Table table;
    std::string key;
    std::string value;
  };
  // Stores the rows, in any tables, in one write transaction. No-op when read-only.
  void put(const std::vector<Row>& rows);
  void put(Table table, std::string_view key, std::string_view value)
  {
    put({Row{table, std::string(key), std::string(value)}});
  }
  // Moves a damaged entry aside, in one transaction: the quarantine row is written, the entry deleted.
  void quarantine(std::string_view key, std::string_view bytes, const std::string& reason);
  // Calls `visit` for every row of `table` (inside one read transaction; don't call the store from it).
  void for_each(Table table, const std::function<void(std::string_view key, std::string_view value)>& visit) const;
  // Calls `visit` for every row of `table` whose key starts with `prefix`, in key order.
  void for_each_prefix(Table table, std::string_view prefix,
                       const std::function<void(std::string_view key, std::string_view value)>& visit) const;
  // Deletes the rows of `table` with these keys, in one transaction.
  void erase(Table table, const std::vector<std::string>& keys);
  std::size_t count(Table table) const;
  // Empties `table`.
  void clear(Table table);

  struct Impl;

private:
  explicit Store(std::unique_ptr<Impl> impl, std::string path, bool writable);
  std::unique_ptr<Impl> m_impl;
  std::string m_path;
  bool m_writable;
};

} // namespace kjit::store
