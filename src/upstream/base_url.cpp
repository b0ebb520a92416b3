#include "upstream/base_url.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <charconv>
#include <stdexcept>

#include "widget_gateway/common/redact.hpp"

namespace wg::upstream {

BaseUrl parse_base_url(std::string_view text) {
  auto fail = [&](std::string_view why) -> BaseUrl {
    throw std::invalid_argument("upstream.base_url \"" + redact_url(text) +
                                "\": " + std::string(why));
  };
  auto parsed = boost::urls::parse_absolute_uri(text);
  if (!parsed) return fail("not an absolute URL");
  const boost::urls::url_view url = *parsed;

  BaseUrl out;
  if (url.scheme_id() == boost::urls::scheme::https) {
    out.tls = true;
  } else if (url.scheme_id() != boost::urls::scheme::http) {
    return fail("scheme must be http or https");
  }
  if (!url.has_authority() || url.encoded_host().empty()) return fail("no host");
  // Credentials in a config URL would be sent nowhere (upstream needs none): refuse them
  // rather than silently dropping them.
  if (url.has_userinfo()) return fail("user info is not supported");
  if (url.has_query()) return fail("a query is not supported");
  if (url.has_fragment()) return fail("a fragment is not supported");

  const std::uint16_t default_port = out.tls ? 443 : 80;
  out.port = default_port;
  if (url.has_port() && !url.port().empty()) {
    // Checked by hand: port_number() silently wraps values above 65535.
    const std::string_view digits = url.port();
    unsigned long value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size() || value == 0 || value > 65535) {
      return fail("bad port");
    }
    out.port = static_cast<std::uint16_t>(value);
  }

  switch (url.host_type()) {
    case boost::urls::host_type::name:
      out.host = url.host_name();
      break;
    case boost::urls::host_type::ipv4:
      out.host = url.host_ipv4_address().to_string();
      out.host_is_name = false;
      break;
    case boost::urls::host_type::ipv6:
      out.host = url.host_ipv6_address().to_string();
      out.host_is_name = false;
      break;
    default:
      return fail("unsupported host");
  }
  if (out.host.empty()) return fail("no host");

  out.host_header = url.encoded_host();  // keeps IPv6 brackets, as Host requires
  if (out.port != default_port) out.host_header += ":" + std::to_string(out.port);

  std::string_view path = url.encoded_path();
  if (!path.empty() && path.front() != '/') return fail("bad path");
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.path_prefix = path;
  return out;
}

}  // namespace wg::upstream
