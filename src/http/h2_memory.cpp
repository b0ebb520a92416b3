#include "h2_memory.hpp"

#include <cstddef>
#include <cstring>
#include <limits>
#include <new>

#include "widget_gateway/http/request_fields.hpp"

namespace wg::http {

namespace {

// Each block starts with its size (nghttp2 frees without one), keeping its payload aligned as
// malloc's is.
constexpr std::size_t kHeader = alignof(std::max_align_t);

void* pool_malloc(std::size_t size, void*) {
  if (size > std::numeric_limits<std::size_t>::max() - kHeader) return nullptr;
  char* block;
  try {
    block = static_cast<char*>(field_pool::allocate(size + kHeader));
  } catch (const std::bad_alloc&) {
    return nullptr;  // nghttp2 answers NGHTTP2_ERR_NOMEM
  }
  std::memcpy(block, &size, sizeof size);
  return block + kHeader;
}

std::size_t size_of(void* payload) {
  std::size_t size;
  std::memcpy(&size, static_cast<char*>(payload) - kHeader, sizeof size);
  return size;
}

void pool_free(void* payload, void*) {
  if (payload == nullptr) return;
  field_pool::deallocate(static_cast<char*>(payload) - kHeader, size_of(payload) + kHeader);
}

void* pool_calloc(std::size_t count, std::size_t size, void* user) {
  if (size != 0 && count > std::numeric_limits<std::size_t>::max() / size) return nullptr;
  void* payload = pool_malloc(count * size, user);
  if (payload != nullptr) std::memset(payload, 0, count * size);
  return payload;
}

void* pool_realloc(void* payload, std::size_t size, void* user) {
  if (payload == nullptr) return pool_malloc(size, user);
  const std::size_t old = size_of(payload);
  if (size <= old) return payload;  // a block never shrinks: it is freed at its own size
  void* grown = pool_malloc(size, user);
  if (grown == nullptr) return nullptr;  // the old block stays valid, as realloc's does
  std::memcpy(grown, payload, old);
  pool_free(payload, user);
  return grown;
}

nghttp2_mem kPooled{nullptr, pool_malloc, pool_free, pool_calloc, pool_realloc};

}  // namespace

nghttp2_mem* pooled_h2_memory() {
  return &kPooled;
}

}  // namespace wg::http
