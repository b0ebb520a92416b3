#pragma once
// Why an HTTP session answers a request itself instead of handing it to the listener's
// handler, in the protocol's own terms. The handler turns each into the listener's answer
// (RequestHandler::refuse); the session only decides that it refuses, and whether the
// connection survives it.

namespace wg::http {

enum class Refusal {
  malformed,           // the head or the body framing does not parse (RFC 9112)
  framing_conflict,    // Transfer-Encoding together with Content-Length (RFC 9112 6.3)
  duplicate_host,      // more than one Host field
  missing_host,        // HTTP/1.1 without Host (RFC 9112 3.2)
  missing_authority,   // HTTP/2 with neither :authority nor Host
  authority_mismatch,  // HTTP/2 Host naming another entity than :authority (RFC 9113 8.3.1)
  target_too_long,     // the request target is over max_target_bytes
  head_too_large,      // the head is over max_header_bytes, or has too many fields
  body_too_large,      // a body over the listener's limit (any body, on most listeners)
  tunnel,              // CONNECT: no tunnels
  transfer_coding,     // a Transfer-Encoding other than chunked
  version,             // an HTTP major version other than 1
  handler_failed,      // the handler threw: a bug, answered instead of dropping the request
  overloaded,          // the answer would cross the output budget (answers waiting on slow readers)
};

inline constexpr Refusal kAllRefusals[] = {
    Refusal::malformed,       Refusal::framing_conflict,  Refusal::duplicate_host,
    Refusal::missing_host,    Refusal::missing_authority, Refusal::authority_mismatch,
    Refusal::target_too_long, Refusal::head_too_large,    Refusal::body_too_large,
    Refusal::tunnel,          Refusal::transfer_coding,   Refusal::version,
    Refusal::handler_failed,  Refusal::overloaded,
};

}  // namespace wg::http
