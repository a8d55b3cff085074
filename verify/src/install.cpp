// copysynth — process-wide routine slots (see install.hpp).
#include "copysynth/install.hpp"

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace copysynth {
namespace {

void system_clear_page(void* page) { std::memset(page, 0, kPageBytes); }

// Constant-initialised: usable before main() and from any thread.
std::atomic<CopyFn> g_memcpy{&std::memcpy};
std::atomic<CopyFn> g_memmove{&std::memmove};
std::atomic<FillFn> g_fill{&std::memset};
std::atomic<ClearPageFn> g_clear_page{&system_clear_page};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<Routine>> keep;  // every routine ever installed; never freed
  std::string names[4] = {"system", "system", "system", "system"};
};
Registry* g_registry = nullptr;

// fork() in one thread while another holds the registry's lock (install_all, uninstall,
// installed_name) left it held for ever in the child, whose next install or installed_name hung
// (a hostile-user test: copysynth_load_wisdom in a child forked while another thread loaded
// wisdom). The lock is taken around fork() and released on both sides.
void lock_for_fork() noexcept { g_registry->mu.lock(); }
void unlock_after_fork() noexcept { g_registry->mu.unlock(); }

Registry& registry() {
  static Registry* r = [] {
    g_registry = new Registry;  // never destroyed: routines may run during exit
    pthread_atfork(&lock_for_fork, &unlock_after_fork, &unlock_after_fork);
    return g_registry;
  }();
  return *r;
}
// Made at program start, before main() and its threads: a fork() while another thread was in
// the first registry() call left the child waiting on that initialisation for ever.
[[maybe_unused]] const bool g_registry_made = (registry(), true);

}  // namespace

Status install(Routine r, const VerifyOptions& opt) {
  std::vector<Routine> one;
  one.push_back(std::move(r));
  return install_all(std::move(one), opt);
}

Status install_all(std::vector<Routine> rs, const VerifyOptions& opt) {
  for (std::size_t i = 0; i < rs.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (rs[k].operation() == rs[i].operation())
        return make_error(ErrorCode::kInvalidArgument, "install_all: two " + std::string(name_of(rs[i].operation())) +
                                                           " routines; pass at most one per operation");
  for (const Routine& r : rs) COPYSYNTH_TRY(check_routine(r, opt));
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  for (Routine& r : rs) {
    auto owned = std::make_unique<Routine>(std::move(r));
    const Routine& k = *owned;
    reg.names[static_cast<int>(k.operation())] = k.name();
    switch (k.operation()) {
      case Operation::kMemcpy: g_memcpy.store(k.fn(), std::memory_order_release); break;
      case Operation::kMemmove: g_memmove.store(k.fn(), std::memory_order_release); break;
      case Operation::kFill: g_fill.store(k.fill_fn(), std::memory_order_release); break;
      case Operation::kClearPage: g_clear_page.store(k.clear_page_fn(), std::memory_order_release); break;
    }
    reg.keep.push_back(std::move(owned));
  }
  return {};
}

void uninstall(Operation op) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.names[static_cast<int>(op)] = "system";
  switch (op) {
    case Operation::kMemcpy: g_memcpy.store(&std::memcpy, std::memory_order_release); break;
    case Operation::kMemmove: g_memmove.store(&std::memmove, std::memory_order_release); break;
    case Operation::kFill: g_fill.store(&std::memset, std::memory_order_release); break;
    case Operation::kClearPage: g_clear_page.store(&system_clear_page, std::memory_order_release); break;
  }
}

std::string installed_name(Operation op) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  return reg.names[static_cast<int>(op)];
}

CopyFn installed_memcpy() noexcept { return g_memcpy.load(std::memory_order_acquire); }
CopyFn installed_memmove() noexcept { return g_memmove.load(std::memory_order_acquire); }
FillFn installed_fill() noexcept { return g_fill.load(std::memory_order_acquire); }
ClearPageFn installed_clear_page() noexcept { return g_clear_page.load(std::memory_order_acquire); }

void* memcpy(void* dst, const void* src, std::size_t n) noexcept { return installed_memcpy()(dst, src, n); }
void* memmove(void* dst, const void* src, std::size_t n) noexcept { return installed_memmove()(dst, src, n); }
void* memset(void* dst, int c, std::size_t n) noexcept { return installed_fill()(dst, c, n); }
void clear_page(void* page) noexcept { installed_clear_page()(page); }

}  // namespace copysynth
