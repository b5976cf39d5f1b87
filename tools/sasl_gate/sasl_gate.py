#!/usr/bin/env python3
"""SASL gate: a test fixture that makes a plaintext Kafka broker (the
librdkafka mock cluster, which closes the connection on SaslHandshake)
authenticate its clients the way a Kafka broker's SASL listener does.

Owns: one listener per upstream broker; per connection, the broker side of
SaslHandshake v0/v1 and SaslAuthenticate v0-v2 (KIP-43, KIP-152), the raw
length-prefixed tokens that follow SaslHandshake v0, the server side of
PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and OAUTHBEARER
with unsecured JWS tokens (RFC 7628, KIP-255), a session lifetime with
re-authentication on a live connection (KIP-368), and then a byte relay to
the broker. ApiVersions answers gain SaslHandshake and SaslAuthenticate.
It must never accept a request other than ApiVersions or SASL before a
client is authenticated, never log a credential, and bind loopback only.

Usage:
  sasl_gate.py --upstream HOST:PORT [--upstream ...] --user NAME:PASSWORD ...
               [--mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER]
               [--session-lifetime-ms MS] [--events FILE]
Prints "GATE host:port,host:port,..." (one listener per upstream, same
order) once listening, then serves until SIGTERM or stdin closes.
--events appends one JSON line per authentication or session event (no
secrets), for tests to assert on.
"""

import argparse
import asyncio
import collections
import base64
import hashlib
import hmac
import json
import os
import signal
import struct
import sys
import time

LOOPBACK = "127.0.0.1"
MAX_SASL_FRAME = 512 * 1024   # a broker's sasl.server.max.receive.size default
MAX_FRAME = 100 * 1024 * 1024

API_PRODUCE = 0
API_SASL_HANDSHAKE = 17
API_API_VERSIONS = 18
API_SASL_AUTHENTICATE = 36

ERR_NONE = 0
ERR_UNSUPPORTED_SASL_MECHANISM = 33
ERR_ILLEGAL_SASL_STATE = 34
ERR_SASL_AUTHENTICATION_FAILED = 58

SCRAM_ITERATIONS = 4096


class AuthFailed(Exception):
    """The client's credentials were refused; the text is what Kafka says."""


class ProtocolError(Exception):
    """The client broke the SASL protocol: the connection is closed."""


# ------------------------------------------------------------------ wire bits

