#include "widget_gateway/http/request_fields.hpp"

#include <array>
#include <new>

namespace wg::http::field_pool {

namespace {

constexpr std::array<std::size_t, 4> kClassBytes{64, 128, 256, 512};
constexpr std::size_t kKeptPerClass = 64;

struct FreeBlock {
  FreeBlock* next;
};

struct Lists {
  std::array<FreeBlock*, kClassBytes.size()> head{};
  std::array<std::size_t, kClassBytes.size()> kept{};

  ~Lists();
};

thread_local Lists lists;
// Set once the thread's lists are gone (a field freed later in the thread's exit, by another
// thread-local's destructor, goes straight back to operator delete).
thread_local bool lists_gone = false;

Lists::~Lists() {
  for (FreeBlock* block : head) {
    while (block != nullptr) {
      FreeBlock* next = block->next;
      ::operator delete(block);
      block = next;
    }
  }
  lists_gone = true;
}

// The size class holding `bytes`; kClassBytes.size() when none does.
std::size_t class_of(std::size_t bytes) {
  std::size_t c = 0;
  while (c < kClassBytes.size() && bytes > kClassBytes[c]) ++c;
  return c;
}

}  // namespace

void* allocate(std::size_t bytes) {
  const std::size_t c = class_of(bytes);
  if (c == kClassBytes.size() || lists_gone) return ::operator new(bytes);
  Lists& mine = lists;
  if (FreeBlock* block = mine.head[c]) {
    mine.head[c] = block->next;
    --mine.kept[c];
    return block;
  }
  return ::operator new(kClassBytes[c]);
}

void deallocate(void* block, std::size_t bytes) noexcept {
  const std::size_t c = class_of(bytes);
  if (c == kClassBytes.size() || lists_gone) {
    ::operator delete(block);
    return;
  }
  Lists& mine = lists;
  if (mine.kept[c] >= kKeptPerClass) {
    ::operator delete(block);
    return;
  }
  auto* freed = static_cast<FreeBlock*>(block);
  freed->next = mine.head[c];
  mine.head[c] = freed;
  ++mine.kept[c];
}

std::size_t kept_blocks() {
  if (lists_gone) return 0;
  std::size_t total = 0;
  for (std::size_t kept : lists.kept) total += kept;
  return total;
}

}  // namespace wg::http::field_pool
