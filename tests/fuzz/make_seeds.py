#!/usr/bin/env python3
"""Writes the seed corpora of the http1_head, http1_scanner, h2_session and redis_reply fuzz targets
(tests/fuzz/corpus/<target>/seed-*), so that each seed reads as what it is. Inputs the fuzzer
found are added to the corpus directories by hand, next to these, and are left alone here.
    tests/fuzz/make_seeds.py
The first byte of every input is the target's own (how reads are split; see each target)."""
import pathlib
import struct

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"


def write(target, seeds):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("seed-*"):
        old.unlink()
    for name, data in seeds.items():
        (folder / f"seed-{name}").write_bytes(data)


# ------------------------------------------------------------------------------ HTTP/1 heads
def http1_scanner():
    """What the differential target adds: the corners where the two readers could part."""
    whole = b"\x3f"
    byte = b"\x00"
    get = b"GET /api/v1/widgets/widget/abc/remote HTTP/1.1\r\nHost: gw\r\n\r\n"
    return {
        "keep-alive-10": whole + b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get,
        "two-connection-lines": whole
        + b"GET / HTTP/1.1\r\nHost: a\r\nConnection: x\r\nConnection: close\r\n\r\n"
        + get,
        "proxy-connection": whole + b"GET / HTTP/1.1\r\nHost: a\r\nProxy-Connection: close\r\n\r\n" + get,
        "length-list": whole + b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\n\r\n{}",
        "length-zero": whole + b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n" + get,
        "fold-twice": whole + b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\tc \r\nY:\r\n d\r\n\r\n",
        "version-split": byte + b"GET /x HTTP/1.7\r\nHost: gw\r\n\r\n" + get,
        "crlf-split": byte + b"\r\n\r\n" + get,
        "obs-text": whole + b"GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n",
        "pipelined-bytewise": byte + get + get + get,
    }


def http1():
    whole = b"\x3f"  # reads of 4222 bytes: each input arrives in one piece
    byte = b"\x00"  # one byte per read
    get = b"GET /api/v1/widgets/widget/abc/remote HTTP/1.1\r\nHost: gw\r\n\r\n"
    return {
        "get": whole + get,
        "get-bytewise": byte + get,
        "pipelined": whole + get + b"\r\n" + get.replace(b"HTTP/1.1", b"HTTP/1.0"),
        "http10-no-host": whole + b"GET / HTTP/1.0\r\n\r\n",
        "http12-rewritten": whole + b"GET /x HTTP/1.2\r\nHost: gw\r\n\r\n",
        "http20-line": whole + b"GET /x HTTP/2.0\r\nHost: gw\r\n\r\n",
        "http30-head": whole + b"HEAD /x HTTP/3.0\r\nHost: gw\r\n\r\n",
        "two-hosts": whole + b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "no-host": whole + b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n",
        "te-and-cl": whole
        + b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
        "te-gzip-chunked": whole
        + b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        "te-split": whole
        + b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        "chunked-body": whole
        + b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "content-length": whole + b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}",
        "connect": whole + b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
        "long-target": whole + b"GET /" + b"a" * 300 + b" HTTP/1.1\r\nHost: a\r\n\r\n",
        "long-line": whole + b"GET /" + b"a" * 1100 + b" HTTP/1.1\r\nHost: a\r\n\r\n",
        "many-fields": whole
        + b"GET / HTTP/1.1\r\nHost: a\r\n"
        + b"".join(b"X-%d: v\r\n" % i for i in range(101))
        + b"\r\n",
        "big-field": whole + b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"v" * 1100 + b"\r\n\r\n",
        "leading-crlf": whole + b"\r\n\r\n\r\n" + get,
        "h2-preface": whole + b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "obs-fold": whole + b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
        "bad-name": whole + b"GET / HTTP/1.1\r\nHost: a\r\nX Y: z\r\n\r\n",
        "close": whole + b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" + get,
    }


# ------------------------------------------------------------------------------ HTTP/2
def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WINDOW, CONT = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 0x1, 0x1, 0x4, 0x8, 0x20


def hpack_int(value, prefix_bits, first):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name, value):
    """A literal field without indexing, new name, no Huffman coding."""
    return b"\x00" + hpack_int(len(name), 7, 0) + name + hpack_int(len(value), 7, 0) + value


