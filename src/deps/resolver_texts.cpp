// A resolution's texts let go while NVRTC compiles and read again when needed (see resolver.hpp).
#include "deps/resolver.hpp"

#include "util/file.hpp"

#include <atomic>
#include <mutex>

namespace kjit::deps {

namespace {

std::atomic<std::uint64_t> g_shed{0};
std::mutex g_hook_mutex;
std::function<void()> g_shed_hook;

} // namespace

std::uint64_t texts_shed() noexcept
{
  return g_shed.load(std::memory_order_relaxed);
}

void set_shed_hook(std::function<void()> hook)
{
  std::lock_guard lock(g_hook_mutex);
  g_shed_hook = std::move(hook);
}

void after_shed()
{
  std::function<void()> hook;
  {
    std::lock_guard lock(g_hook_mutex);
    hook = g_shed_hook;
  }
  if (hook) {
    hook();
  }
}

void Resolver::shed_texts(const std::function<bool(const util::Sha256&)>& encoded,
                          const std::function<void(const DiskHeader&, std::string&&)>& taken)
{
  for (DiskHeader& header : m_result.headers) {
    if (!header.shed && !header.content.empty() && encoded(header.hash)) {
      header.shed_size = header.content.size();
      header.shed = true;
      if (taken) {
        taken(header, std::move(header.content));
      }
      std::string().swap(header.content);
      m_texts_shed = true;
      g_shed.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

bool Resolver::restore_texts()
{
  if (!m_texts_shed) {
    return true;
  }
  for (DiskHeader& header : m_result.headers) {
    if (!header.shed) {
      continue;
    }
    std::error_code error;
    auto content = util::read_file(header.path, error);
    if (!content || content->size() != header.shed_size || util::sha256(*content) != header.hash) {
      return false;  // edited since it was read: the caller resolves again (HeadersChanged)
    }
    header.content = std::move(*content);
    header.shed = false;
  }
  m_texts_shed = false;
  return true;
}

} // namespace kjit::deps
