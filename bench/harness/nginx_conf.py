"""nginx configurations of the bench: proxy_cache in front of the stub (the cache equivalent to
the gateway's job) and static files (the constant bodies from disk)."""

import grp
import os
import pwd


def user_line():
    """As root, nginx would switch its worker to an account that cannot write under its
    folder: run it as the current user."""
    if os.geteuid() != 0:
        return ""
    user = pwd.getpwuid(os.geteuid())
    return f"user {user.pw_name} {grp.getgrgid(user.pw_gid).gr_name};\n"


def _head(folder, workers, what, writer):
    """What every configuration shares, up to the open http block: one process tree kept
    under FOLDER, access log off, long keep-alive."""
    return f"""\
# Written by {writer}: {what}.
{user_line()}worker_processes {workers};
daemon off;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
worker_rlimit_nofile 40000;
events {{ worker_connections 16384; }}
http {{
  access_log off;
  client_body_temp_path {folder}/tmp/body;
  proxy_temp_path {folder}/tmp/proxy;
  fastcgi_temp_path {folder}/tmp/fastcgi;
  uwsgi_temp_path {folder}/tmp/uwsgi;
  scgi_temp_path {folder}/tmp/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
"""


def proxy_cache(folder, port, stub_port, ttl, workers=1, reuseport=False,
                writer="bench/run.sh", ttl_comment=""):
    """proxy_cache keyed on the raw request URI, TTL for 200 (e.g. "3600s"), 5 min for 400/404,
    coalescing (proxy_cache_lock), stale copies while updating or on upstream errors."""
    listen = f"127.0.0.1:{port} backlog=4096" + (" reuseport" if reuseport else "")
    return _head(folder, workers, "nginx proxy_cache as an equivalent cache in front of the stub",
                 writer) + f"""\
  proxy_cache_path {folder}/cache levels=1:2 keys_zone=wg:32m max_size=1g inactive=1d use_temp_path=off;
  upstream stub {{
    server 127.0.0.1:{stub_port};
    keepalive 64;
  }}
  server {{
    listen {listen};
    location /api/v1/widgets/widget/ {{
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_connect_timeout 2s;
      proxy_read_timeout 10s;
      proxy_cache wg;
      proxy_cache_key $request_uri;
{ttl_comment}      proxy_cache_valid 200 {ttl};
      proxy_cache_valid 400 404 5m;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 10s;
      proxy_cache_lock_age 10s;
      proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
      proxy_cache_background_update on;
      add_header X-Cache-Status $upstream_cache_status always;
    }}
    location / {{ return 404; }}
  }}
}}
"""


def static_files(folder, port):
    """The constant server's two bodies as files under FOLDER/files (sendfile,
    open_file_cache): what the best web server does with bytes already on disk."""
    return _head(folder, 1, "nginx serving the constant bodies as static files",
                 "bench/run.sh") + f"""\
  sendfile on;
  tcp_nopush on;
  open_file_cache max=16 inactive=60s;
  default_type application/json;
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    root {folder}/files;
    location ~ ^/api/v1/widgets/widget/[^/]+/reviews/remote$ {{ try_files /reviews.json =404; }}
    location ~ ^/api/v1/widgets/widget/[^/]+/remote$ {{ try_files /widget.json =404; }}
    location / {{ return 404; }}
  }}
}}
"""
