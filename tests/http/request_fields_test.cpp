// Request header fields from per-thread free lists: blocks come back for the next request, the
// lists keep a bounded number, large blocks pass through, a block freed on another thread is
// taken in there, and Beast parses a head into them as into its own fields.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include "http/h2_memory.hpp"
#include "widget_gateway/http/request_fields.hpp"

using namespace wg::http;
namespace bhttp = boost::beast::http;

BOOST_AUTO_TEST_SUITE(request_fields_test)

BOOST_AUTO_TEST_CASE(a_freed_block_serves_the_next_allocation_of_its_class) {
  void* first = field_pool::allocate(100);
  field_pool::deallocate(first, 100);
  void* again = field_pool::allocate(120);  // the same class (up to 128 bytes)
  BOOST_TEST(again == first);
  void* other = field_pool::allocate(40);  // another class: not that block
  BOOST_TEST(other != first);
  field_pool::deallocate(again, 120);
  field_pool::deallocate(other, 40);
}

BOOST_AUTO_TEST_CASE(the_lists_keep_a_bounded_number_of_blocks) {
  const std::size_t before = field_pool::kept_blocks();
  // 100 blocks of one class freed: the list keeps 64 of them, the rest go back to the heap.
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) blocks.push_back(field_pool::allocate(200));
  const std::set<void*> freed(blocks.begin(), blocks.end());
  for (void* b : blocks) field_pool::deallocate(b, 200);
  BOOST_TEST(field_pool::kept_blocks() == before + 64);
  // The next 64 of that class are blocks freed above.
  blocks.clear();
  for (int i = 0; i < 64; ++i) blocks.push_back(field_pool::allocate(200));
  for (void* b : blocks) BOOST_TEST(freed.count(b) == 1u);
  BOOST_TEST(field_pool::kept_blocks() == before);
  for (void* b : blocks) field_pool::deallocate(b, 200);
}

BOOST_AUTO_TEST_CASE(large_blocks_are_not_kept) {
  void* big = field_pool::allocate(4096);
  field_pool::deallocate(big, 4096);
  void* small = field_pool::allocate(500);
  BOOST_TEST(small != big);  // a 4 KiB block never sits in the 512-byte list
  field_pool::deallocate(small, 500);
}

BOOST_AUTO_TEST_CASE(a_block_freed_on_another_thread_joins_that_threads_list) {
  void* block = field_pool::allocate(60);
  void* reused = nullptr;
  std::thread other([&] {
    field_pool::deallocate(block, 60);
    reused = field_pool::allocate(60);
    field_pool::deallocate(reused, 60);
  });
  other.join();
  BOOST_TEST(reused == block);
}

BOOST_AUTO_TEST_CASE(beast_parses_a_head_into_pooled_fields) {
  bhttp::request_parser<bhttp::string_body, FieldPoolAllocator<char>> parser;
  const std::string head =
      "GET /api/v1/widgets/widget/abc/remote HTTP/1.1\r\nHost: example.test\r\n"
      "Accept-Encoding: gzip, br\r\nX-Long: " +
      std::string(3000, 'x') + "\r\n\r\n";
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(head), ec);
  BOOST_TEST(!ec);
  BOOST_TEST(parser.is_header_done());
  const auto& req = parser.get();
  const RequestFields& fields = req;
  BOOST_TEST(req.target() == "/api/v1/widgets/widget/abc/remote");
  BOOST_TEST(fields[bhttp::field::host] == "example.test");
  BOOST_TEST(fields[bhttp::field::accept_encoding] == "gzip, br");
  BOOST_TEST(fields["x-long"].size() == 3000u);
}

// nghttp2's allocator over the same pool: malloc's alignment, calloc's zeroes, realloc's copy,
// and NULL (never an exception) when a size cannot be had.
BOOST_AUTO_TEST_CASE(nghttp2_memory_comes_from_the_pool) {
  nghttp2_mem& mem = *wg::http::pooled_h2_memory();
  void* small = mem.malloc(40, mem.mem_user_data);
  BOOST_REQUIRE(small != nullptr);
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(small) % alignof(std::max_align_t) == 0u);
  std::memset(small, 'a', 40);
  void* grown = mem.realloc(small, 300, mem.mem_user_data);
  BOOST_REQUIRE(grown != nullptr);
  BOOST_TEST(std::string(static_cast<char*>(grown), 40) == std::string(40, 'a'));
  BOOST_TEST(mem.realloc(grown, 10, mem.mem_user_data) == grown);  // never shrinks
  auto* zeroed = static_cast<unsigned char*>(mem.calloc(30, 8, mem.mem_user_data));
  BOOST_REQUIRE(zeroed != nullptr);
  BOOST_TEST(std::count(zeroed, zeroed + 240, 0) == 240);
  void* large = mem.malloc(100000, mem.mem_user_data);  // past the pool's classes: the heap
  BOOST_REQUIRE(large != nullptr);
  mem.free(large, mem.mem_user_data);
  mem.free(zeroed, mem.mem_user_data);
  mem.free(grown, mem.mem_user_data);
  mem.free(nullptr, mem.mem_user_data);
  // On a thread of its own, a freed block serves the next allocation of its size.
  std::thread([&mem] {
    void* first = mem.malloc(100, mem.mem_user_data);
    mem.free(first, mem.mem_user_data);
    BOOST_TEST(wg::http::field_pool::kept_blocks() == 1u);
    void* again = mem.malloc(90, mem.mem_user_data);
    BOOST_TEST(again == first);
    mem.free(again, mem.mem_user_data);
  }).join();
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  BOOST_TEST(mem.calloc(huge, 4, mem.mem_user_data) == nullptr);
  BOOST_TEST(mem.malloc(std::numeric_limits<std::size_t>::max() - 4, mem.mem_user_data) == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()  // request_fields_test
