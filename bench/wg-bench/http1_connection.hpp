#pragma once
// An HTTP/1.1 client connection of the load runner (load_context.hpp), over plain TCP or TLS
// (transport.hpp; the run's TlsClient in RunShared decides): one request at a time, written
// from the pool's pre-built bytes, the answer read with ResponseReader into the
// connection's own buffer. A small state machine driven by completion handlers (no coroutine
// frames, no per-request allocation); deadlines are checked by the worker's sweep instead of
// re-arming a timer per request. Errors close the socket, are counted by kind, and the next
// request reconnects.

#include <memory>

#include "wg-bench/load_context.hpp"

namespace wg::bench {

std::unique_ptr<ClientConnection> make_http1_connection(Worker& worker,
                                                        std::size_t connection_index);

}  // namespace wg::bench
