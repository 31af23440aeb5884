#!/usr/bin/env python3
"""chgateway: the ClickHouse HTTP interface, served by an embedded chDB engine.

This process owns one chDB database directory and answers the subset of the
ClickHouse HTTP protocol that ClickHouse clients (in particular the Rust
`clickhouse` crate 0.15.x, and curl) rely on, so they can talk to an embedded
database exactly as they would to a ClickHouse server:

* ``GET /ping``, ``GET /replicas_status`` and ``GET /`` answer ``Ok.``.
* Queries arrive as ``POST /`` (or ``GET /?query=``).  The SQL comes from the
  ``query`` URL parameter and/or the body, or from a ``multipart/form-data``
  body whose other parts carry ``param_<name>`` values for ``{name:Type}``
  placeholders.  ``database`` and ``default_format`` are honoured; every other
  URL parameter that is not an HTTP control is a setting for that request only
  (unknown settings fail with code 115).  As in ClickHouse, a GET runs with
  ``readonly=2``.
* ``INSERT INTO t[(cols)] FORMAT F`` in the URL with the rows in the body is
  spooled to a file and committed with ``INSERT ... FROM INFILE`` once the
  whole body has arrived, so an aborted upload commits nothing and errors
  raised inside the engine (constraints, materialized views) reach the client.
* ``decompress=1`` bodies (ClickHouse native LZ4 blocks with CityHash128
  checksums) are decoded; ``compress=1`` answers in the same framing.
* Errors look like ClickHouse's: the HTTP status ClickHouse would use, an
  ``X-ClickHouse-Exception-Code`` header and a ``Code: N. DB::Exception: ...``
  text body.

Not supported: HTTP sessions (``session_id`` is ignored), external tables in
multipart bodies, zstd request compression, compressed replies via
``Accept-Encoding`` (replies are always plain, which every client accepts),
and streaming replies (replies are buffered and sent with Content-Length).

Usage::

    python chgateway.py --path DB_DIR [--host 127.0.0.1] [--port 8123]
                        [--log-level info]

Once listening, exactly one line ``listening HOST:PORT`` is printed to stdout.
SIGTERM or SIGINT stops accepting, lets in-flight requests finish (bounded by
``--shutdown-timeout``), closes the engine and exits 0.
"""

from __future__ import annotations

import argparse
import collections
import email.utils
import io
import logging
import os
import re
import signal
import socket
import socketserver
import struct
import sys
import tempfile
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Union
from urllib.parse import parse_qsl

import lz4.block
import lz4.frame
from clickhouse_cityhash.cityhash import CityHash128

import chdb

if TYPE_CHECKING:
    from chdb.state.sqlitelike import Connection as EngineConnection

log = logging.getLogger("chgateway")

ENGINE_VERSION = chdb.engine_version

# Bytes as they travel between the socket, the decoders and the engine.
Buffer = Union[bytes, bytearray, memoryview]
# Where decoded request bytes go (a list's append, a file's write, a decoder).
Sink = Callable[[Buffer], object]
# A chDB query result (a C extension type with no importable name).
EngineResult = Any
# What pooled connections are keyed by: (database, ordered settings).
PoolKey = tuple[str, tuple[tuple[str, str], ...]]

# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

# Names of the error codes the gateway raises itself (engine errors already
# carry their name in the message).
_ERROR_NAMES = {
    33: "CANNOT_READ_ALL_DATA",
    36: "BAD_ARGUMENTS",
    39: "TOO_LARGE_SIZE_COMPRESSED",
    40: "CHECKSUM_DOESNT_MATCH",
    48: "NOT_IMPLEMENTED",
    62: "SYNTAX_ERROR",
    73: "UNKNOWN_FORMAT",
    89: "UNKNOWN_COMPRESSION_METHOD",
    115: "UNKNOWN_SETTING",
    271: "CANNOT_DECOMPRESS",
    1001: "STD_EXCEPTION",
}


def _status_table() -> dict[int, int]:
    # The HTTP status ClickHouse's HTTP handler picks for an exception code
    # (exceptionCodeToHTTPStatus); anything not listed is a 500.
    groups = {
        401: [194],  # REQUIRED_PASSWORD
        403: [192, 193, 516, 512, 497],  # UNKNOWN_USER .. ACCESS_DENIED
        400: [36, 427, 6, 25, 26, 38, 41, 72, 441, 675, 676, 27, 376, 15, 44,
              37, 123, 8, 167, 168, 223, 62, 117, 53, 321],
        404: [60, 46, 47, 50, 56, 81, 115, 152, 63, 73, 336, 78, 511],
        413: [229],  # QUERY_IS_TOO_LARGE
        501: [48],  # NOT_IMPLEMENTED
        503: [209, 76, 439],  # SOCKET_TIMEOUT, CANNOT_OPEN_FILE, CANNOT_SCHEDULE_TASK
        411: [381],  # HTTP_LENGTH_REQUIRED
        408: [159],  # TIMEOUT_EXCEEDED
        415: [779],  # UNSUPPORTED_MEDIA_TYPE
    }
    return {code: status for status, codes in groups.items() for code in codes}


_HTTP_STATUS_FOR_CODE = _status_table()

_REASONS = {
    200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
    404: "Not Found", 408: "Request Timeout", 411: "Length Required",
    413: "Payload Too Large", 414: "URI Too Long", 415: "Unsupported Media Type",
    431: "Request Header Fields Too Large", 500: "Internal Server Error",
    501: "Not Implemented", 503: "Service Unavailable",
    505: "HTTP Version Not Supported",
}

_ENGINE_CODE_RE = re.compile(r"Code: (\d+)\. ")


class ClickHouseError(Exception):
    """An error to report to the client in ClickHouse's shape.

    ``text`` is the full ``Code: N. DB::Exception: ... (NAME)`` message;
    ``close`` asks for the HTTP connection to be closed after the reply
    (used when the request framing can no longer be trusted).
    """

    def __init__(self, code: int, text: str, status: int | None = None, close: bool = False) -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.status = status or _HTTP_STATUS_FOR_CODE.get(code, 500)
        self.close = close

    @classmethod
    def make(cls, code: int, message: str, **kw: Any) -> ClickHouseError:
        name = _ERROR_NAMES.get(code, "UNKNOWN_EXCEPTION")
        return cls(code, f"Code: {code}. DB::Exception: {message}. ({name})", **kw)

    @classmethod
    def from_engine(cls, exc: BaseException) -> ClickHouseError:
        text = str(exc).strip()
        m = _ENGINE_CODE_RE.match(text)
        if m:
            return cls(int(m.group(1)), text)
        return cls.make(1001, text or type(exc).__name__)


