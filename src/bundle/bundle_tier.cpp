// The bundle tier: a Reader opened on first use; every failure becomes an answer, never an exception.
#include "bundle/bundle_tier.hpp"

#include "bundle/reader.hpp"

#include <kjit/error.hpp>

#include <mutex>
#include <optional>

namespace kjit::bundle {

namespace {

class BundleTier final : public tier::Tier {
public:
  explicit BundleTier(std::string path) : m_name("bundle " + path), m_path(std::move(path)) {}

  const std::string& name() const noexcept override { return m_name; }

  const tier::TierAccounting& accounting() const noexcept override
  {
    // A bundle's misses are the lookup's; an unreadable bundle or a damaged record is a tier error.
    static const tier::TierAccounting accounting{Source::bundle, &CacheStats::bundle_hits, nullptr,
                                                 &CacheStats::tier_errors};
    return accounting;
  }

  bool keeps_puts() const noexcept override { return false; }  // read-only: made by `kjit export`
  void put(const util::Sha256&, std::string) noexcept override {}

  tier::TierAnswer get(const util::Sha256& key) noexcept override
  {
    tier::TierAnswer answer;
    try {
      const Reader* reader = open();
      if (reader == nullptr) {
        answer.kind = tier::TierAnswer::Kind::failure;
        answer.why = m_open_error;
        return answer;
      }
      if (const IndexEntry* entry = reader->find(key)) {
        answer.bytes = reader->read(*entry);
        answer.kind = tier::TierAnswer::Kind::record;
      }
    } catch (const std::exception& e) {
      answer.kind = tier::TierAnswer::Kind::failure;
      answer.why = e.what();
    }
    return answer;
  }

  std::vector<MetaRow> meta() noexcept
  {
    try {
      const Reader* reader = open();
      return reader != nullptr ? reader->meta() : std::vector<MetaRow>{};
    } catch (const std::exception&) {
      return {};
    }
  }

private:
  // The reader, or nullptr (with m_open_error) if the file can't be used.
  const Reader* open()
  {
    std::call_once(m_once, [this] {
      try {
        m_reader.emplace(m_path);
      } catch (const std::exception& e) {
        m_open_error = e.what();
      }
    });
    return m_reader ? &*m_reader : nullptr;
  }

  std::string m_name;
  std::string m_path;
  std::once_flag m_once;
  std::optional<Reader> m_reader;
  std::string m_open_error;
};

} // namespace

std::unique_ptr<tier::Tier> open_tier(const std::string& path)
{
  return std::make_unique<BundleTier>(path);
}

std::vector<MetaRow> tier_meta(tier::Tier& tier)
{
  auto* bundle = dynamic_cast<BundleTier*>(&tier);
  return bundle != nullptr ? bundle->meta() : std::vector<MetaRow>{};
}

} // namespace kjit::bundle