def request(method=b"GET", path=b"/api/v1/widgets/widget/abc/remote", authority=b"gw", extra=()):
    block = literal(b":method", method) + b"\x86"  # :scheme http (static index 6)
    if path is not None:
        block += literal(b":path", path)
    if authority is not None:
        block += b"\x41" + hpack_int(len(authority), 7, 0) + authority  # :authority, indexed
    for name, value in extra:
        block += literal(name, value)
    return block


def settings(*pairs):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def h2():
    plain = b"\x3f"  # the preface is put in front; large reads
    own = b"\x7f"  # the input brings its own preface
    small = b"\x00"  # the preface is put in front; one byte per read
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    hello = settings() + frame(SETTINGS, ACK, 0)
    get = frame(HEADERS, END_STREAM | END_HEADERS, 1, request())
    return {
        "get": plain + hello + get,
        "get-bytewise": small + hello + get,
        "own-preface": own + preface + hello + get,
        "bad-preface": own + b"GET / HTTP/1.1\r\n\r\n",
        "streams": plain
        + hello
        + b"".join(
            frame(HEADERS, END_STREAM | END_HEADERS, i, request(path=b"/p" * (i % 5 + 1)))
            for i in range(1, 16, 2)
        )
        + frame(WINDOW, 0, 0, struct.pack(">I", 1 << 20)),
        "too-many-streams": plain
        + hello
        + b"".join(
            frame(HEADERS, END_STREAM | END_HEADERS, i, request(path=b"/p" * (i % 5 + 1)))
            for i in range(1, 40, 2)
        ),
        "window-zero": plain
        + settings((4, 0))  # SETTINGS_INITIAL_WINDOW_SIZE 0
        + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(path=b"/abcdef"))
        + frame(WINDOW, 0, 1, struct.pack(">I", 1))
        + frame(WINDOW, 0, 0, struct.pack(">I", 100000)),
        "window-updates": plain
        + hello
        + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(path=b"/abcdef"))
        + frame(WINDOW, 0, 1, struct.pack(">I", 1 << 20))
        + frame(WINDOW, 0, 0, struct.pack(">I", 1 << 20)),
        "head": plain + hello + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(method=b"HEAD")),
        "post-body": plain
        + hello
        + frame(HEADERS, END_HEADERS, 1, request(method=b"POST", extra=[(b"content-length", b"2")]))
        + frame(DATA, END_STREAM, 1, b"{}"),
        "content-length-0": plain
        + hello
        + frame(HEADERS, END_HEADERS, 1, request(extra=[(b"content-length", b"0")]))
        + frame(DATA, END_STREAM, 1),
        "connect": plain
        + hello
        + frame(HEADERS, END_HEADERS, 1, literal(b":method", b"CONNECT") + b"\x41\x04a:443"),
        "two-hosts": plain
        + hello
        + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(extra=[(b"host", b"a"), (b"host", b"b")])),
        "authority-mismatch": plain
        + hello
        + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(extra=[(b"host", b"other")])),
        "host-only": plain
        + hello
        + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(authority=None, extra=[(b"host", b"gw")])),
        "no-authority": plain + hello + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(authority=None)),
        "cookies": plain
        + hello
        + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(extra=[(b"cookie", b"a=1"), (b"cookie", b"b=2")])),
        "long-path": plain
        + hello
        + frame(HEADERS, END_STREAM | END_HEADERS, 1, request(path=b"/" + b"a" * 300)),
        "many-fields": plain
        + hello
        + frame(
            HEADERS,
            END_STREAM | END_HEADERS,
            1,
            request(extra=[(b"x-%d" % i, b"v") for i in range(101)]),
        ),
        "continuation": plain
        + hello
        + frame(HEADERS, END_STREAM, 1, request()[:10])
        + frame(CONT, 0, 1, request()[10:20])
        + frame(CONT, END_HEADERS, 1, request()[20:]),
        "continuation-flood": plain
        + hello
        + frame(HEADERS, END_STREAM, 1, request()[:4])
        + b"".join(frame(CONT, 0, 1, literal(b"x", b"y")) for _ in range(12)),
        "hpack-bomb": plain
        + hello
        + frame(
            HEADERS,
            END_STREAM | END_HEADERS,
            1,
            request() + b"\x40\x01x" + hpack_int(1000, 7, 0) + b"v" * 1000 + b"\xbe" * 60,
        ),
        "rapid-reset": plain
        + hello
        + b"".join(
            frame(HEADERS, END_STREAM | END_HEADERS, i, request()) + frame(RST, 0, i, struct.pack(">I", 8))
            for i in range(1, 80, 2)
        ),
        "ping-flood": plain + hello + b"".join(frame(PING, 0, 0, b"12345678") for _ in range(60)),
        "settings": plain
        + settings((1, 4096), (2, 0), (3, 1), (4, 65535), (5, 16384), (6, 1000), (9, 1))
        + frame(SETTINGS, ACK, 0)
        + get,
        "priority-padded": plain
        + hello
        + frame(HEADERS, END_STREAM | END_HEADERS | PADDED | PRIO, 1, b"\x02" + struct.pack(">IB", 0, 15) + request() + b"\x00\x00")
        + frame(PRIORITY, 0, 3, struct.pack(">IB", 1, 15)),
        "goaway": plain + hello + get + frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0)),
        "window-overflow": plain + hello + get + frame(WINDOW, 0, 0, struct.pack(">I", 0x7FFFFFFF)),
        "bad-frame-size": plain + hello + frame(PING, 0, 0, b"123"),
        "unknown-frame": plain + hello + frame(0x21, 0, 0, b"xyz") + get,
        "trailers": plain
        + hello
        + frame(HEADERS, END_HEADERS, 1, request(method=b"POST"))
        + frame(DATA, 0, 1, b"ab")
        + frame(HEADERS, END_STREAM | END_HEADERS, 1, literal(b"x-trailer", b"1")),
    }