class ClientGone(Exception):
    """The client closed the connection (or stalled) before the request ended."""


# ---------------------------------------------------------------------------
# chDB connection pool
# ---------------------------------------------------------------------------


def quote_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def quote_ident(name: str) -> str:
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


class ConnectionPool:
    """Idle chDB connections, keyed by (database, settings).

    chDB connections to one path are independent sessions: the current
    database and SET settings stay with the connection.  Opening one is cheap
    (~0.15 ms) but applying settings costs a query each, so connections are
    kept per key and reused.  A connection that saw an error is never reused,
    because chDB leaks a failed query's partial output into the next result on
    the same connection.

    One extra "anchor" connection is held for the life of the pool: chDB shuts
    the engine down when its last connection closes, and restarting it would
    turn every error (which drops a connection) into an engine restart.
    """

    def __init__(self, path: str, max_idle: int = 64, max_idle_per_key: int = 16) -> None:
        self._path = path
        self._max_idle = max_idle
        self._max_idle_per_key = max_idle_per_key
        self._lock = threading.Lock()
        # key -> stack of idle connections; ordered from least to most
        # recently used key, so eviction drops the coldest keys first.
        self._idle: collections.OrderedDict[PoolKey, list[EngineConnection]] = collections.OrderedDict()
        self._n_idle = 0
        self._closed = False
        # The first connection starts the engine: its start-up options go with it.
        self._anchor: EngineConnection | None = chdb.connect(engine_uri(path))

    def acquire(self, key: PoolKey) -> EngineConnection:
        with self._lock:
            stack = self._idle.get(key)
            if stack:
                conn = stack.pop()
                self._n_idle -= 1
                if not stack:
                    del self._idle[key]
                return conn
        # Opening happens outside the lock so a slow SET never blocks others.
        return self._open(key)

    def _open(self, key: PoolKey) -> EngineConnection:
        database, settings = key
        conn = chdb.connect(self._path)
        try:
            if database:
                conn.query(f"USE {quote_ident(database)}", "TabSeparated")
            # `settings` is ordered with readonly last (see pool_key): once
            # readonly=1 is set no other setting may change.
            for name, value in settings:
                conn.query(f"SET {name} = {quote_string(value)}", "TabSeparated")
        except Exception as exc:
            conn.close()
            raise ClickHouseError.from_engine(exc) from None
        return conn

    def release(self, key: PoolKey, conn: EngineConnection, reusable: bool) -> None:
        """Return a connection; it is closed unless it is clean and fits."""
        victims = [conn] if not reusable else self._keep(key, conn)
        for victim in victims:
            victim.close()

    def _keep(self, key: PoolKey, conn: EngineConnection) -> list[EngineConnection]:
        """Puts `conn` on its key's stack; returns the connections to close
        (`conn` itself if it does not fit, else any evicted ones)."""
        victims = []
        with self._lock:
            stack = self._idle.get(key)
            if self._closed or (stack is not None and len(stack) >= self._max_idle_per_key):
                return [conn]
            if stack is None:
                stack = self._idle[key] = []
            else:
                self._idle.move_to_end(key)
            stack.append(conn)
            self._n_idle += 1
            while self._n_idle > self._max_idle:
                old_key, old_stack = next(iter(self._idle.items()))
                victims.append(old_stack.pop(0))
                self._n_idle -= 1
                if not old_stack:
                    del self._idle[old_key]
        return victims

    def close(self, keep_anchor: bool = False) -> None:
        """Close every idle connection, then (normally) the anchor.

        ``keep_anchor`` is for a shutdown that timed out with queries still
        running: closing the engine under them could crash the process.
        """
        with self._lock:
            self._closed = True
            stacks = list(self._idle.values())
            self._idle.clear()
            self._n_idle = 0
        for stack in stacks:
            for conn in stack:
                conn.close()
        if not keep_anchor and self._anchor is not None:
            self._anchor.close()
            self._anchor = None


# ---------------------------------------------------------------------------
# Request body decoding
# ---------------------------------------------------------------------------

_NATIVE_HEADER = 16 + 9  # checksum, method byte, compressed size, raw size
_NATIVE_SIZES = struct.Struct("<II")
_CHECKSUM = struct.Struct("<QQ")
_MASK64 = (1 << 64) - 1
_MAX_NATIVE_BLOCK = 1 << 30  # ClickHouse's DBMS_MAX_COMPRESSED_SIZE
_METHOD_NONE, _METHOD_LZ4, _METHOD_ZSTD = 0x02, 0x82, 0x90


def native_checksum(block: Buffer) -> bytes:
    """The 16 checksum bytes ClickHouse puts before a compressed block.

    ClickHouse writes CityHash128's low half then its high half, each little
    endian; the Python binding returns them as one int with the halves
    swapped (low half in the upper 64 bits).
    """
    h = CityHash128(block)
    return _CHECKSUM.pack(h >> 64, h & _MASK64)


def _check_native_sizes(csize: int, rsize: int) -> None:
    if csize < 9 or csize > _MAX_NATIVE_BLOCK or rsize > _MAX_NATIVE_BLOCK:
        raise ClickHouseError.make(
            39, f"Too large size of compressed block: {csize} (raw {rsize})")


def _check_native_checksum(reference: Buffer, block: bytes) -> None:
    expected = native_checksum(block)
    if expected != reference:
        raise ClickHouseError.make(
            40, "Checksum doesn't match: corrupted data. Reference: "
            f"{bytes(reference).hex()}. Actual: {expected.hex()}")


