"""Unit tests for the protocol code of deploy/embedded/chgateway.py.

They cover what needs no running engine or socket: multipart and native-block
decoding, request-body framing, INSERT detection and request construction.
The gateway imports lz4, clickhouse_cityhash and chdb, so run them with the
engine virtualenv's Python:

    target/tmp/engine-env/venv/bin/python -m unittest discover -s tests/embedded -v
"""

from __future__ import annotations

import gzip
import io
import os
import random
import sys
import unittest
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "embedded"))

import lz4.frame  # noqa: E402

import chgateway as gw  # noqa: E402
from chgateway import ClickHouseError, ClientGone  # noqa: E402


class ErrorAssertions(unittest.TestCase):
    def assertCode(self, cm: unittest.case._AssertRaisesContext, code: int, status: int | None = None,
                   close: bool | None = None, fragment: str | None = None) -> ClickHouseError:
        err = cm.exception
        self.assertEqual(err.code, code, err.text)
        if status is not None:
            self.assertEqual(err.status, status, err.text)
        if close is not None:
            self.assertEqual(err.close, close, err.text)
        if fragment is not None:
            self.assertIn(fragment, err.text)
        self.assertTrue(err.text.startswith(f"Code: {code}. "), err.text)
        return err


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


class ClickHouseErrorTest(unittest.TestCase):
    def test_make_formats_like_clickhouse(self) -> None:
        err = ClickHouseError.make(36, "Something is wrong")
        self.assertEqual(err.text, "Code: 36. DB::Exception: Something is wrong. (BAD_ARGUMENTS)")
        self.assertEqual(str(err), err.text)
        self.assertEqual((err.code, err.status, err.close), (36, 400, False))

    def test_make_maps_codes_to_http_status(self) -> None:
        cases = {36: 400, 62: 400, 48: 501, 115: 404, 73: 404, 60: 404, 194: 401, 497: 403,
                 229: 413, 381: 411, 159: 408, 779: 415, 209: 503, 33: 500, 40: 500, 271: 500,
                 1001: 500}
        for code, status in cases.items():
            with self.subTest(code=code):
                self.assertEqual(ClickHouseError.make(code, "x").status, status)

    def test_make_unknown_code_and_overrides(self) -> None:
        err = ClickHouseError.make(12345, "odd", status=404, close=True)
        self.assertEqual(err.text, "Code: 12345. DB::Exception: odd. (UNKNOWN_EXCEPTION)")
        self.assertEqual((err.status, err.close), (404, True))

    def test_from_engine_keeps_the_engine_code_and_text(self) -> None:
        text = "Code: 60. DB::Exception: Unknown table expression identifier 'x'. (UNKNOWN_TABLE)"
        err = ClickHouseError.from_engine(RuntimeError(f"  {text}\n"))
        self.assertEqual((err.code, err.status, err.text), (60, 404, text))
        err = ClickHouseError.from_engine(RuntimeError("Code: 469. DB::Exception: Constraint violated"))
        self.assertEqual((err.code, err.status), (469, 500))

    def test_from_engine_wraps_other_errors_as_std_exception(self) -> None:
        err = ClickHouseError.from_engine(RuntimeError("boom"))
        self.assertEqual(err.text, "Code: 1001. DB::Exception: boom. (STD_EXCEPTION)")
        self.assertEqual((err.code, err.status), (1001, 500))
        err = ClickHouseError.from_engine(ValueError(""))
        self.assertEqual(err.text, "Code: 1001. DB::Exception: ValueError. (STD_EXCEPTION)")
        # "Code: N." must start the message to count as an engine code.
        self.assertEqual(ClickHouseError.from_engine(RuntimeError("see Code: 60. x")).code, 1001)


# ---------------------------------------------------------------------------
# Multipart
# ---------------------------------------------------------------------------


def form(boundary: str, *parts: tuple[str, bytes]) -> bytes:
    out = b""
    for headers, value in parts:
        out += b"--" + boundary.encode() + b"\r\n" + headers.encode() + b"\r\n\r\n" + value + b"\r\n"
    return out + b"--" + boundary.encode() + b"--\r\n"


def field(name: str, value: bytes) -> tuple[str, bytes]:
    return f'Content-Disposition: form-data; name="{name}"', value


