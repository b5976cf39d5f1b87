"""Minimal Kafka wire encoder/decoder for integration tests.

Owns: size-prefixed framing, request header v1/v2, response header v0/v1,
and just enough request/response bodies (ApiVersions v0-2, Metadata v1/v7,
OffsetFetch v1, Heartbeat v0, ListOffsets v1, Produce v3 with a record batch
v2 and its CRC32C) to probe a proxy from outside. Written from the protocol's
field layout; it must never import epochgate code or share its codec, so it
stays an independent check. Raises WireError on malformed input.
"""

import socket
import struct
import time

API_PRODUCE = 0
API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_OFFSET_FETCH = 9
API_HEARTBEAT = 12
API_API_VERSIONS = 18


class WireError(Exception):
    """Malformed or unexpected bytes on the wire."""


# ---------------------------------------------------------------- primitives

class Writer:
    """Appends big-endian Kafka primitives to a bytearray."""

    def __init__(self):
        self.buf = bytearray()

    def int8(self, v):
        self.buf += struct.pack(">b", v)
        return self

    def int16(self, v):
        self.buf += struct.pack(">h", v)
        return self

    def int32(self, v):
        self.buf += struct.pack(">i", v)
        return self

    def uint32(self, v):
        self.buf += struct.pack(">I", v)
        return self

    def int64(self, v):
        self.buf += struct.pack(">q", v)
        return self

    def boolean(self, v):
        return self.int8(1 if v else 0)

    def string(self, s):
        if s is None:
            return self.int16(-1)
        b = s.encode()
        self.int16(len(b))
        self.buf += b
        return self

    def bytes_(self, b):
        if b is None:
            return self.int32(-1)
        self.int32(len(b))
        self.buf += b
        return self

    def uvarint(self, v):
        while True:
            byte = v & 0x7F
            v >>= 7
            if v:
                self.buf.append(byte | 0x80)
            else:
                self.buf.append(byte)
                return self

    def varint(self, v):
        return self.uvarint((v << 1) ^ (v >> 63))  # zigzag, 64-bit

    def compact_string(self, s):
        if s is None:
            return self.uvarint(0)
        b = s.encode()
        self.uvarint(len(b) + 1)
        self.buf += b
        return self

    def empty_tags(self):
        return self.uvarint(0)

    def array(self, items, write_item):
        if items is None:
            return self.int32(-1)
        self.int32(len(items))
        for item in items:
            write_item(self, item)
        return self

    def raw(self, b):
        self.buf += b
        return self

    def getvalue(self):
        return bytes(self.buf)


class Reader:
    """Reads big-endian Kafka primitives, checking every length."""

    def __init__(self, data):
        self.data = bytes(data)
        self.pos = 0

    def remaining(self):
        return len(self.data) - self.pos

    def _take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise WireError("need %d bytes at %d, have %d" % (n, self.pos, self.remaining()))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int8(self):
        return struct.unpack(">b", self._take(1))[0]

    def int16(self):
        return struct.unpack(">h", self._take(2))[0]

    def int32(self):
        return struct.unpack(">i", self._take(4))[0]

    def int64(self):
        return struct.unpack(">q", self._take(8))[0]

    def boolean(self):
        return self.int8() != 0

    def string(self):
        n = self.int16()
        return None if n < 0 else self._take(n).decode()

    def bytes_(self):
        n = self.int32()
        return None if n < 0 else self._take(n)

    def uvarint(self):
        shift = value = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise WireError("varint too long")

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())

    def array(self, read_item):
        n = self.int32()
        if n < 0:
            return None
        if n > self.remaining():  # every item takes at least one byte
            raise WireError("array length %d exceeds frame" % n)
        return [read_item(self) for _ in range(n)]


# ------------------------------------------------------------------- CRC32C

def _crc32c_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), as record batch v2 uses."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ------------------------------------------------------------------ framing

def request_frame(api_key, api_version, correlation_id, body, client_id="epochgate-wire-test",
                  flexible=False):
    """Size-prefixed request: header v1 (v2 when `flexible`) + body bytes."""
    w = Writer().int16(api_key).int16(api_version).int32(correlation_id).string(client_id)
    if flexible:
        w.empty_tags()
    payload = w.getvalue() + body
    return struct.pack(">i", len(payload)) + payload