def _decode_native_payload(method: int, payload: memoryview, rsize: int) -> Buffer:
    if method == _METHOD_LZ4:
        try:
            raw = lz4.block.decompress(payload, uncompressed_size=rsize)
        except lz4.block.LZ4BlockError as exc:
            raise ClickHouseError.make(271, f"Cannot decompress LZ4 block: {exc}") from None
        if len(raw) != rsize:
            raise ClickHouseError.make(271, "Cannot decompress LZ4 block: size mismatch")
        return raw
    if method == _METHOD_NONE:
        return payload
    if method == _METHOD_ZSTD:
        raise ClickHouseError.make(89, "ZSTD compressed bodies are not supported by this gateway")
    raise ClickHouseError.make(89, f"Unknown compression method: {method:#04x}")


class NativeBlockDecoder:
    """Decodes a ``decompress=1`` body as it streams in.

    The body is a sequence of blocks: checksum (16 bytes) | method (1) |
    compressed size incl. these 9 header bytes (u32 LE) | raw size (u32 LE) |
    payload.  Blocks do not line up with HTTP chunks, so bytes are buffered
    until a whole block is present.
    """

    def __init__(self, sink: Sink, verify: bool = True) -> None:
        self._sink = sink
        self._verify = verify
        self._buf = bytearray()

    def feed(self, data: Buffer) -> None:
        buf = self._buf
        buf += data
        pos, end_of_data = 0, len(buf)
        while end_of_data - pos >= _NATIVE_HEADER:
            method = buf[pos + 16]
            csize, rsize = _NATIVE_SIZES.unpack_from(buf, pos + 17)
            _check_native_sizes(csize, rsize)
            end = pos + 16 + csize
            if end > end_of_data:
                break
            # One copy of the block: hashing and decompression want contiguous
            # immutable bytes, and the buffer is about to be trimmed.
            block = bytes(buf[pos + 16:end])
            if self._verify:
                _check_native_checksum(buf[pos:pos + 16], block)
            self._sink(_decode_native_payload(method, memoryview(block)[9:], rsize))
            pos = end
        if pos:
            del buf[:pos]

    def finish(self) -> None:
        if self._buf:
            raise ClickHouseError.make(
                33, f"Truncated compressed block at end of body ({len(self._buf)} bytes left)")


class ContentDecoder:
    """Undoes a request ``Content-Encoding`` (gzip, deflate or lz4 frame)."""

    def __init__(self, encoding: str, sink: Sink) -> None:
        self._sink = sink
        self._dec: Any
        self._errors: tuple[type[BaseException], ...]
        if encoding in ("gzip", "x-gzip", "deflate"):
            # 32+15: accept a gzip or zlib header automatically.
            self._dec = zlib.decompressobj(32 + 15)
            self._errors = (zlib.error,)
        elif encoding == "lz4":
            self._dec = lz4.frame.LZ4FrameDecompressor()
            self._errors = (RuntimeError,)
        else:
            raise ClickHouseError.make(48, f"Unsupported Content-Encoding: {encoding}")

    def feed(self, data: Buffer) -> None:
        try:
            out = self._dec.decompress(data)
        except self._errors as exc:
            raise ClickHouseError.make(271, f"Cannot decompress request body: {exc}") from None
        if out:
            self._sink(out)

    def finish(self) -> None:
        if not self._dec.eof:
            raise ClickHouseError.make(271, "Cannot decompress request body: truncated stream")


class BodyReader:
    """Reads one request's body from the connection.

    The framing (chunked or Content-Length) is undone here, since http.server
    does not decode chunked bodies; ``pump`` and ``read`` then undo the
    Content-Encoding and, if asked, the native compression.  ``headers`` are
    the request's headers with lower-cased names.

    ``state`` is "unread", "reading" or "done": an error reply must leave the
    connection in step, so a body nobody read yet is skipped first (see
    ``skip_unread``), and one abandoned half-way means the connection cannot
    be kept.
    """

    def __init__(self, rfile: io.BufferedIOBase, headers: dict[str, str]) -> None:
        self._rfile = rfile
        self._h = headers
        self.state = "unread" if self.has_body() else "done"

    def has_body(self) -> bool:
        te = self._h.get("transfer-encoding")
        if te:
            return True
        cl = self._h.get("content-length")
        return bool(cl and cl.strip() != "0")

    def raw(self) -> Iterator[bytes]:
        """Yields the request body as it arrives (chunked or Content-Length).

        Raises ClientGone if the connection ends before the body does (e.g. a
        dropped insert: hyper closes without sending the final 0 chunk).
        """
        te = self._h.get("transfer-encoding")
        self.state = "reading"
        try:
            if te:
                yield from self._chunked(te)
            else:
                yield from self._sized(self._h.get("content-length"))
            self.state = "done"
        except (TimeoutError, ConnectionError) as exc:
            raise ClientGone(str(exc)) from None

    def _chunked(self, te: str) -> Iterator[bytes]:
        if te.replace(" ", "").lower().split(",")[-1] != "chunked":
            raise ClickHouseError.make(48, f"Unsupported Transfer-Encoding: {te}", close=True)
        while True:
            size = self._chunk_size()
            if size == 0:
                break
            yield from self._exactly(size, "connection closed inside a chunk")
            if self._rfile.readline(3) not in (b"\r\n", b"\n"):
                raise ClickHouseError.make(36, "Malformed chunked body: missing CRLF", close=True)
        self._skip_trailers()

    def _chunk_size(self) -> int:
        line = self._rfile.readline(1024)
        if not line:
            raise ClientGone("connection closed inside a chunked body")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            size = -1
        if size < 0 or not line.endswith(b"\n"):
            raise ClickHouseError.make(36, f"Malformed chunk header {line[:40]!r}", close=True)
        return size

    def _skip_trailers(self) -> None:
        # Trailer fields (ignored) end with an empty line.
        while True:
            line = self._rfile.readline(8192)
            if not line:
                raise ClientGone("connection closed inside chunked trailers")
            if line in (b"\r\n", b"\n"):
                break

    def _sized(self, cl: str | None) -> Iterator[bytes]:
        if not cl:
            return
        try:
            remaining = int(cl)
            if remaining < 0:
                raise ValueError
        except ValueError:
            raise ClickHouseError.make(36, f"Invalid Content-Length: {cl!r}", close=True) from None
        yield from self._exactly(remaining, "connection closed inside the body")

    def _exactly(self, size: int, gone: str) -> Iterator[bytes]:
        """Yields the next `size` bytes in pieces of at most 1 MiB."""
        while size:
            data = self._rfile.read(min(size, 1 << 20))
            if not data:
                raise ClientGone(gone)
            size -= len(data)
            yield data

    def _decoders(self, sink: Sink, decompress: bool, verify: bool
                  ) -> tuple[Sink, list[NativeBlockDecoder | ContentDecoder]]:
        """Chains the decoders the request needs in front of `sink`; returns
        the head of the chain and the decoders, innermost first."""
        decoders: list[NativeBlockDecoder | ContentDecoder] = []
        if decompress:
            native = NativeBlockDecoder(sink, verify)
            decoders.append(native)
            sink = native.feed
        encoding = (self._h.get("content-encoding") or "").strip().lower()
        if encoding and encoding != "identity":
            content = ContentDecoder(encoding, sink)
            decoders.append(content)
            sink = content.feed
        return sink, decoders

    def pump(self, sink: Sink, decompress: bool = False, verify: bool = True) -> None:
        """Feeds the decoded request body to `sink`.

        On a decoding error the rest of the body is still read (and thrown
        away) so the keep-alive connection stays in step with the client.
        """
        sink, decoders = self._decoders(sink, decompress, verify)
        pieces = self.raw()
        try:
            for piece in pieces:
                sink(piece)
            for dec in reversed(decoders):
                dec.finish()
        except ClickHouseError as err:
            if not err.close:
                for _ in pieces:
                    pass
            raise

    def read(self, decompress: bool = False, verify: bool = True) -> bytes:
        """The whole decoded request body."""
        te = self._h.get("transfer-encoding")
        cl = self._h.get("content-length")
        if not te and not decompress and not self._h.get("content-encoding") and cl and cl.isdigit():
            return self._read_plain(int(cl))
        parts: list[Buffer] = []
        self.pump(parts.append, decompress, verify)
        return b"".join(parts)

    def _read_plain(self, n: int) -> bytes:
        # Fast path for the common small SQL body.
        self.state = "reading"
        try:
            data = self._rfile.read(n)
        except (TimeoutError, ConnectionError) as exc:
            raise ClientGone(str(exc)) from None
        if len(data) != n:
            raise ClientGone("connection closed inside the body")
        self.state = "done"
        return data

    def discard(self) -> None:
        if self.has_body():
            for _ in self.raw():
                pass

    def skip_unread(self) -> bool:
        """After an error: reads and drops a body nobody read.  Returns False
        if the connection is out of step with the client and must be closed."""
        if self.state == "unread":
            try:
                self.discard()
            except (ClientGone, ClickHouseError):
                return False
        elif self.state == "reading":
            # Stopped half-way (bad framing): the stream cannot be resynced.
            return False
        return True