class ParseMultipartTest(ErrorAssertions):
    def test_fields(self) -> None:
        body = form("XyZ", field("query", b"SELECT {s:String}"),
                    field("param_s", "it's\r\n-- ü\r\n".encode()), field("empty", b""))
        self.assertEqual(gw.parse_multipart(body, "multipart/form-data; boundary=XyZ"),
                         {"query": "SELECT {s:String}", "param_s": "it's\r\n-- ü\r\n", "empty": ""})

    def test_part_headers_are_case_insensitive_and_may_be_several(self) -> None:
        body = form("b", ('content-type: text/plain\r\nCONTENT-DISPOSITION: form-data; name="q"', b"1"))
        self.assertEqual(gw.parse_multipart(body, "multipart/form-data; charset=utf-8; boundary=b"), {"q": "1"})

    def test_preamble_and_later_duplicate_wins(self) -> None:
        body = b"preamble\r\n" + form("b", field("a", b"1"), field("a", b"2"))
        self.assertEqual(gw.parse_multipart(body, "multipart/form-data; boundary=b"), {"a": "2"})

    def test_quoted_boundary(self) -> None:
        body = form("a b:c", field("query", b"SELECT 1"))
        self.assertEqual(gw.parse_multipart(body, 'multipart/form-data; BOUNDARY="a b:c"'), {"query": "SELECT 1"})
        self.assertEqual(gw.multipart_delimiter('multipart/form-data; boundary="a b:c"'), b"--a b:c")

    def test_empty_form(self) -> None:
        self.assertEqual(gw.parse_multipart(b"--b--\r\n", "multipart/form-data; boundary=b"), {})

    def test_missing_boundary(self) -> None:
        for ctype in ("multipart/form-data", "multipart/form-data; boundary=", 'multipart/form-data; boundary=""'):
            with self.subTest(ctype=ctype), self.assertRaises(ClickHouseError) as cm:
                gw.parse_multipart(form("b", field("q", b"1")), ctype)
            self.assertCode(cm, 36, 400, fragment="without a boundary")

    def test_boundary_not_in_body(self) -> None:
        with self.assertRaises(ClickHouseError) as cm:
            gw.parse_multipart(form("other", field("q", b"1")), "multipart/form-data; boundary=b")
        self.assertCode(cm, 36, fragment="boundary not found")

    def test_unterminated_part(self) -> None:
        ctype = "multipart/form-data; boundary=b"
        cases = {
            b'--b\r\nContent-Disposition: form-data; name="q"\r\n': "unterminated part headers",
            b'--b\r\nContent-Disposition: form-data; name="q"\r\n\r\nSELECT 1': "missing closing boundary",
            b'--b\r\nContent-Disposition: form-data; name="q"\r\n\r\nSELECT 1\r\n--b': "bad boundary line",
            b"--bXX": "bad boundary line",
        }
        for body, fragment in cases.items():
            with self.subTest(body=body), self.assertRaises(ClickHouseError) as cm:
                gw.parse_multipart(body, ctype)
            self.assertCode(cm, 36, fragment=fragment)

    def test_part_without_a_name(self) -> None:
        with self.assertRaises(ClickHouseError) as cm:
            gw.parse_multipart(form("b", ("Content-Disposition: form-data", b"1")), "multipart/form-data; boundary=b")
        self.assertCode(cm, 36, fragment="part without a name")

    def test_file_part_is_refused(self) -> None:
        part = ('Content-Disposition: form-data; name="t"; filename="t.tsv"', b"1\t2\n")
        with self.assertRaises(ClickHouseError) as cm:
            gw.parse_multipart(form("b", field("query", b"SELECT 1"), part), "multipart/form-data; boundary=b")
        self.assertCode(cm, 48, 501, fragment="External tables")

    def test_bad_utf8(self) -> None:
        for part in (field("q", b"\xff\xfe"), ('Content-Disposition: form-data; name="\xe9"', b"1")):
            body = form("b", part)
            if "\xe9" in part[0]:
                body = body.replace("\xe9".encode(), b"\xe9")
            with self.subTest(part=part), self.assertRaises(ClickHouseError) as cm:
                gw.parse_multipart(body, "multipart/form-data; boundary=b")
            self.assertCode(cm, 36, 400, fragment="not valid UTF-8")


# ---------------------------------------------------------------------------
# Native blocks
# ---------------------------------------------------------------------------


def sample(n: int, seed: int = 7) -> bytes:
    """Compressible but not trivial bytes."""
    rnd = random.Random(seed)
    words = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 12))) for _ in range(64)]
    out = bytearray()
    while len(out) < n:
        out += rnd.choice(words)
    return bytes(out[:n])


def native_block(method: int, payload: bytes, raw_size: int, checksum: bytes | None = None) -> bytes:
    block = bytes((method,)) + gw._NATIVE_SIZES.pack(9 + len(payload), raw_size) + payload
    return (checksum if checksum is not None else gw.native_checksum(block)) + block


class Collector:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def __call__(self, data: gw.Buffer) -> None:
        self.parts.append(bytes(data))

    @property
    def data(self) -> bytes:
        return b"".join(self.parts)


