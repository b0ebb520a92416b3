#pragma once
// nghttp2's memory from the thread's field pool (request_fields.hpp): what a stream allocates
// (its object, its header fields, its frames) is freed when the stream ends and serves the
// next one on the thread, without a call into malloc. Blocks past the pool's largest class go
// to the heap as before.

#include <nghttp2/nghttp2.h>

namespace wg::http {

// For nghttp2_session_server_new3; valid for the life of the program.
nghttp2_mem* pooled_h2_memory();

}  // namespace wg::http