# ---------------------------------------------------------------------------
# SQL helpers
# ---------------------------------------------------------------------------

# URL (and form) parameters that steer the HTTP interface rather than being
# query settings.  Everything else (except param_*) is applied as a setting.
CONTROL_PARAMS = frozenset({
    "query", "database", "default_format", "decompress", "compress",
    "query_id", "session_id", "session_timeout", "session_check", "role",
    "user", "password", "quota_key", "enable_http_compression",
    "http_zlib_compression_level", "wait_end_of_query", "http_wait_end_of_query",
    "buffer_size", "http_response_buffer_size", "send_progress_in_http_headers",
    "http_headers_progress_interval_ms", "add_http_cors_header",
    "http_native_compression_disable_checksumming_on_decompress",
    "cancel_http_readonly_queries_on_client_close", "stacktrace",
    "http_write_exception_in_output_format", "client_protocol_version",
    "http_max_fields", "http_max_field_name_size", "http_max_field_value_size",
    "http_max_multipart_form_data_size", "http_max_uri_size",
    "http_max_request_param_data_size", "http_response_headers",
})

_SETTING_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FORMAT_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# Output "formats" that chDB's Python layer turns into Python objects.
_PYTHON_ONLY_FORMATS = frozenset({"dataframe", "datastore", "arrowtable", "debug"})

_IDENT = r'(?:`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_$]*)'
# `INSERT INTO [TABLE] [db.]t [(cols)] [SETTINGS ...] FORMAT F` (or a trailing
# `VALUES`) with nothing after it: the rows are in the request body.
_INSERT_DATA_RE = re.compile(
    r"\s*(?P<head>INSERT\s+INTO\s+(?:TABLE\s+)?" + _IDENT + r"(?:\s*\.\s*" + _IDENT + r")?"
    r"(?:\s*\((?:[^()`\"]|`(?:[^`\\]|\\.)*`|\"(?:[^\"\\]|\\.)*\")*\))?)"
    r"(?:\s*\b(?P<settings>SETTINGS\b.+?))?"
    r"\s*\b(?:FORMAT\s+(?P<fmt>[A-Za-z][A-Za-z0-9_]*)|(?P<values>VALUES))\s*;?\s*\Z",
    re.IGNORECASE | re.DOTALL,
)
_TRAILING_FORMAT_RE = re.compile(r"\bFORMAT\s+([A-Za-z][A-Za-z0-9_]*)\s*;?\s*\Z", re.IGNORECASE)
# Statements that change the state of the chDB session (current database,
# settings, temporary tables).  Such a connection must not go back to the
# pool, or the change would leak into later requests.  False positives (the
# word inside a string literal) only cost a fresh connection.
_SESSION_STATE_RE = re.compile(r"\b(?:USE|SET|TEMPORARY)\b", re.IGNORECASE)
_SESSION_SCAN_LIMIT = 64 * 1024


def keeps_session_clean(sql: str) -> bool:
    if len(sql) > _SESSION_SCAN_LIMIT:
        return False
    return _SESSION_STATE_RE.search(sql) is None


def output_format_of(sql: str, default: str) -> str:
    """The format the reply will be in: a trailing FORMAT clause wins."""
    m = _TRAILING_FORMAT_RE.search(sql, max(0, len(sql) - 200))
    return m.group(1) if m else default


def insert_from_file_sql(m: re.Match[str], path: str, fmt: str) -> str:
    """The ``INSERT ... FROM INFILE`` statement committing a spooled body,
    from an `_INSERT_DATA_RE` match of the request's INSERT."""
    settings = m.group("settings")
    # COMPRESSION 'none': never guess a codec from the file name.
    return (f"{m.group('head')} FROM INFILE {quote_string(path)} COMPRESSION 'none'"
            f"{' ' + settings if settings else ''} FORMAT {fmt}")


