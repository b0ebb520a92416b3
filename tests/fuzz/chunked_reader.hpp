#pragma once
// A client's bytes, read as a socket would deliver them: at most `chunk` bytes per read, then
// the end of the stream. A SyncReadStream for Beast's read functions.

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>
#include <cstddef>
#include <string_view>

namespace wg::fuzz {

class ChunkedReader {
 public:
  ChunkedReader(std::string_view bytes, std::size_t chunk) : bytes_(bytes), chunk_(chunk) {}

  template <class Buffers>
  std::size_t read_some(const Buffers& buffers, boost::system::error_code& ec) {
    ec = {};
    if (bytes_.empty()) {
      ec = boost::asio::error::eof;
      return 0;
    }
    const std::size_t n = boost::asio::buffer_copy(
        buffers, boost::asio::buffer(bytes_.data(), std::min(chunk_, bytes_.size())));
    bytes_.remove_prefix(n);
    return n;
  }
  template <class Buffers>
  std::size_t read_some(const Buffers& buffers) {
    boost::system::error_code ec;
    const std::size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  std::string_view bytes_;
  std::size_t chunk_;
};

}  // namespace wg::fuzz