class NativeBlockDecoderTest(ErrorAssertions):
    def decode(self, body: bytes, step: int | None = None, verify: bool = True) -> bytes:
        out = Collector()
        dec = gw.NativeBlockDecoder(out, verify)
        step = step or len(body) or 1
        for off in range(0, len(body), step):
            dec.feed(body[off:off + step])
        dec.finish()
        return out.data

    def test_round_trip_in_any_chunking(self) -> None:
        data = sample(300_000)
        body = gw.native_compress(data, block_size=64 * 1024)
        self.assertGreater(len(body), 5 * 16)
        for step in (None, 1 << 20, 65_536, 4096, 1000, 25, 24, 17, 7):
            with self.subTest(step=step):
                self.assertEqual(self.decode(body, step), data)

    def test_split_at_every_offset_around_block_headers(self) -> None:
        data = sample(3000)
        body = gw.native_compress(data, block_size=1000)
        first_block = 16 + int.from_bytes(body[17:21], "little")
        cuts = set(range(0, 40)) | set(range(first_block - 3, first_block + 30)) | {len(body) - 1}
        for cut in sorted(cuts):
            with self.subTest(cut=cut):
                out = Collector()
                dec = gw.NativeBlockDecoder(out)
                dec.feed(body[:cut])
                dec.feed(memoryview(body)[cut:])
                dec.finish()
                self.assertEqual(out.data, data)

    def test_one_byte_at_a_time(self) -> None:
        data = sample(2000)
        self.assertEqual(self.decode(gw.native_compress(data, block_size=300), step=1), data)

    def test_empty_body(self) -> None:
        self.assertEqual(gw.native_compress(b""), b"")
        self.assertEqual(self.decode(b""), b"")

    def test_uncompressed_block(self) -> None:
        raw = b"plain bytes"
        self.assertEqual(self.decode(native_block(0x02, raw, len(raw))), raw)

    def test_checksum_mismatch(self) -> None:
        body = bytearray(gw.native_compress(sample(1000)))
        body[3] ^= 0xFF
        with self.assertRaises(ClickHouseError) as cm:
            self.decode(bytes(body))
        self.assertCode(cm, 40, 500, fragment="Checksum doesn't match")
        self.assertIn("CHECKSUM_DOESNT_MATCH", cm.exception.text)
        self.assertIn(bytes(body[:16]).hex(), cm.exception.text)

    def test_corrupted_payload_fails_the_checksum(self) -> None:
        body = bytearray(gw.native_compress(sample(1000)))
        body[-1] ^= 0x01
        with self.assertRaises(ClickHouseError) as cm:
            self.decode(bytes(body))
        self.assertCode(cm, 40)

    def test_verify_false_skips_the_checksum(self) -> None:
        data = sample(5000)
        body = bytearray(gw.native_compress(data, block_size=1024))
        for pos in range(0, 16):
            body[pos] = 0
        self.assertEqual(self.decode(bytes(body), step=100, verify=False), data)

    def test_unknown_method(self) -> None:
        with self.assertRaises(ClickHouseError) as cm:
            self.decode(native_block(0x42, b"abc", 3))
        self.assertCode(cm, 89, fragment="Unknown compression method: 0x42")
        self.assertIn("UNKNOWN_COMPRESSION_METHOD", cm.exception.text)

    def test_zstd_is_refused(self) -> None:
        with self.assertRaises(ClickHouseError) as cm:
            self.decode(native_block(0x90, b"abc", 3))
        self.assertCode(cm, 89, fragment="ZSTD")

    def test_bad_lz4_payload(self) -> None:
        with self.assertRaises(ClickHouseError) as cm:
            self.decode(native_block(0x82, b"\xff" * 10, 100))
        self.assertCode(cm, 271, fragment="Cannot decompress LZ4 block")

    def test_truncated_body_fails_on_finish(self) -> None:
        body = gw.native_compress(sample(1000))
        for cut in (1, 10, 25, len(body) - 1):
            with self.subTest(cut=cut):
                out = Collector()
                dec = gw.NativeBlockDecoder(out)
                dec.feed(body[:cut])
                self.assertEqual(out.parts, [])
                with self.assertRaises(ClickHouseError) as cm:
                    dec.finish()
                self.assertCode(cm, 33, fragment=f"({cut} bytes left)")
                self.assertIn("CANNOT_READ_ALL_DATA", cm.exception.text)

    def test_oversize_header(self) -> None:
        cases = [
            (1 << 30) + 1, 9,  # compressed size over the limit
            100, (1 << 30) + 1,  # raw size over the limit
            8, 0,  # compressed size smaller than its own header
        ]
        for csize, rsize in zip(cases[::2], cases[1::2]):
            header = b"\0" * 16 + bytes((0x82,)) + gw._NATIVE_SIZES.pack(csize, rsize)
            with self.subTest(csize=csize, rsize=rsize), self.assertRaises(ClickHouseError) as cm:
                gw.NativeBlockDecoder(Collector()).feed(header)
            self.assertCode(cm, 39, fragment="Too large size of compressed block")

    def test_decoded_blocks_are_passed_on_as_they_complete(self) -> None:
        body = gw.native_compress(sample(3000), block_size=1000)
        out = Collector()
        dec = gw.NativeBlockDecoder(out)
        first_block = 16 + int.from_bytes(body[17:21], "little")
        dec.feed(body[:first_block])
        self.assertEqual(len(out.parts), 1)
        self.assertEqual(len(out.parts[0]), 1000)


# ---------------------------------------------------------------------------
# SQL helpers
# ---------------------------------------------------------------------------