_CONTENT_TYPES: dict[str, str] = {}


def content_type_for(fmt: str) -> str:
    ctype = _CONTENT_TYPES.get(fmt)
    if ctype is None:
        f = fmt.lower()
        if f.startswith(("tabseparated", "tsv")):
            ctype = "text/tab-separated-values; charset=UTF-8"
        elif f.startswith("csv"):
            ctype = "text/csv; charset=UTF-8; header=absent"
        elif f.startswith("json") and ("eachrow" in f or "lines" in f):
            ctype = "application/x-ndjson; charset=UTF-8"
        elif f.startswith("json"):
            ctype = "application/json; charset=UTF-8"
        elif f == "xml":
            ctype = "application/xml; charset=UTF-8"
        elif f.startswith(("pretty", "vertical", "markdown", "values", "template",
                           "raw", "customseparated", "linesasstring", "null")):
            ctype = "text/plain; charset=UTF-8"
        else:
            ctype = "application/octet-stream"
        _CONTENT_TYPES[fmt] = ctype
    return ctype


def native_compress(view: Buffer, block_size: int = 1 << 20) -> bytes:
    """Frames a reply as ClickHouse native LZ4 blocks (``compress=1``)."""
    out = []
    for off in range(0, len(view), block_size):
        piece = view[off:off + block_size]
        payload = lz4.block.compress(piece, store_size=False)
        block = bytes((_METHOD_LZ4,)) + _NATIVE_SIZES.pack(9 + len(payload), len(piece)) + payload
        out.append(native_checksum(block))
        out.append(block)
    return b"".join(out)


def multipart_delimiter(content_type: str) -> bytes:
    """The ``--boundary`` line of a multipart/form-data Content-Type."""
    boundary = None
    for item in content_type.split(";")[1:]:
        key, _, value = item.strip().partition("=")
        if key.lower() == "boundary":
            boundary = value.strip().strip('"')
    if not boundary:
        raise ClickHouseError.make(36, "multipart/form-data without a boundary")
    return b"--" + boundary.encode("latin-1")


def _multipart_field(headers: bytes, value: bytes) -> tuple[str, str]:
    """One form field's (name, text), from its part headers and content."""
    m = re.search(rb'(?i)content-disposition:[^\r\n]*?;\s*name="([^"]*)"', headers)
    if not m:
        raise ClickHouseError.make(36, "Malformed multipart body: part without a name")
    if re.search(rb'(?i)content-disposition:[^\r\n]*;\s*filename=', headers):
        raise ClickHouseError.make(48, "External tables in multipart bodies are not supported")
    try:
        return m.group(1).decode("utf-8"), value.decode("utf-8")
    except UnicodeDecodeError:
        raise ClickHouseError.make(36, "Multipart field is not valid UTF-8") from None


def parse_multipart(body: bytes, content_type: str) -> dict[str, str]:
    """Splits a multipart/form-data body into {field name: text}.

    Written by hand with bytes.find: the email parser is an order of
    magnitude slower and this sits on the path of every parameterized query.
    """
    delim = multipart_delimiter(content_type)
    sep = b"\r\n" + delim
    pos = body.find(delim)
    if pos < 0:
        raise ClickHouseError.make(36, "Malformed multipart body: boundary not found")
    pos += len(delim)
    fields = {}
    while not body.startswith(b"--", pos):
        if not body.startswith(b"\r\n", pos):
            raise ClickHouseError.make(36, "Malformed multipart body: bad boundary line")
        head_end = body.find(b"\r\n\r\n", pos + 2)
        if head_end < 0:
            raise ClickHouseError.make(36, "Malformed multipart body: unterminated part headers")
        start = head_end + 4
        end = body.find(sep, start)
        if end < 0:
            raise ClickHouseError.make(36, "Malformed multipart body: missing closing boundary")
        name, text = _multipart_field(body[pos + 2:head_end], body[start:end])
        fields[name] = text
        pos = end + len(sep)
    return fields


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


class Request:
    """What one query request asks for, once the URL and body are parsed."""

    __slots__ = ("query_id", "database", "default_format", "settings",
                 "params", "decompress", "verify", "compress")

    def __init__(self) -> None:
        self.query_id: str | None = None
        self.settings: dict[str, str] = {}
        self.params: dict[str, str] = {}
        # The rest is set by apply_controls; these are its defaults.
        self.database = ""
        self.default_format = "TabSeparated"
        self.decompress = False
        self.verify = True
        self.compress = False


def classify_params(pairs: Iterable[tuple[str, str]], req: Request, controls: dict[str, str]) -> None:
    """Sorts URL (or form) parameters: ``param_<name>`` values go to
    ``req.params``, HTTP controls to `controls`, the rest are settings."""
    for key, value in pairs:
        if key.startswith("param_"):
            req.params[key[6:]] = value
        elif key in CONTROL_PARAMS:
            controls[key] = value
        else:
            req.settings[key] = value


def parse_query_string(qs: str) -> tuple[Request, dict[str, str]]:
    """A new request from the URL's query string, and its HTTP controls."""
    req = Request()
    controls: dict[str, str] = {}
    if qs:
        classify_params(parse_qsl(qs, keep_blank_values=True), req, controls)
    return req, controls


def _flag(controls: dict[str, str], name: str) -> bool:
    return controls.get(name, "0") not in ("0", "", "false")


def apply_controls(req: Request, controls: dict[str, str], headers: dict[str, str]) -> None:
    """Fills in what the HTTP controls (and headers, lower-cased) ask for."""
    req.query_id = safe_header_value(controls.get("query_id") or req.query_id or str(uuid.uuid4()))
    req.database = controls.get("database") or headers.get("x-clickhouse-database") or ""
    fmt = controls.get("default_format") or headers.get("x-clickhouse-format") or "TabSeparated"
    if not _FORMAT_NAME_RE.match(fmt) or fmt.lower() in _PYTHON_ONLY_FORMATS:
        raise ClickHouseError.make(73, f"Unknown format {fmt}")
    req.default_format = fmt
    req.decompress = _flag(controls, "decompress")
    req.verify = not _flag(controls, "http_native_compression_disable_checksumming_on_decompress")
    req.compress = _flag(controls, "compress")