def split_frames(data):
    """Splits a byte string into complete size-prefixed frames (with their
    size prefix) and the incomplete rest."""
    frames, pos = [], 0
    while len(data) - pos >= 4:
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0:
            raise WireError("negative frame size")
        if len(data) - pos - 4 < size:
            break
        frames.append(bytes(data[pos:pos + 4 + size]))
        pos += 4 + size
    return frames, bytes(data[pos:])


def frame_correlation_id(frame, is_request):
    """Correlation id of a size-prefixed frame."""
    return struct.unpack_from(">i", frame, 8 if is_request else 4)[0]


def response_body(frame, flexible_header=False):
    """Returns (correlation_id, Reader over the body) of a response frame."""
    r = Reader(frame[4:])
    corr = r.int32()
    if flexible_header:
        r.tags()
    return corr, r


class Connection:
    """Blocking client connection with a receive timeout (seconds). With
    `tls` (an ssl.SSLContext) the frames go over TLS, the handshake done
    here with `server_name` (default: `host`) as SNI and verified name."""

    def __init__(self, host, port, timeout=10.0, tls=None, server_name=None):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname=server_name or host)
        self.timeout = timeout
        self.pending = b""

    def send(self, data):
        self.sock.sendall(data)

    def recv_frame(self, timeout=None):
        """Next complete frame, or raises socket.timeout / WireError on EOF."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            frames, rest = split_frames(self.pending)
            if frames:
                first = frames[0]
                self.pending = self.pending[len(first):]
                return first
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no complete frame within timeout")
            self.sock.settimeout(left)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise WireError("connection closed by peer")
            self.pending += chunk

    def expect_silence(self, seconds):
        """True if no byte arrives within `seconds` (connection still open)."""
        if self.pending:
            return False
        self.sock.settimeout(seconds)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            return True
        if not chunk:
            raise WireError("connection closed by peer")
        self.pending += chunk
        return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------- ApiVersions

def api_versions_request(correlation_id, version=0):
    if version > 2:
        raise ValueError("only ApiVersions v0-2 (non-flexible) are encoded here")
    return request_frame(API_API_VERSIONS, version, correlation_id, b"")


def parse_api_versions_response(frame, version=0):
    """Returns (correlation_id, error_code, {api_key: (min, max)})."""
    corr, r = response_body(frame)  # ApiVersions responses always use header v0
    error = r.int16()
    keys = r.array(lambda r: (r.int16(), r.int16(), r.int16()))
    if version >= 1:
        r.int32()  # throttle_time_ms
    return corr, error, {k: (lo, hi) for k, lo, hi in keys or []}


# ------------------------------------------------------------------ Metadata

def metadata_request(correlation_id, topics=None, version=1):
    """Metadata v1 (topics or all) or v7 (also allow_auto_topic_creation=false)."""
    if version not in (1, 7):
        raise ValueError("Metadata v1 and v7 only")
    w = Writer().array(topics, lambda w, t: w.string(t))
    if version >= 4:
        w.boolean(False)
    return request_frame(API_METADATA, version, correlation_id, w.getvalue())


def parse_metadata_response(frame, version=1):
    """Returns dict: correlation_id, brokers {id: (host, port, rack)},
    controller_id, topics {name: {error, partitions {index: {...}}}}."""
    corr, r = response_body(frame)
    if version >= 3:
        r.int32()  # throttle_time_ms
    brokers = r.array(lambda r: (r.int32(), r.string(), r.int32(), r.string()))
    if version >= 2:
        r.string()  # cluster_id
    controller = r.int32()

    def partition(r):
        p = {"error": r.int16(), "index": r.int32(), "leader": r.int32()}
        p["leader_epoch"] = r.int32() if version >= 7 else None
        p["replicas"] = r.array(lambda r: r.int32())
        p["isr"] = r.array(lambda r: r.int32())
        if version >= 5:
            p["offline"] = r.array(lambda r: r.int32())
        return p

    def topic(r):
        error, name, internal = r.int16(), r.string(), r.boolean()
        parts = r.array(partition) or []
        return name, {"error": error, "internal": internal,
                      "partitions": {p["index"]: p for p in parts}}

    topics = dict(r.array(topic) or [])
    return {"correlation_id": corr,
            "brokers": {b[0]: (b[1], b[2], b[3]) for b in brokers or []},
            "controller_id": controller, "topics": topics}


# --------------------------------------------- APIs a proxy does not decode

def offset_fetch_request(correlation_id, group, topics):
    """OffsetFetch v1: `topics` is {name: [partition, ...]}."""
    w = Writer().string(group)
    w.array(sorted(topics.items()),
            lambda w, t: w.string(t[0]).array(t[1], lambda w, p: w.int32(p)))
    return request_frame(API_OFFSET_FETCH, 1, correlation_id, w.getvalue())


def parse_offset_fetch_response(frame):
    """OffsetFetch v1 -> (correlation_id, {(topic, partition): (offset, error)})."""
    corr, r = response_body(frame)
    out = {}

    def topic(r):
        name = r.string()
        for idx, off, _meta, err in r.array(
                lambda r: (r.int32(), r.int64(), r.string(), r.int16())) or []:
            out[(name, idx)] = (off, err)

    r.array(topic)
    return corr, out


def heartbeat_request(correlation_id, group, generation_id=-1, member_id=""):
    """Heartbeat v0."""
    body = Writer().string(group).int32(generation_id).string(member_id).getvalue()
    return request_frame(API_HEARTBEAT, 0, correlation_id, body)


# ---------------------------------------------------------------- ListOffsets

def list_offsets_request(correlation_id, topic, partitions, timestamp=-1):
    """ListOffsets v1 (timestamp -1 = latest, -2 = earliest)."""
    w = Writer().int32(-1)
    w.array([topic], lambda w, t: w.string(t).array(
        partitions, lambda w, p: w.int32(p).int64(timestamp)))
    return request_frame(API_LIST_OFFSETS, 1, correlation_id, w.getvalue())


def parse_list_offsets_response(frame):
    """ListOffsets v1 -> (correlation_id, {(topic, partition): (offset, error)})."""
    corr, r = response_body(frame)
    out = {}

    def topic(r):
        name = r.string()
        for idx, err, _ts, off in r.array(
                lambda r: (r.int32(), r.int16(), r.int64(), r.int64())) or []:
            out[(name, idx)] = (off, err)

    r.array(topic)
    return corr, out


# -------------------------------------------------------------------- Produce

def record_batch(values, base_timestamp_ms=None):
    """Uncompressed record batch (magic 2) of `values` (list of bytes), no
    keys, no producer id."""
    ts = int(time.time() * 1000) if base_timestamp_ms is None else base_timestamp_ms
    records = bytearray()
    for i, value in enumerate(values):
        body = (Writer().int8(0).varint(0).varint(i).varint(-1)
                .varint(len(value)).raw(value).uvarint(0).getvalue())
        records += Writer().varint(len(body)).getvalue() + body
    after_crc = (Writer().int16(0).int32(len(values) - 1).int64(ts).int64(ts)
                 .int64(-1).int16(-1).int32(-1).int32(len(values)).raw(bytes(records))
                 .getvalue())
    # batchLength counts from partitionLeaderEpoch to the end.
    tail = Writer().int32(-1).int8(2).uint32(crc32c(after_crc)).raw(after_crc).getvalue()
    return Writer().int64(0).int32(len(tail)).raw(tail).getvalue()


def produce_request(correlation_id, topic, partition, batch, acks, timeout_ms=10000, version=3):
    """Produce v3-v8 (same request layout) for one partition."""
    if not 3 <= version <= 8:
        raise ValueError("Produce v3-v8 only")
    w = Writer().string(None).int16(acks).int32(timeout_ms)
    w.array([topic], lambda w, t: w.string(t).array(
        [partition], lambda w, p: w.int32(p).bytes_(batch)))
    return request_frame(API_PRODUCE, version, correlation_id, w.getvalue())


def parse_produce_response(frame, version=3):
    """Produce v3-v7 -> (correlation_id, {(topic, partition): (error, base_offset)})."""
    corr, r = response_body(frame)
    out = {}

    def topic(r):
        name = r.string()

        def part(r):
            idx, err, base = r.int32(), r.int16(), r.int64()
            r.int64()  # log_append_time_ms (v2+)
            if version >= 5:
                r.int64()  # log_start_offset
            out[(name, idx)] = (err, base)

        r.array(part)

    r.array(topic)
    r.int32()  # throttle_time_ms
    return corr, out