class InsertDetectionTest(unittest.TestCase):
    def match(self, sql: str) -> dict[str, str | None]:
        m = gw._INSERT_DATA_RE.match(sql)
        self.assertIsNotNone(m, sql)
        assert m is not None
        return m.groupdict()

    def test_matches(self) -> None:
        cases = [
            ("INSERT INTO t FORMAT RowBinary", "INSERT INTO t", None, "RowBinary"),
            ("insert into table t format TSV", "insert into table t", None, "TSV"),
            ("INSERT INTO TABLE db.t FORMAT CSV", "INSERT INTO TABLE db.t", None, "CSV"),
            ("INSERT INTO db . t FORMAT CSV", "INSERT INTO db . t", None, "CSV"),
            ("INSERT INTO `my db`.`my-table` FORMAT Native", "INSERT INTO `my db`.`my-table`", None, "Native"),
            ("INSERT INTO `we\\`ird` FORMAT Native", "INSERT INTO `we\\`ird`", None, "Native"),
            ('INSERT INTO "db"."t" FORMAT JSONEachRow', 'INSERT INTO "db"."t"', None, "JSONEachRow"),
            ("INSERT INTO t (a, b, c) FORMAT RowBinary", "INSERT INTO t (a, b, c)", None, "RowBinary"),
            ("INSERT INTO t(`a)`, \"b(\") FORMAT TSV", "INSERT INTO t(`a)`, \"b(\")", None, "TSV"),
            ("INSERT INTO t SETTINGS async_insert=1 FORMAT RowBinary", "INSERT INTO t",
             "SETTINGS async_insert=1", "RowBinary"),
            ("INSERT INTO t (a) SETTINGS x = 1, y = 'z' FORMAT TSV", "INSERT INTO t (a)",
             "SETTINGS x = 1, y = 'z'", "TSV"),
            ("INSERT INTO t FORMAT TSV;", "INSERT INTO t", None, "TSV"),
            ("  \n INSERT\nINTO\tt\nFORMAT\nTSV ;\n ", "INSERT\nINTO\tt", None, "TSV"),
        ]
        for sql, head, settings, fmt in cases:
            with self.subTest(sql=sql):
                groups = self.match(sql)
                self.assertEqual((groups["head"], groups["settings"], groups["fmt"]), (head, settings, fmt))
                self.assertIsNone(groups["values"])

    def test_values_without_data(self) -> None:
        for sql in ("INSERT INTO t VALUES", "INSERT INTO db.t (a, b) values ;", "INSERT INTO t VALUES\n"):
            with self.subTest(sql=sql):
                groups = self.match(sql)
                self.assertIsNone(groups["fmt"])
                self.assertEqual((groups["values"] or "").upper(), "VALUES")

    def test_non_matches(self) -> None:
        for sql in (
            "INSERT INTO t SELECT * FROM u",
            "INSERT INTO t SELECT 1 FORMAT TSV",
            "INSERT INTO t (a) SELECT number FROM numbers(3)",
            "INSERT INTO t VALUES (1, 'a')",
            "INSERT INTO t VALUES (1), (2);",
            "INSERT INTO t FORMAT CSV 1,2",
            "INSERT INTO t FORMAT",
            "INSERT INTO t",
            "INSERT t FORMAT TSV",
            "SELECT 1 FORMAT TSV",
            "INSERT INTO t FORMAT TSV; SELECT 1",
            "INSERT INTO 1t FORMAT TSV",
        ):
            with self.subTest(sql=sql):
                self.assertIsNone(gw._INSERT_DATA_RE.match(sql))

    def test_insert_from_file_sql(self) -> None:
        m = gw._INSERT_DATA_RE.match("INSERT INTO db.t (a) SETTINGS x=1 FORMAT RowBinary")
        assert m is not None
        self.assertEqual(gw.insert_from_file_sql(m, "/tmp/it's.data", "RowBinary"),
                         "INSERT INTO db.t (a) FROM INFILE '/tmp/it\\'s.data' COMPRESSION 'none' "
                         "SETTINGS x=1 FORMAT RowBinary")
        m = gw._INSERT_DATA_RE.match("INSERT INTO t VALUES")
        assert m is not None
        self.assertEqual(gw.insert_from_file_sql(m, "/s", "Values"),
                         "INSERT INTO t FROM INFILE '/s' COMPRESSION 'none' FORMAT Values")


class OutputFormatTest(unittest.TestCase):
    def test_trailing_format_wins(self) -> None:
        cases = [
            ("SELECT 1", "TabSeparated"),
            ("SELECT 1 FORMAT JSON", "JSON"),
            ("SELECT 1 format csv;", "csv"),
            ("SELECT 1\nFORMAT RowBinaryWithNamesAndTypes ;\n", "RowBinaryWithNamesAndTypes"),
            ("SELECT * FROM (SELECT 1 FORMAT JSON) AS x", "TabSeparated"),
            ("SELECT 'FORMAT JSON' AS reformat", "TabSeparated"),
            ("SELECT 1 FORMAT JSON" + " " * 300, "TabSeparated"),  # only the last 200 characters are searched
            ("SELECT '" + "x" * 1000 + "' FORMAT Pretty", "Pretty"),
        ]
        for sql, fmt in cases:
            with self.subTest(sql=sql[:40]):
                self.assertEqual(gw.output_format_of(sql, "TabSeparated"), fmt)


class SessionStateTest(unittest.TestCase):
    def test_keeps_session_clean(self) -> None:
        cases = {
            "SELECT 1": True,
            "SELECT user, settings, useless FROM reset": True,
            "USE db": False,
            "set max_threads = 1": False,
            "CREATE TEMPORARY TABLE x (a UInt8)": False,
            "SELECT 'use'": False,  # a false positive only costs a fresh connection
            "SELECT 1 -- " + "x" * (64 * 1024): False,
            "SELECT 1 " + " " * (64 * 1024 - 9): True,
        }
        for sql, clean in cases.items():
            with self.subTest(sql=sql[:40], length=len(sql)):
                self.assertEqual(gw.keeps_session_clean(sql), clean)