def pool_key(req: Request, method: str) -> PoolKey:
    """The pool key for the request's database and settings (`method` is the
    HTTP method: a GET is read-only)."""
    settings = dict(req.settings)
    if method == "GET":
        # Like ClickHouse: a GET can only read (readonly=2 still lets the
        # query change settings), unless the client asked for stricter.
        if settings.get("readonly", "0") in ("0", ""):
            settings["readonly"] = "2"
    for name in settings:
        if not _SETTING_NAME_RE.match(name):
            raise ClickHouseError.make(115, f"Unknown setting '{name}'")
    readonly = settings.pop("readonly", None)
    items = tuple(sorted(settings.items()))
    if readonly is not None:
        items += (("readonly", readonly),)  # applied last, see ConnectionPool._open
    return (req.database, items)


def join_query(url_query: str, body_sql: str) -> str:
    """Like ClickHouse: the URL's query, then the body, on a new line."""
    return url_query + "\n" + body_sql if url_query and body_sql else url_query or body_sql


def result_summary(result: EngineResult | None) -> str:
    """The X-ClickHouse-Summary header value for a chDB result."""
    if result is None:
        return '{"read_rows":"0","read_bytes":"0","written_rows":"0","written_bytes":"0"}'
    return (
        f'{{"read_rows":"{result.rows_read()}","read_bytes":"{result.bytes_read()}",'
        f'"written_rows":"{result.rows_written()}","written_bytes":"{result.bytes_written()}",'
        f'"elapsed_ns":"{int(result.elapsed() * 1e9)}"}}'
    )


# ---------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------

_date_cache = (0, "")


def http_date() -> str:
    global _date_cache
    now = int(time.time())
    cached = _date_cache
    if cached[0] != now:
        cached = _date_cache = (now, email.utils.formatdate(now, usegmt=True))
    return cached[1]