# ------------------------------------------------------------------------------ Redis replies
def redis():
    whole = b"\x1f"  # reads of 32 bytes
    byte = b"\x00"  # one byte per read
    slots = (
        b"*2\r\n"
        b"*3\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$40\r\n" + b"a" * 40 + b"\r\n"
        b"*4\r\n:8192\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n*2\r\n$9\r\n127.0.0.1\r\n:7004\r\n"
    )
    return {
        "status": whole + b"+OK\r\n",
        "error": whole + b"-ERR unknown command\r\n",
        "moved": whole + b"-MOVED 3999 127.0.0.1:6381\r\n",
        "ask-ipv6": whole + b"-ASK 16383 ::1:7000\r\n",
        "moved-bad-slot": whole + b"-MOVED 16384 h:1\r\n",
        "integer": whole + b":42\r\n:-7\r\n",
        "integer-overflow": whole + b":99999999999999999999999\r\n",
        "bulk": whole + b"$5\r\nhello\r\n$0\r\n\r\n",
        "bulk-binary": byte + b"$6\r\na\r\n\x00b\xff\r\n",
        "nil": whole + b"$-1\r\n*-1\r\n",
        "empty-array": whole + b"*0\r\n",
        "mget": whole + b"*3\r\n$3\r\nabc\r\n$-1\r\n$2\r\nxy\r\n",
        "cluster-slots": whole + slots,
        "cluster-slots-bytewise": byte + slots,
        "cluster-slots-bad-port": whole + b"*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:70000\r\n",
        "nested": whole + b"*1\r\n" * 8 + b":1\r\n",
        "pipeline": whole + b"+OK\r\n:1\r\n$3\r\nfoo\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n-ERR x\r\n",
        "command": whole + b"*3\r\n$4\r\nEVAL\r\n$1\r\n1\r\n$5\r\n{a}bc\r\n",
        "bad-type": whole + b"!oops\r\n",
        "negative-bulk": whole + b"$-5\r\n",
        "huge-array": whole + b"*2147483647\r\n",
        "huge-bulk": whole + b"$2147483647\r\nab",
        "long-status": whole + b"+" + b"s" * 3000 + b"\r\n",
    }


if __name__ == "__main__":
    write("http1_head", http1())
    write("http1_scanner", {**http1(), **http1_scanner()})
    write("h2_session", h2())
    write("redis_reply", redis())