class Reader:
    def __init__(self, data, pos=0):
        self.data = data
        self.pos = pos

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError("truncated frame")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self):
        return struct.unpack(">h", self.take(2))[0]

    def int32(self):
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self):
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ProtocolError("varint too long")

    def nullable_string(self):
        n = self.int16()
        return None if n < 0 else self.take(n).decode()

    def string(self):
        return self.take(self.int16()).decode()

    def bytes32(self):
        return self.take(self.int32())

    def compact_bytes(self):
        n = self.uvarint()
        return b"" if n == 0 else self.take(n - 1)

    def tagged_fields(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def string16(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def nullable_string16(s):
    return struct.pack(">h", -1) if s is None else string16(s)


def compact_nullable_string(s):
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def frame(payload):
    return struct.pack(">i", len(payload)) + payload


def parse_request_header(payload):
    """(api_key, api_version, correlation_id, Reader at the body)."""
    r = Reader(payload)
    key, version, corr = r.int16(), r.int16(), r.int32()
    r.nullable_string()  # client id
    flexible = (key == API_SASL_AUTHENTICATE and version >= 2) or \
               (key == API_API_VERSIONS and version >= 3)
    if flexible:
        r.tagged_fields()
    return key, version, corr, r


# -------------------------------------------------------------- mechanisms

class Plain:
    """RFC 4616: one message "authzid NUL authcid NUL passwd"."""
    name = "PLAIN"

    def __init__(self, users):
        self.users = users
        self.principal = None

    def step(self, token):
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise AuthFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode(errors="replace") for p in parts)
        if authzid and authzid != user:
            raise AuthFailed("Authentication failed: Client requested an authorization id "
                             "that is different from username")
        if self.users.get(user) != password:
            raise AuthFailed("Authentication failed: Invalid username or password")
        self.principal = user
        return b"", True


def scram_unescape(name):
    return name.replace("=2C", ",").replace("=3D", "=")


class Scram:
    """RFC 5802 server side: client-first -> server-first, client-final ->
    server-final. Salted passwords are derived once per user and mechanism."""

    def __init__(self, name, users):
        self.name = name
        self.hash = hashlib.sha256 if name == "SCRAM-SHA-256" else hashlib.sha512
        self.users = users
        self.principal = None
        self.state = "first"

    def _hmac(self, key, msg):
        return hmac.new(key, msg, self.hash).digest()

    def _fail(self):
        return AuthFailed("Authentication failed during authentication due to invalid "
                          "credentials with SASL mechanism %s" % self.name)

    def step(self, token):
        if self.state == "first":
            return self._first(token.decode(errors="replace")), False
        if self.state == "final":
            return self._final(token.decode(errors="replace")), True
        raise ProtocolError("SCRAM exchange already complete")

    def _first(self, msg):
        # gs2-header: "n,," or "n,a=authzid," (no channel binding over Kafka).
        if not (msg.startswith("n,") or msg.startswith("y,")):
            raise AuthFailed("Invalid SCRAM client first message")
        comma = msg.index(",", 2)
        self.gs2_header = msg[:comma + 1]
        self.client_first_bare = msg[comma + 1:]
        attrs = dict(a.split("=", 1) for a in self.client_first_bare.split(",") if "=" in a)
        if "n" not in attrs or "r" not in attrs:
            raise AuthFailed("Invalid SCRAM client first message")
        self.user = scram_unescape(attrs["n"])
        password = self.users.get(self.user)
        self.salt = os.urandom(16)
        # An unknown user still gets a well-formed challenge; it fails at
        # the proof, as a broker's does, so user names are not disclosed.
        self.salted = hashlib.pbkdf2_hmac(self.hash().name, (password or os.urandom(8).hex())
                                          .encode(), self.salt, SCRAM_ITERATIONS)
        self.known_user = password is not None
        self.nonce = attrs["r"] + base64.b64encode(os.urandom(18)).decode()
        self.server_first = "r=%s,s=%s,i=%d" % (self.nonce, base64.b64encode(self.salt).decode(),
                                                 SCRAM_ITERATIONS)
        self.state = "final"
        return self.server_first.encode()

    def _final(self, msg):
        self.state = "done"
        if ",p=" not in msg:
            raise self._fail()
        without_proof, proof_b64 = msg.rsplit(",p=", 1)
        attrs = dict(a.split("=", 1) for a in without_proof.split(",") if "=" in a)
        # A Kafka broker accepts a final nonce that ends with its own
        # (librdkafka before 2.1 sends its client nonce once more in front).
        if not attrs.get("r", "").endswith(self.nonce):
            raise AuthFailed("Invalid SCRAM client final message: nonce mismatch")
        if base64.b64decode(attrs.get("c", "")) != self.gs2_header.encode():
            raise AuthFailed("Invalid SCRAM client final message: channel binding mismatch")
        auth_message = ",".join((self.client_first_bare, self.server_first,
                                 without_proof)).encode()
        client_key = self._hmac(self.salted, b"Client Key")
        stored_key = self.hash(client_key).digest()
        signature = self._hmac(stored_key, auth_message)
        try:
            proof = base64.b64decode(proof_b64)
        except ValueError:
            raise self._fail()
        if len(proof) != len(signature):
            raise self._fail()
        recovered = bytes(a ^ b for a, b in zip(proof, signature))
        if not self.known_user or not hmac.compare_digest(self.hash(recovered).digest(),
                                                          stored_key):
            raise self._fail()
        server_key = self._hmac(self.salted, b"Server Key")
        self.principal = self.user
        return ("v=" + base64.b64encode(self._hmac(server_key, auth_message)).decode()).encode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class OAuthBearer:
    """RFC 7628 client initial response with an unsecured JWS (alg "none")
    whose "sub" is the principal and "exp" is checked. A refused token gets
    the RFC's JSON error challenge; the client's %x01 then ends in failure."""
    name = "OAUTHBEARER"

    def __init__(self, users):
        self.principal = None
        self.failed_with = None

    def step(self, token):
        if self.failed_with is not None:
            if token != b"\x01":
                raise ProtocolError("expected %x01 after an OAUTHBEARER error challenge")
            raise AuthFailed(self.failed_with)
        try:
            text = token.decode()
            fields = text.split("\x01")
            auth = next(f for f in fields if f.startswith("auth="))
            scheme, jws = auth[len("auth="):].split(" ", 1)
            if scheme.lower() != "bearer":
                raise ValueError("scheme")
            header_b64, payload_b64, _sig = jws.split(".")
            header = json.loads(b64url_decode(header_b64))
            claims = json.loads(b64url_decode(payload_b64))
            if header.get("alg") != "none":
                raise ValueError("alg")
            if not claims.get("sub"):
                raise ValueError("sub")
            if float(claims.get("exp", 0)) <= time.time():
                self.failed_with = "Authentication failed: The token expired"
                return json.dumps({"status": "invalid_token"}).encode(), False
        except (ValueError, StopIteration, UnicodeDecodeError, json.JSONDecodeError):
            self.failed_with = "Authentication failed: Invalid OAUTHBEARER token"
            return json.dumps({"status": "invalid_token"}).encode(), False
        self.principal = claims["sub"]
        return b"", True


def make_mechanism(name, users):
    if name == "PLAIN":
        return Plain(users)
    if name in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        return Scram(name, users)
    if name == "OAUTHBEARER":
        return OAuthBearer(users)
    raise ValueError(name)


# ------------------------------------------------------------------ the gate

class Events:
    def __init__(self, path):
        self.file = open(path, "a") if path else None

    def emit(self, **fields):
        if self.file is None:
            return
        fields["t"] = round(time.time(), 6)
        self.file.write(json.dumps(fields, sort_keys=True) + "\n")
        self.file.flush()


class GateConnection:
    """One client connection: authenticate, then relay to the broker."""

    def __init__(self, gate, upstream, reader, writer):
        self.gate = gate
        self.upstream = upstream
        self.client_r, self.client_w = reader, writer
        self.peer = "%s:%d" % writer.get_extra_info("peername")[:2]
        self.broker_r = self.broker_w = None
        self.mechanism = None        # chosen by the last SaslHandshake
        self.raw_tokens = False      # after SaslHandshake v0: tokens without headers
        self.authenticated = False
        self.principal = None
        self.session_expires = None  # monotonic seconds, None: never
        self.outstanding = 0         # relayed requests the broker has not answered
        self.patches = collections.deque()  # per relayed request: ApiVersions version or None
        self.answered = asyncio.Condition()
        self.write_lock = asyncio.Lock()

    async def run(self):
        try:
            self.broker_r, self.broker_w = await asyncio.wait_for(
                asyncio.open_connection(*self.upstream), 10)
        except (OSError, asyncio.TimeoutError):
            self.client_w.close()
            return
        relay = asyncio.ensure_future(self.relay_responses())
        try:
            await self.serve_client()
        except (ProtocolError, AuthFailed) as e:
            self.gate.events.emit(event="closed", peer=self.peer, reason=str(e))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            relay.cancel()
            for w in (self.client_w, self.broker_w):
                try:
                    w.close()
                except OSError:
                    pass

    async def read_frame(self, limit):
        size = struct.unpack(">i", await self.client_r.readexactly(4))[0]
        if size < 0 or size > limit:
            raise ProtocolError("frame size %d out of bounds" % size)
        return await self.client_r.readexactly(size)

    async def to_client(self, data):
        async with self.write_lock:
            self.client_w.write(data)
            await self.client_w.drain()

    async def relay_responses(self):
        try:
            while True:
                head = await self.broker_r.readexactly(4)
                body = await self.broker_r.readexactly(struct.unpack(">i", head)[0])
                async with self.answered:
                    patch = self.patches.popleft() if self.patches else None
                if patch is not None:
                    body = body[:4] + patch_api_versions(body[4:], patch)
                await self.to_client(frame(body))
                async with self.answered:
                    self.outstanding -= 1
                    self.answered.notify_all()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            self.client_w.close()

    async def relay_request(self, payload, patch=None):
        """`patch`: the ApiVersions version whose answer gains the SASL keys."""
        async with self.answered:
            self.outstanding += 1
            self.patches.append(patch)
        self.broker_w.write(frame(payload))
        await self.broker_w.drain()

    async def wait_for_relayed_answers(self):
        """Gate answers follow the broker's answers to earlier requests."""
        async with self.answered:
            await self.answered.wait_for(lambda: self.outstanding == 0)

    async def serve_client(self):
        while True:
            if self.raw_tokens:
                await self.raw_token_exchange()
                continue
            payload = await self.read_frame(MAX_FRAME if self.authenticated else MAX_SASL_FRAME)
            key, version, corr, body = parse_request_header(payload)
            if key == API_SASL_HANDSHAKE:
                await self.wait_for_relayed_answers()
                await self.handshake(version, corr, body)
            elif key == API_SASL_AUTHENTICATE:
                await self.wait_for_relayed_answers()
                await self.authenticate(version, corr, body)
            elif key == API_API_VERSIONS:
                await self.relay_request(payload, patch=version)
            elif not self.authenticated:
                raise ProtocolError("api key %d before authentication" % key)
            else:
                if self.session_expires is not None and time.monotonic() > self.session_expires:
                    self.gate.events.emit(event="session_expired", peer=self.peer,
                                          principal=self.principal, api_key=key)
                    raise ProtocolError("session expired")
                await self.relay_request(payload)

    async def handshake(self, version, corr, body):
        mechanism = body.string()
        ok = mechanism in self.gate.mechanisms
        resp = struct.pack(">i", corr) + struct.pack(
            ">h", ERR_NONE if ok else ERR_UNSUPPORTED_SASL_MECHANISM)
        resp += struct.pack(">i", len(self.gate.mechanisms))
        for m in self.gate.mechanisms:
            resp += string16(m)
        await self.to_client(frame(resp))
        self.gate.events.emit(event="handshake", peer=self.peer, version=version,
                              mechanism=mechanism, accepted=ok,
                              reauthentication=self.authenticated)
        if not ok:
            return
        self.mechanism = make_mechanism(mechanism, self.gate.users)
        self.raw_tokens = version == 0

    async def raw_token_exchange(self):
        token = await self.read_frame(MAX_SASL_FRAME)
        try:
            response, done = self.mechanism.step(token)
        except AuthFailed as e:
            # SaslHandshake v0 framing has no error field: a broker closes.
            self.gate.events.emit(event="auth", peer=self.peer, framing="raw_tokens",
                                  mechanism=self.mechanism.name, result="failed",
                                  error=str(e))
            raise
        await self.to_client(frame(response))
        if done:
            self.raw_tokens = False
            self.succeeded("raw_tokens", None)

    async def authenticate(self, version, corr, body):
        if self.mechanism is None:
            raise ProtocolError("SaslAuthenticate without SaslHandshake")
        token = body.compact_bytes() if version >= 2 else body.bytes32()
        error, message, response, done = ERR_NONE, None, b"", False
        try:
            response, done = self.mechanism.step(token)
        except AuthFailed as e:
            error, message = ERR_SASL_AUTHENTICATION_FAILED, str(e)
        lifetime_ms = self.gate.session_lifetime_ms if (done and version >= 1) else 0
        resp = struct.pack(">i", corr)
        if version >= 2:
            resp += uvarint(0)  # response header v1 tagged fields
            resp += struct.pack(">h", error) + compact_nullable_string(message)
            resp += uvarint(len(response) + 1) + response
            resp += struct.pack(">q", lifetime_ms) + uvarint(0)
        else:
            resp += struct.pack(">h", error) + nullable_string16(message)
            resp += struct.pack(">i", len(response)) + response
            if version >= 1:
                resp += struct.pack(">q", lifetime_ms)
        await self.to_client(frame(resp))
        if error != ERR_NONE:
            self.gate.events.emit(event="auth", peer=self.peer, framing="SaslAuthenticate v%d" % version,
                                  mechanism=self.mechanism.name, result="failed", error=message)
            raise AuthFailed(message)
        if done:
            self.succeeded("SaslAuthenticate v%d" % version, lifetime_ms)

    def succeeded(self, framing, lifetime_ms):
        again = self.authenticated
        if again and self.mechanism.principal != self.principal:
            raise ProtocolError("re-authentication changed the principal")
        self.authenticated = True
        self.principal = self.mechanism.principal
        self.session_expires = (time.monotonic() + lifetime_ms / 1000.0) if lifetime_ms else None
        self.gate.events.emit(event="auth", peer=self.peer, framing=framing,
                              mechanism=self.mechanism.name, result="ok",
                              principal=self.principal, reauthentication=again,
                              session_lifetime_ms=lifetime_ms or 0)
        self.mechanism = None


class Gate:
    def __init__(self, opts):
        self.users = dict(u.split(":", 1) for u in opts.user)
        self.mechanisms = [m for m in opts.mechanisms.split(",") if m]
        self.session_lifetime_ms = opts.session_lifetime_ms
        self.events = Events(opts.events)
        self.upstreams = []
        for u in opts.upstream:
            host, _, port = u.rpartition(":")
            self.upstreams.append((host, int(port)))


def patch_api_versions(body, version):
    """The broker's ApiVersions response body with SaslHandshake 0-1 and
    SaslAuthenticate 0-2 listed (replacing whatever it said of them)."""
    r = Reader(body)
    error = r.int16()
    wanted = {API_SASL_HANDSHAKE: (0, 1), API_SASL_AUTHENTICATE: (0, 2)}
    entries = []
    if version >= 3:
        n = r.uvarint() - 1
        for _ in range(max(n, 0)):
            key, lo, hi = r.int16(), r.int16(), r.int16()
            start = r.pos
            r.tagged_fields()
            entries.append((key, lo, hi, body[start:r.pos]))
    else:
        n = r.int32()
        for _ in range(max(n, 0)):
            entries.append((r.int16(), r.int16(), r.int16(), b""))
    rest = body[r.pos:]
    if error != ERR_NONE:
        return body
    entries = [e for e in entries if e[0] not in wanted]
    for key, (lo, hi) in wanted.items():
        entries.append((key, lo, hi, uvarint(0) if version >= 3 else b""))
    entries.sort()
    out = struct.pack(">h", error)
    out += uvarint(len(entries) + 1) if version >= 3 else struct.pack(">i", len(entries))
    for key, lo, hi, tags in entries:
        out += struct.pack(">hhh", key, lo, hi) + tags
    return out + rest


async def serve(opts):
    gate = Gate(opts)
    servers = []
    addresses = []

    for upstream in gate.upstreams:
        async def on_client(reader, writer, upstream=upstream):
            conn = GateConnection(gate, upstream, reader, writer)
            await conn.run()
        server = await asyncio.start_server(on_client, LOOPBACK, 0)
        servers.append(server)
        addresses.append("%s:%d" % server.sockets[0].getsockname()[:2])
    print("GATE " + ",".join(addresses), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    for s in servers:
        s.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--upstream", action="append", required=True)
    p.add_argument("--user", action="append", default=[], help="NAME:PASSWORD")
    p.add_argument("--mechanisms", default="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER")
    p.add_argument("--session-lifetime-ms", type=int, default=0)
    p.add_argument("--events")
    asyncio.run(serve(p.parse_args()))


if __name__ == "__main__":
    main()