def safe_header_value(value: str) -> str:
    # Client-supplied values (query_id) are echoed in headers: keep them to
    # printable ASCII so they can neither split headers nor fail to encode.
    if value.isascii() and value.isprintable():
        return value
    return "".join(c if c.isascii() and c.isprintable() else "_" for c in value)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "chgateway"
    sys_version = ""
    rbufsize = 64 * 1024
    # Replies are written in one sendmsg call, but set NODELAY anyway so no
    # write can be held back by Nagle + delayed ACK (a ~40 ms stall).
    disable_nagle_algorithm = True

    server: Gateway
    # Per request: the headers (lower-cased names; for repeated headers the
    # first wins), the body, and what the debug log line reports.
    _h: dict[str, str]
    _body: BodyReader
    _status: int
    _sent: int
    _sql: str

    # -- plumbing -----------------------------------------------------------

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout
        super().setup()
        self.server.track(self, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self, False)

    def log_message(self, fmt: str, *args: Any) -> None:
        log.debug("%s %s", self.client_address[0], fmt % args)

    def log_error(self, fmt: str, *args: Any) -> None:
        # Timeouts of idle keep-alive connections land here: not an error.
        log.debug("%s %s", self.client_address[0], fmt % args)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Used by http.server itself for unparseable requests and unknown
        # methods: answer in ClickHouse's shape and drop the connection,
        # since the request framing can no longer be trusted.
        self.close_connection = True
        ch_code = 48 if code == 501 else 36
        text = message or _REASONS.get(code, "Bad request")
        err = ClickHouseError.make(ch_code, text, status=code, close=True)
        log.warning("%s %r: %s", self.client_address[0], self.requestline, text)
        try:
            self._reply_error(err, None)
        except OSError:
            pass

    def _send(self, head: bytes, body: Buffer) -> None:
        # Headers and body leave in one system call (scatter/gather, so a
        # large body is not copied to be glued to the headers).
        sock = self.connection
        if not body:
            sock.sendall(head)
            return
        sent = sock.sendmsg([head, body])
        if sent < len(head):
            sock.sendall(head[sent:])
            sock.sendall(body)
        elif sent < len(head) + len(body):
            sock.sendall(memoryview(body)[sent - len(head):])

    def _reply(self, status: int, body: Buffer, content_type: str, extra: str = "") -> None:
        if self.server.stopping:
            self.close_connection = True
        if self.close_connection:
            conn_hdr = "Connection: Close\r\n"
        else:
            conn_hdr = f"Connection: Keep-Alive\r\nKeep-Alive: timeout={self.server.keep_alive_timeout}\r\n"
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\n"
            f"Date: {http_date()}\r\n"
            f"{conn_hdr}"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"{extra}\r\n"
        ).encode("latin-1")
        self._send(head, b"" if self.command == "HEAD" else body)
        self._status, self._sent = status, len(body)

    def _reply_ok(self) -> None:
        self._reply(200, b"Ok.\n", "text/plain; charset=UTF-8")

    def _reply_error(self, err: ClickHouseError, query_id: str | None) -> None:
        if err.close:
            self.close_connection = True
        body = f"{err.text} (version {ENGINE_VERSION})\n".encode("utf-8", "replace")
        extra = f"X-ClickHouse-Exception-Code: {err.code}\r\n"
        if query_id:
            extra += f"X-ClickHouse-Query-Id: {query_id}\r\n"
        self._reply(err.status, body, "text/plain; charset=UTF-8", extra)

    def _reply_result(self, req: Request, result: EngineResult | None, fmt: str,
                      body: Buffer | None = None) -> None:
        if body is None:
            # Zero-copy view of chDB's result buffer; `result` stays
            # referenced until the reply is sent.
            body = result.get_memview().view() if result is not None and result.size() else b""
        if req.compress:
            body = native_compress(body)
            ctype = "application/octet-stream"
        else:
            ctype = content_type_for(fmt)
        extra = (f"X-ClickHouse-Query-Id: {req.query_id}\r\n"
                 f"X-ClickHouse-Format: {fmt}\r\n"
                 f"X-ClickHouse-Summary: {result_summary(result)}\r\n")
        self._reply(200, body, ctype, extra)

    def _skip_unread_body(self) -> None:
        if not self._body.skip_unread():
            self.close_connection = True

    # -- dispatch -----------------------------------------------------------

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def _handle(self) -> None:
        started = time.perf_counter()
        self._status, self._sent, self._sql = 0, 0, ""
        # One pass over the headers: Message.get() rescans and lowercases
        # every header on each call.  For repeated headers the first wins.
        self._h = {k.lower(): v for k, v in reversed(self.headers.items())}
        self._body = BodyReader(self.rfile, self._h)
        server = self.server
        server.begin_request(self)
        try:
            self._route()
        except ClickHouseError as err:
            # Raised while discarding the body of a /ping or unknown path.
            log.warning("%s %s: %s", self.client_address[0], self.command, err.text)
            self._skip_unread_body()
            if not self._status:
                self._reply_error(err, None)
        except ClientGone as exc:
            self.close_connection = True
            log.info("%s %s: client went away: %s", self.client_address[0], self.command, exc)
        except (BrokenPipeError, ConnectionResetError, TimeoutError) as exc:
            self.close_connection = True
            log.info("%s %s: connection lost while replying: %s", self.client_address[0], self.command, exc)
        except Exception:
            self._on_internal_error()
        finally:
            server.end_request(self)
            self._log_done(started)

    def _on_internal_error(self) -> None:
        """Called from an ``except`` block: logs the exception being handled
        and, if nothing was sent yet, answers with code 1001."""
        self.close_connection = True
        log.exception("%s %s %s: internal error", self.client_address[0], self.command, self.path[:200])
        if not self._status:
            try:
                self._reply_error(ClickHouseError.make(1001, "Internal gateway error"), None)
            except OSError:
                pass

    def _log_done(self, started: float) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s %s -> %s %dB %.2fms %s", self.client_address[0], self.command,
                      self.path.partition("?")[0], self._status, self._sent,
                      (time.perf_counter() - started) * 1e3, self._sql[:200].replace("\n", " "))

    def _route(self) -> None:
        path, _, qs = self.path.partition("?")
        if path in ("/ping", "/replicas_status") or (path == "/" and self.command == "HEAD"):
            self._body.discard()
            self._reply_ok()
        elif path != "/":
            self._body.discard()
            self._reply_error(ClickHouseError.make(
                36, f"There is no handle {path}. Use / or /ping for health checks, "
                "POST / or GET /?query= for queries", status=404), None)
        else:
            req, controls = parse_query_string(qs)
            try:
                self._serve_query(req, controls)
            except ClickHouseError as err:
                log.warning("%s query_id=%s error %d: %s", self.client_address[0], req.query_id,
                            err.code, err.text.split("\n", 1)[0][:500])
                self._skip_unread_body()
                self._reply_error(err, req.query_id)

    # -- queries ------------------------------------------------------------

    def _serve_query(self, req: Request, controls: dict[str, str]) -> None:
        url_query = controls.pop("query", "")
        if self.command == "GET" and not url_query and not self._body.has_body():
            self._reply_ok()
            return
        form = self._read_form(req, controls)
        apply_controls(req, controls, self._h)
        m = _INSERT_DATA_RE.match(url_query) if url_query and form is None else None
        if m:
            self._insert(req, m, url_query)
            return
        body_sql = form.get("query", "") if form is not None else self._read_body_sql(req)
        self._query(req, join_query(url_query, body_sql))

    def _read_form(self, req: Request, controls: dict[str, str]) -> dict[str, str] | None:
        """Reads a multipart/form-data body (None if the body is not one).

        The form's fields are parameters just like the URL's (its `query`
        field is the SQL), so the controls are applied once for reading the
        body and again (by the caller) with the form's included.
        """
        ctype = self._h.get("content-type") or ""
        if ctype[:19].lower() != "multipart/form-data":
            return None
        apply_controls(req, controls, self._h)
        form = parse_multipart(self._body.read(req.decompress, req.verify), ctype)
        classify_params(form.items(), req, controls)
        return form

    def _read_body_sql(self, req: Request) -> str:
        if not self._body.has_body():
            return ""
        try:
            return self._body.read(req.decompress, req.verify).decode("utf-8")
        except UnicodeDecodeError:
            raise ClickHouseError.make(36, "Query is not valid UTF-8") from None

    def _run(self, key: PoolKey, sql: str, fmt: str, params: dict[str, str] | None,
             reusable: bool = True) -> EngineResult:
        """Runs one statement on a pooled connection; returns chDB's result."""
        pool = self.server.pool
        conn = pool.acquire(key)
        ok = False
        try:
            result = conn.query(sql, fmt, params=params or None)
            if result is not None and result.has_error():
                raise RuntimeError(result.error_message())
            ok = True
            return result
        except Exception as exc:
            raise ClickHouseError.from_engine(exc) from None
        finally:
            # Never reuse after an error: chDB would prepend the failed
            # query's partial output to the next result on this connection.
            pool.release(key, conn, ok and reusable)

    def _query(self, req: Request, sql: str) -> None:
        self._sql = sql
        if not sql.strip():
            raise ClickHouseError.make(62, "Empty query")
        key = pool_key(req, self.command)
        fmt = req.default_format
        result = self._run(key, sql, fmt, req.params, keeps_session_clean(sql))
        self._reply_result(req, result, output_format_of(sql, fmt))

    def _insert(self, req: Request, m: re.Match[str], url_query: str) -> None:
        """INSERT whose rows are the request body: spool, then FROM INFILE.

        chDB's streaming insert API swallows errors raised inside the engine
        (a violated constraint reports success and stores nothing), whereas
        `INSERT ... FROM INFILE` reports them.  Spooling also makes a dropped
        upload trivial to abandon: the INSERT only runs after the final chunk.
        """
        fmt = m.group("fmt") or "Values"
        self._sql = url_query
        key = pool_key(req, self.command)
        fd, spool = tempfile.mkstemp(prefix="chgw-", suffix=".data", dir=self.server.spool_dir)
        try:
            self._spool_body(fd, req)
            result = self._run(key, insert_from_file_sql(m, spool, fmt), "TabSeparated", req.params or None)
        finally:
            try:
                os.unlink(spool)
            except OSError:
                pass
        self._reply_result(req, result, fmt, body=b"")

    def _spool_body(self, fd: int, req: Request) -> None:
        """Writes the decoded body to the open file `fd` (and closes it)."""
        with os.fdopen(fd, "wb", buffering=256 * 1024) as f:
            try:
                self._body.pump(f.write, req.decompress, req.verify)
            except ClientGone:
                log.info("%s query_id=%s: upload aborted, nothing inserted",
                         self.client_address[0], req.query_id)
                raise


