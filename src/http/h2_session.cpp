// HTTP/2 sessions (nghttp2 under Asio): being written.