class ContentTypeTest(unittest.TestCase):
    def test_content_type_for(self) -> None:
        cases = {
            "TabSeparated": "text/tab-separated-values; charset=UTF-8",
            "TSVWithNames": "text/tab-separated-values; charset=UTF-8",
            "CSVWithNames": "text/csv; charset=UTF-8; header=absent",
            "JSONEachRow": "application/x-ndjson; charset=UTF-8",
            "JSONLines": "application/x-ndjson; charset=UTF-8",
            "JSON": "application/json; charset=UTF-8",
            "JSONCompact": "application/json; charset=UTF-8",
            "XML": "application/xml; charset=UTF-8",
            "PrettyCompact": "text/plain; charset=UTF-8",
            "Vertical": "text/plain; charset=UTF-8",
            "Values": "text/plain; charset=UTF-8",
            "Null": "text/plain; charset=UTF-8",
            "RowBinary": "application/octet-stream",
            "RowBinaryWithNamesAndTypes": "application/octet-stream",
            "Native": "application/octet-stream",
            "Parquet": "application/octet-stream",
        }
        for fmt, ctype in cases.items():
            with self.subTest(fmt=fmt):
                self.assertEqual(gw.content_type_for(fmt), ctype)
                self.assertEqual(gw.content_type_for(fmt), ctype)  # cached


class SmallHelpersTest(unittest.TestCase):
    def test_quoting(self) -> None:
        self.assertEqual(gw.quote_string("a'b\\c"), "'a\\'b\\\\c'")
        self.assertEqual(gw.quote_ident("a`b\\c"), "`a\\`b\\\\c`")

    def test_safe_header_value(self) -> None:
        self.assertEqual(gw.safe_header_value("abc-123"), "abc-123")
        self.assertEqual(gw.safe_header_value("a\r\nb\u00e9c"), "a__b_c")

    def test_join_query(self) -> None:
        self.assertEqual(gw.join_query("INSERT INTO t VALUES", "(1)"), "INSERT INTO t VALUES\n(1)")
        self.assertEqual(gw.join_query("SELECT 1", ""), "SELECT 1")
        self.assertEqual(gw.join_query("", "SELECT 2"), "SELECT 2")
        self.assertEqual(gw.join_query("", ""), "")

    def test_result_summary_without_a_result(self) -> None:
        self.assertEqual(gw.result_summary(None),
                         '{"read_rows":"0","read_bytes":"0","written_rows":"0","written_bytes":"0"}')


# ---------------------------------------------------------------------------
# Content-Encoding
# ---------------------------------------------------------------------------