class Gateway(ThreadingHTTPServer):
    """The HTTP server: one thread per client connection, plus the
    bookkeeping that lets a shutdown wait for in-flight requests."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], pool: ConnectionPool, spool_dir: str,
                 idle_timeout: float = 30) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.pool = pool
        self.spool_dir = spool_dir
        self.idle_timeout = idle_timeout
        self.keep_alive_timeout = int(idle_timeout)
        self.stopping = False
        self._state_lock = threading.Condition()
        self._handlers: dict[Handler, bool] = {}  # handler -> busy?
        self._busy = 0
        super().__init__(address, Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name with getfqdn(), which
        # can block on DNS; nothing here needs it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = host, port

    def track(self, handler: Handler, alive: bool) -> None:
        with self._state_lock:
            if alive:
                self._handlers[handler] = False
            else:
                self._handlers.pop(handler, None)

    def begin_request(self, handler: Handler) -> None:
        with self._state_lock:
            self._handlers[handler] = True
            self._busy += 1

    def end_request(self, handler: Handler) -> None:
        with self._state_lock:
            if handler in self._handlers:
                self._handlers[handler] = False
            self._busy -= 1
            if self.stopping:
                self._state_lock.notify_all()

    def drain(self, timeout: float) -> bool:
        """After the listener is closed: end idle keep-alive connections and
        wait up to `timeout` seconds for in-flight requests.  Returns True if
        nothing is still running."""
        deadline = time.monotonic() + timeout
        with self._state_lock:
            self.stopping = True
            idle = [h for h, busy in self._handlers.items() if not busy]
        for handler in idle:
            # Wakes the thread blocked reading the next request line.
            try:
                handler.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self._state_lock:
            while self._busy > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._state_lock.wait(left)
        return True

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.exception("%s: unhandled error", client_address[0] if client_address else "?")


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def pick_spool_dir(requested: str | None) -> str:
    if requested:
        return requested
    # /dev/shm is memory-backed, so spooling an insert costs no disk I/O.
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


# Merges are background work: searches come first when the CPU is short. (Linux applies a nice
# value only with CAP_SYS_NICE; without it the engine leaves its threads as they are.)
MERGE_NICE = 10


def engine_uri(path: str) -> str:
    """The chDB connection string that starts the engine on `path` with its start-up options."""
    return f"file:{path}?os_threads_nice_value_merge_mutate={MERGE_NICE}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="ClickHouse HTTP interface over an embedded chDB database.")
    ap.add_argument("--path", required=True, help="database directory (created if missing)")
    ap.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    ap.add_argument("--port", type=int, default=8123, help="port to bind; 0 picks a free one (default: 8123)")
    ap.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    ap.add_argument("--spool-dir", default=None, help="where insert bodies are spooled (default: /dev/shm)")
    ap.add_argument("--pool-size", type=int, default=64, help="max idle chDB connections kept (default: 64)")
    ap.add_argument("--shutdown-timeout", type=float, default=10.0,
                    help="seconds to let in-flight requests finish on SIGTERM (default: 10)")
    ap.add_argument("--exit-with-parent", action="store_true",
                    help="shut down when the process that started the gateway exits")
    args = ap.parse_args(argv)
    if "?" in args.path:
        ap.error("--path must not contain '?' (chDB would read it as connection options)")
    return args


def open_gateway(args: argparse.Namespace, path: str) -> tuple[ConnectionPool, Gateway] | None:
    """Opens the database and the listening socket; None (logged) on failure."""
    try:
        pool = ConnectionPool(path, max_idle=max(1, args.pool_size),
                              max_idle_per_key=max(1, min(16, args.pool_size)))
    except Exception as exc:
        log.error("cannot open database %s: %s", path, exc)
        return None
    try:
        server = Gateway((args.host, args.port), pool, pick_spool_dir(args.spool_dir))
    except OSError as exc:
        log.error("cannot listen on %s:%s: %s", args.host, args.port, exc)
        pool.close()
        return None
    return pool, server


def stop_on_signals(server: Gateway) -> None:
    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s, shutting down", signal.Signals(signum).name)
        # shutdown() waits for serve_forever() to return, and serve_forever
        # runs in this (main) thread: call it from another thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def stop_with_parent(server: Gateway) -> None:
    # A parent killed outright (SIGKILL, a crashed test run) cannot stop us, so watch it:
    # once it is gone we are re-parented and getppid() changes.
    parent = os.getppid()

    def watch_parent() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        log.info("parent process %d exited, shutting down", parent)
        server.shutdown()

    threading.Thread(target=watch_parent, name="parent-watch", daemon=True).start()


def serve(server: Gateway, pool: ConnectionPool, shutdown_timeout: float) -> None:
    """Serves until shut down, then drains and closes the engine."""
    try:
        server.serve_forever(poll_interval=0.25)
    finally:
        server.server_close()  # stop accepting
        if not server.drain(shutdown_timeout):
            log.warning("requests still running after %.1fs; exiting without closing the engine",
                        shutdown_timeout)
            pool.close(keep_anchor=True)
            logging.shutdown()
            # Interpreter teardown while engine threads still run queries is
            # unsafe; leave at once.
            os._exit(0)
        pool.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, args.log_level.upper()),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    path = os.path.abspath(args.path)
    opened = open_gateway(args, path)
    if opened is None:
        return 1
    pool, server = opened
    stop_on_signals(server)
    if args.exit_with_parent:
        stop_with_parent(server)

    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in host else host
    log.info("serving %s on %s:%s (chDB %s, spool %s)", path, shown, port, ENGINE_VERSION, server.spool_dir)
    sys.stdout.write(f"listening {shown}:{port}\n")
    sys.stdout.flush()

    serve(server, pool, args.shutdown_timeout)
    log.info("stopped")
    return 0

if __name__ == "__main__":
    sys.exit(main())
