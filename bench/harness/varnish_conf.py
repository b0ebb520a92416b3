"""The Varnish VCL of the bench: the same TTLs as the other caches, 24 h grace."""


def vcl(stub_port, ttl_200, writer="bench/run.sh", import_std=False):
    """TTL_200 is a VCL duration expression: "3600000ms", or one that reads upstream's Expires
    with std.time (IMPORT_STD)."""
    imports = "import std;\n" if import_std else ""
    return f"""\
vcl 4.1;
# Written by {writer}: Varnish as an equivalent cache in front of the stub.
{imports}backend stub {{
  .host = "127.0.0.1";
  .port = "{stub_port}";
  .connect_timeout = 2s;
  .first_byte_timeout = 10s;
  .between_bytes_timeout = 10s;
}}
sub vcl_recv {{
  if (req.url !~ "^/api/v1/widgets/widget/") {{ return (synth(404)); }}
  if (req.method != "GET" && req.method != "HEAD") {{ return (pass); }}
  unset req.http.Cookie;
  return (hash);
}}
sub vcl_backend_response {{
  if (beresp.status == 200) {{
    set beresp.ttl = {ttl_200};
    set beresp.grace = 24h;  # stale while revalidating, and kept when a refresh fails
  }} elsif (beresp.status == 400 || beresp.status == 404) {{
    set beresp.ttl = 5m;
  }} else {{
    if (bereq.is_bgfetch) {{ return (abandon); }}  # keep serving the stale copy
    set beresp.ttl = 0s;
    set beresp.uncacheable = true;
  }}
  return (deliver);
}}
sub vcl_backend_error {{
  if (bereq.is_bgfetch) {{ return (abandon); }}
}}
sub vcl_deliver {{
  if (obj.hits > 0) {{ set resp.http.X-Cache = "hit"; }} else {{ set resp.http.X-Cache = "miss"; }}
}}
"""
