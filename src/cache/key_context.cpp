// The Cache's key context (the toolchain part of every key, cache::toolchain_context) and the
// rows that remember it in a new store, written with the first entry's commit or at the end of
// the public call that made them (cache_impl.hpp, ToolchainRowsAtEnd).
#include "cache/cache_impl.hpp"

#include "cache/toolchain.hpp"
#include "cache/cache_dir.hpp"

#include <exception>
#include <iterator>
#include <string>
#include <utility>

namespace kjit {

namespace {

thread_local int t_public_calls = 0;  // ToolchainRowsAtEnd objects alive on this thread

// The identities could not be remembered (disk full…): the next process learns them again.
void not_remembered(const std::exception& e)
{
  cache::warn_once(std::string("cannot remember the toolchain's identity: ") + e.what());
}

} // namespace

const cache::KeyContext& Cache::Impl::key_context(bool fingerprint_later)
{
  std::lock_guard lock(context_mutex);
  if (!context) {
    make_key_context(fingerprint_later, false);
  }
  return *context;
}

bool Cache::Impl::key_context_if_known()
{
  std::lock_guard lock(context_mutex);
  return context || make_key_context(true, true);
}

bool Cache::Impl::make_key_context(bool fingerprint_later, bool only_if_known)
{
  try {
    bool unknown = false;
    std::vector<store::Store::Row> rows;
    cache::KeyContext made = cache::toolchain_context(config, store.get(), remote, &rows, fingerprint_later,
                                                      only_if_known ? &unknown : nullptr);
    if (unknown) {
      return false;
    }
    context = std::move(made);
    toolchain_rows.insert(toolchain_rows.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  } catch (const StoreError& e) {
    if (only_if_known) {
      return false;  // (key_context() meets it again)
    }
    // The identities could not be remembered (disk full…): found again next time, never fatal.
    not_remembered(e);
    context = cache::toolchain_context(config, nullptr, remote);
  }
  toolchain_rows_held = !toolchain_rows.empty();
  inputs_toolchain = cache::inputs_toolchain(*context);
  return true;
}

std::vector<store::Store::Row> Cache::Impl::take_toolchain_rows()
{
  if (!toolchain_rows_held.load(std::memory_order_acquire)) {
    return {};  // every lookup's end asks: no lock then
  }
  std::lock_guard lock(context_mutex);
  toolchain_rows_held = false;
  return std::exchange(toolchain_rows, {});
}

void Cache::Impl::put_back_toolchain_rows(std::vector<store::Store::Row> rows)
{
  std::lock_guard lock(context_mutex);
  toolchain_rows.insert(toolchain_rows.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  toolchain_rows_held = !toolchain_rows.empty();
}

void Cache::Impl::queue_toolchain_rows() noexcept
{
  try {
    std::vector<store::Store::Row> rows = take_toolchain_rows();
    if (!rows.empty() && store && store->writable()) {
      store->put_later(std::move(rows), [](const StoreError* error) {
        if (error != nullptr) {
          not_remembered(*error);
        }
      });
    }
  } catch (const std::exception& e) {
    not_remembered(e);
  }
}

Cache::Impl::ToolchainRowsAtEnd::ToolchainRowsAtEnd(Impl& impl) : m_impl(impl)
{
  ++t_public_calls;
}

Cache::Impl::ToolchainRowsAtEnd::~ToolchainRowsAtEnd()
{
  if (--t_public_calls == 0) {
    m_impl.queue_toolchain_rows();
  }
}

Cache::Impl::ToolchainRowsOnBehalf::ToolchainRowsOnBehalf() noexcept
{
  ++t_public_calls;
}

Cache::Impl::ToolchainRowsOnBehalf::~ToolchainRowsOnBehalf()
{
  --t_public_calls;
}

} // namespace kjit
