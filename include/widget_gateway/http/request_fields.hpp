#pragma once
// A request's header fields, in Beast's container, with their memory from small per-thread free
// lists. Beast allocates the start line and each field separately; freed when the request is
// done, the blocks serve the next request parsed on the thread, so a head costs no call into
// malloc once the thread has served one like it.

#include <boost/beast/http/fields.hpp>
#include <cstddef>

namespace wg::http {

namespace field_pool {
// Blocks of up to 512 bytes come from (and go back to) the calling thread's lists, at most 64
// kept per size class (64, 128, 256, 512 bytes): under 60 KiB per thread. Larger ones, and
// blocks beyond what a list keeps, go to operator new / delete. A block may be freed on
// another thread than the one that allocated it.
void* allocate(std::size_t bytes);
void deallocate(void* block, std::size_t bytes) noexcept;
// Blocks the calling thread's lists keep now.
std::size_t kept_blocks();
}  // namespace field_pool

template <class T>
class FieldPoolAllocator {
 public:
  using value_type = T;

  FieldPoolAllocator() noexcept = default;
  template <class U>
  FieldPoolAllocator(const FieldPoolAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) { return static_cast<T*>(field_pool::allocate(n * sizeof(T))); }
  void deallocate(T* block, std::size_t n) noexcept {
    field_pool::deallocate(block, n * sizeof(T));
  }

  template <class U>
  bool operator==(const FieldPoolAllocator<U>&) const noexcept {
    return true;
  }
};

using RequestFields = boost::beast::http::basic_fields<FieldPoolAllocator<char>>;

}  // namespace wg::http