class ContentDecoderTest(ErrorAssertions):
    def decode(self, encoding: str, body: bytes, step: int = 1000) -> bytes:
        out = Collector()
        dec = gw.ContentDecoder(encoding, out)
        for off in range(0, len(body), step):
            dec.feed(body[off:off + step])
        dec.finish()
        return out.data

    def test_gzip_round_trip(self) -> None:
        data = sample(200_000)
        for encoding in ("gzip", "x-gzip"):
            for step in (100, 4096, 1 << 20):
                with self.subTest(encoding=encoding, step=step):
                    self.assertEqual(self.decode(encoding, gzip.compress(data), step), data)
        small = sample(3000)
        self.assertEqual(self.decode("gzip", gzip.compress(small), step=1), small)

    def test_deflate_accepts_zlib(self) -> None:
        data = sample(10_000)
        self.assertEqual(self.decode("deflate", zlib.compress(data)), data)

    def test_lz4_frame(self) -> None:
        data = sample(100_000)
        self.assertEqual(self.decode("lz4", lz4.frame.compress(data)), data)

    def test_truncated_stream(self) -> None:
        body = gzip.compress(sample(10_000))
        for encoding, truncated in (("gzip", body[:-8]), ("gzip", body[: len(body) // 2]),
                                    ("lz4", lz4.frame.compress(sample(10_000))[:-5]), ("gzip", b"")):
            with self.subTest(encoding=encoding, size=len(truncated)), self.assertRaises(ClickHouseError) as cm:
                self.decode(encoding, truncated)
            self.assertCode(cm, 271, fragment="truncated stream")

    def test_garbage(self) -> None:
        for encoding in ("gzip", "lz4"):
            with self.subTest(encoding=encoding), self.assertRaises(ClickHouseError) as cm:
                self.decode(encoding, b"this is not compressed at all")
            self.assertCode(cm, 271, fragment="Cannot decompress request body")

    def test_unsupported_encoding(self) -> None:
        with self.assertRaises(ClickHouseError) as cm:
            gw.ContentDecoder("br", Collector())
        self.assertCode(cm, 48, 501, fragment="Unsupported Content-Encoding: br")


# ---------------------------------------------------------------------------
# Request bodies
# ---------------------------------------------------------------------------


def chunked(data: bytes, *sizes: int, ext: bytes = b"", trailers: bytes = b"") -> bytes:
    out, pos = b"", 0
    for size in sizes:
        out += b"%x%s\r\n%s\r\n" % (size, ext, data[pos:pos + size])
        pos += size
    assert pos == len(data)
    return out + b"0" + ext + b"\r\n" + trailers + b"\r\n"


class FailingReader(io.BytesIO):
    def __init__(self, data: bytes, exc: BaseException) -> None:
        super().__init__(data)
        self._exc = exc

    def read(self, size: int | None = -1) -> bytes:
        raise self._exc

    def readline(self, size: int | None = -1) -> bytes:
        raise self._exc


class BodyReaderTest(ErrorAssertions):
    NEXT = b"GET /ping HTTP/1.1\r\n\r\n"  # the next request on the connection

    def reader(self, body: bytes, **headers: str) -> tuple[gw.BodyReader, io.BytesIO]:
        rfile = io.BytesIO(body + self.NEXT)
        return gw.BodyReader(rfile, {k.replace("_", "-"): v for k, v in headers.items()}), rfile

    def assertInStep(self, body: gw.BodyReader, rfile: io.BytesIO) -> None:
        self.assertEqual(body.state, "done")
        self.assertEqual(rfile.read(), self.NEXT)

    def test_has_body(self) -> None:
        cases = [({}, False), ({"content-length": "0"}, False), ({"content-length": " 0 "}, False),
                 ({"content-length": ""}, False), ({"content-length": "3"}, True),
                 ({"transfer-encoding": "chunked"}, True)]
        for headers, expected in cases:
            with self.subTest(headers=headers):
                body = gw.BodyReader(io.BytesIO(b""), headers)
                self.assertEqual(body.has_body(), expected)
                self.assertEqual(body.state, "unread" if expected else "done")

    def test_content_length_body(self) -> None:
        body, rfile = self.reader(b"SELECT 1", content_length="8")
        self.assertEqual(body.state, "unread")
        self.assertEqual(body.read(), b"SELECT 1")
        self.assertInStep(body, rfile)

    def test_content_length_body_through_the_decoders(self) -> None:
        data = sample(50_000)
        encoded = gzip.compress(data)
        body, rfile = self.reader(encoded, content_length=str(len(encoded)), content_encoding="gzip")
        self.assertEqual(body.read(), data)
        self.assertInStep(body, rfile)

    def test_chunked_body_with_extensions_and_trailers(self) -> None:
        raw = chunked("SELECT 42, 'ü'".encode(), 3, 1, 11, ext=b";name=value;x", trailers=b"X-Sum: 1\r\nX-Other: 2\r\n")
        body, rfile = self.reader(raw, transfer_encoding="chunked")
        self.assertEqual(body.read(), "SELECT 42, 'ü'".encode())
        self.assertInStep(body, rfile)

    def test_chunked_body_with_bare_newlines_and_listed_codings(self) -> None:
        raw = b"5\nhello\n6 ; ext\n world\n0\n\n"
        body, rfile = self.reader(raw, transfer_encoding="identity, Chunked")
        self.assertEqual(list(body.raw()), [b"hello", b" world"])
        self.assertInStep(body, rfile)

    def test_large_chunks_are_yielded_in_pieces(self) -> None:
        data = sample(3 << 20)
        body, rfile = self.reader(chunked(data, len(data)), transfer_encoding="chunked")
        pieces = list(body.raw())
        self.assertEqual(b"".join(pieces), data)
        self.assertTrue(all(len(p) <= 1 << 20 for p in pieces))
        self.assertInStep(body, rfile)

    def test_native_blocks_split_across_chunks(self) -> None:
        data = sample(200_000)
        encoded = gw.native_compress(data, block_size=30_000)
        sizes = [1, 24, 25, 1000, 7, len(encoded) - 1057]
        body, rfile = self.reader(chunked(encoded, *sizes), transfer_encoding="chunked")
        self.assertEqual(body.read(decompress=True), data)
        self.assertInStep(body, rfile)

    def test_pump_feeds_the_sink(self) -> None:
        data = sample(10_000)
        encoded = gzip.compress(gw.native_compress(data))
        body, rfile = self.reader(chunked(encoded, 10, len(encoded) - 10), transfer_encoding="chunked",
                                  content_encoding=" GZIP ")
        out = Collector()
        body.pump(out, decompress=True)
        self.assertEqual(out.data, data)
        self.assertInStep(body, rfile)

    def test_malformed_chunk_header(self) -> None:
        for raw in (b"zz\r\nhello\r\n0\r\n\r\n", b"-5\r\nhello\r\n0\r\n\r\n", b"5" * 2000 + b"\r\n"):
            body, _ = self.reader(raw, transfer_encoding="chunked")
            with self.subTest(raw=raw[:10]), self.assertRaises(ClickHouseError) as cm:
                body.read()
            self.assertCode(cm, 36, 400, close=True, fragment="Malformed chunk header")
            self.assertEqual(body.state, "reading")
            self.assertFalse(body.skip_unread())

    def test_missing_crlf_after_chunk(self) -> None:
        body, _ = self.reader(b"5\r\nhelloX\r\n0\r\n\r\n", transfer_encoding="chunked")
        with self.assertRaises(ClickHouseError) as cm:
            body.read()
        self.assertCode(cm, 36, close=True, fragment="missing CRLF")

    def test_connection_closed_mid_body(self) -> None:
        cases = [
            (b"SELECT", {"content-length": "10"}),
            (b"SELECT", {"content-length": "10", "content-encoding": "identity"}),
            (b"a\r\nhello", {"transfer-encoding": "chunked"}),
            (b"5\r\nhello\r\n", {"transfer-encoding": "chunked"}),
            (b"5\r\nhello\r\n0\r\nX-Trailer: 1\r\n", {"transfer-encoding": "chunked"}),
            (b"", {"transfer-encoding": "chunked"}),
        ]
        for raw, headers in cases:
            for decompress in (False, True):
                body = gw.BodyReader(io.BytesIO(raw), headers)
                with self.subTest(raw=raw, headers=headers, decompress=decompress), self.assertRaises(ClientGone):
                    body.read(decompress=decompress)
                self.assertEqual(body.state, "reading")

    def test_socket_errors_become_client_gone(self) -> None:
        for exc in (TimeoutError("timed out"), ConnectionResetError("reset")):
            for headers in ({"content-length": "5"}, {"transfer-encoding": "chunked"}):
                body = gw.BodyReader(FailingReader(b"", exc), headers)
                with self.subTest(exc=exc, headers=headers), self.assertRaises(ClientGone) as cm:
                    body.read()
                self.assertEqual(str(cm.exception), str(exc))

    def test_unsupported_transfer_encoding(self) -> None:
        for te in ("gzip", "chunked, gzip"):
            body, _ = self.reader(b"hello", transfer_encoding=te)
            with self.subTest(te=te), self.assertRaises(ClickHouseError) as cm:
                body.read()
            self.assertCode(cm, 48, 501, close=True, fragment=f"Unsupported Transfer-Encoding: {te}")

    def test_invalid_content_length(self) -> None:
        for cl in ("abc", "-1", "1.5"):
            body, _ = self.reader(b"hello", content_length=cl)
            with self.subTest(cl=cl), self.assertRaises(ClickHouseError) as cm:
                body.read()
            self.assertCode(cm, 36, close=True, fragment="Invalid Content-Length")

    def test_decoding_error_leaves_the_connection_in_step(self) -> None:
        encoded = bytearray(gw.native_compress(sample(5000), block_size=1000))
        encoded[0] ^= 1
        body, rfile = self.reader(chunked(bytes(encoded), 30, len(encoded) - 30), transfer_encoding="chunked")
        with self.assertRaises(ClickHouseError) as cm:
            body.read(decompress=True)
        self.assertCode(cm, 40, close=False)
        self.assertTrue(body.skip_unread())
        self.assertInStep(body, rfile)

    def test_truncated_native_body_after_a_complete_http_body(self) -> None:
        encoded = gw.native_compress(sample(5000))[:-3]
        body, rfile = self.reader(encoded, content_length=str(len(encoded)))
        with self.assertRaises(ClickHouseError) as cm:
            body.read(decompress=True)
        self.assertCode(cm, 33)
        self.assertInStep(body, rfile)

    def test_unsupported_content_encoding_leaves_the_body_unread(self) -> None:
        body, rfile = self.reader(b"hello", content_length="5", content_encoding="br")
        with self.assertRaises(ClickHouseError) as cm:
            body.read()
        self.assertCode(cm, 48)
        self.assertEqual(body.state, "unread")
        self.assertTrue(body.skip_unread())
        self.assertInStep(body, rfile)

    def test_skip_unread_and_discard(self) -> None:
        body, rfile = self.reader(chunked(b"ignored body", 12), transfer_encoding="chunked")
        self.assertTrue(body.skip_unread())
        self.assertInStep(body, rfile)
        self.assertTrue(body.skip_unread())  # nothing left to do
        body, rfile = self.reader(b"")
        body.discard()
        self.assertInStep(body, rfile)
        # A body that cannot be skipped in step: the connection must close.
        body = gw.BodyReader(io.BytesIO(b"5\r\nhel"), {"transfer-encoding": "chunked"})
        self.assertFalse(body.skip_unread())
        body = gw.BodyReader(io.BytesIO(b"x\r\n"), {"transfer-encoding": "chunked"})
        self.assertFalse(body.skip_unread())


# ---------------------------------------------------------------------------
# Request construction
# ---------------------------------------------------------------------------


class RequestConstructionTest(ErrorAssertions):
    def test_parse_query_string_sorts_parameters(self) -> None:
        req, controls = gw.parse_query_string(
            "query=SELECT+%7Bx%3AUInt8%7D&param_x=5&max_threads=2&database=db&default_format=JSON"
            "&param_empty=&readonly=1&query_id=q1&compress=1")
        self.assertEqual(controls, {"query": "SELECT {x:UInt8}", "database": "db", "default_format": "JSON",
                                    "query_id": "q1", "compress": "1"})
        self.assertEqual(req.params, {"x": "5", "empty": ""})
        self.assertEqual(req.settings, {"max_threads": "2", "readonly": "1"})
        self.assertIsNone(req.query_id)
        req, controls = gw.parse_query_string("")
        self.assertEqual((controls, req.params, req.settings), ({}, {}, {}))

    def test_classify_params_later_values_win(self) -> None:
        req, controls = gw.parse_query_string("query=a&param_p=1&s=1")
        gw.classify_params([("query", "b"), ("param_p", "2"), ("s", "2")], req, controls)
        self.assertEqual((controls, req.params, req.settings), ({"query": "b"}, {"p": "2"}, {"s": "2"}))

    def test_apply_controls_defaults(self) -> None:
        req = gw.Request()
        gw.apply_controls(req, {}, {})
        self.assertEqual(req.database, "")
        self.assertEqual(req.default_format, "TabSeparated")
        self.assertEqual((req.decompress, req.verify, req.compress), (False, True, False))
        assert req.query_id is not None
        self.assertRegex(req.query_id, r"\A[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
        first = req.query_id
        gw.apply_controls(req, {}, {})  # applied again (multipart): the id stays
        self.assertEqual(req.query_id, first)

    def test_apply_controls_from_controls_and_headers(self) -> None:
        req = gw.Request()
        headers = {"x-clickhouse-database": "hdb", "x-clickhouse-format": "CSV"}
        gw.apply_controls(req, {}, headers)
        self.assertEqual((req.database, req.default_format), ("hdb", "CSV"))
        controls = {"database": "db", "default_format": "JSONEachRow", "query_id": "id\r\n1",
                    "decompress": "1", "compress": "true",
                    "http_native_compression_disable_checksumming_on_decompress": "1"}
        gw.apply_controls(req, controls, headers)
        self.assertEqual((req.database, req.default_format, req.query_id), ("db", "JSONEachRow", "id__1"))
        self.assertEqual((req.decompress, req.verify, req.compress), (True, False, True))

    def test_apply_controls_flags(self) -> None:
        for value, on in (("0", False), ("", False), ("false", False), ("1", True), ("true", True),
                          ("yes", True), ("False", True)):
            req = gw.Request()
            gw.apply_controls(req, {"decompress": value, "compress": value,
                                    "http_native_compression_disable_checksumming_on_decompress": value}, {})
            with self.subTest(value=value):
                self.assertEqual((req.decompress, req.compress, req.verify), (on, on, not on))

    def test_bad_format(self) -> None:
        for controls, headers in (({"default_format": "JSON; DROP"}, {}), ({"default_format": "1JSON"}, {}),
                                  ({}, {"x-clickhouse-format": "Pretty Compact"})):
            req = gw.Request()
            with self.subTest(controls=controls, headers=headers), self.assertRaises(ClickHouseError) as cm:
                gw.apply_controls(req, controls, headers)
            self.assertCode(cm, 73, 404, fragment="Unknown format")
            self.assertIn("UNKNOWN_FORMAT", cm.exception.text)

    def test_python_only_formats_are_refused(self) -> None:
        for fmt in ("DataFrame", "dataframe", "ArrowTable", "DataStore", "debug"):
            with self.subTest(fmt=fmt), self.assertRaises(ClickHouseError) as cm:
                gw.apply_controls(gw.Request(), {"default_format": fmt}, {})
            self.assertCode(cm, 73, fragment=f"Unknown format {fmt}")

    def request(self, database: str = "", **settings: str) -> gw.Request:
        req = gw.Request()
        req.database = database
        req.settings = dict(settings)
        return req

    def test_pool_key_sorts_settings(self) -> None:
        req = self.request("db", z="1", a="2", m="3")
        self.assertEqual(gw.pool_key(req, "POST"), ("db", (("a", "2"), ("m", "3"), ("z", "1"))))
        self.assertEqual(gw.pool_key(self.request(), "POST"), ("", ()))
        self.assertEqual(req.settings, {"z": "1", "a": "2", "m": "3"}, "the request is not changed")

    def test_get_adds_readonly_2_last(self) -> None:
        self.assertEqual(gw.pool_key(self.request(z="1", a="2"), "GET"),
                         ("", (("a", "2"), ("z", "1"), ("readonly", "2"))))
        self.assertEqual(gw.pool_key(self.request(readonly="0"), "GET"), ("", (("readonly", "2"),)))
        self.assertEqual(gw.pool_key(self.request(readonly=""), "GET"), ("", (("readonly", "2"),)))
        # A stricter readonly asked for is kept.
        self.assertEqual(gw.pool_key(self.request(readonly="1", b="1"), "GET"),
                         ("", (("b", "1"), ("readonly", "1"))))

    def test_post_keeps_readonly_as_given_but_last(self) -> None:
        self.assertEqual(gw.pool_key(self.request(readonly="1", a="1", z="1"), "POST"),
                         ("", (("a", "1"), ("z", "1"), ("readonly", "1"))))
        self.assertEqual(gw.pool_key(self.request(readonly="0"), "POST"), ("", (("readonly", "0"),)))

    def test_invalid_setting_name(self) -> None:
        for name in ("bad-name", "1abc", "a b", "x;SELECT 1", ""):
            with self.subTest(name=name), self.assertRaises(ClickHouseError) as cm:
                gw.pool_key(self.request(**{name: "1"}), "POST")
            self.assertCode(cm, 115, 404, fragment=f"Unknown setting '{name}'")
            self.assertIn("UNKNOWN_SETTING", cm.exception.text)


if __name__ == "__main__":
    unittest.main()
