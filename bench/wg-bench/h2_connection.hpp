#pragma once
// An HTTP/2 client connection of the load runner (load_context.hpp), over TLS (ALPN "h2"; a
// server that picks anything else fails the connect) or plain TCP with prior knowledge (h2c:
// the client preface straight away). nghttp2's client session does the framing; the
// connection feeds it what the socket reads and writes what it produces, one read and at most
// one write outstanding, driven by completion handlers like the HTTP/1.1 connection.
//
// Up to LoadOptions::streams requests are in flight at once (fewer when the server's
// SETTINGS_MAX_CONCURRENT_STREAMS says so), each in a fixed slot: closed loop, every free slot
// asks the pacing for its next request at once; open loop, the connection's schedule gives the
// intended times and a request whose time has come waits for a free slot (so it is late, and
// its latency, measured from the intended time, shows it). Deadlines are checked by the
// worker's sweep: a late stream is reset (RST_STREAM CANCEL) and counts as a timeout, the
// connection stays. A connection-level failure (read or write error, protocol error, the
// server's GOAWAY once its last streams are done) fails the streams still in flight and the
// next request reconnects; streams the server refused unprocessed (REFUSED_STREAM, or above
// a GOAWAY's last stream id) are sent once more on the next connection.
//
// Received bytes per answer: the HTTP/2 frames of its stream (9-byte frame headers plus
// payloads: HPACK-compressed header blocks and DATA), without TLS records or connection-level
// frames.

#include <memory>

#include "wg-bench/load_context.hpp"

namespace wg::bench {

std::unique_ptr<ClientConnection> make_h2_connection(Worker& worker, std::size_t connection_index);

}  // namespace wg::bench
