#pragma once
// Where the load goes. wg-bench only ever talks to the local machine: a target (or a listen
// address for --serve-constant) must name a loopback address, and anything else is refused
// before a socket is opened. Names are never resolved: "localhost" means 127.0.0.1.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wg::bench {

struct Target {
  std::string address;  // numeric loopback address, e.g. "127.0.0.1" or "::1"
  std::uint16_t port = 0;
  std::string host_header;  // what requests carry in Host, e.g. "127.0.0.1:8080"
  bool tls = false;         // https://
};

// Parses "http://HOST:PORT[/]" or "https://HOST:PORT[/]" (also without the scheme: http).
// nullopt with `error` set when it is malformed, another scheme, or not a loopback address.
std::optional<Target> parse_target(std::string_view url, std::string& error);

// Parses "HOST:PORT" for a listener; the same loopback rule. Port 0 is allowed (ephemeral).
std::optional<Target> parse_listen(std::string_view host_port, std::string& error);

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(std::string_view host);

}  // namespace wg::bench
