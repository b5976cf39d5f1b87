"""A loopback broker whose SASL listener asks for SCRAM-SHA-512 with an
iteration count and salt the test picks, so a test can make epochgate's
salted-password derivation (RFC 5802 Hi(), PBKDF2) slow and uncached, and
see, from the broker's side, whether each login's client-final message was
sent: with `hold` set, a connection that got a new-salt server-first is
not read again until the test sets the event, so its socket's receive
buffer shows (client_finals_sent()) what epochgate has written by then,
whatever the threads' scheduling.
It answers ApiVersions v0-2, Metadata v0-1 (itself as node 1, no topics),
SaslHandshake v1 and SaslAuthenticate v1 (RFC 5802 server side, checking
the client proof); every other request gets no answer.
Must never bind anything but 127.0.0.1, outlive close(), or log a secret.
"""

import base64
import hashlib
import hmac
import os
import select
import struct
import threading
import time

from . import kafka_wire as kw
from .loopback_listener import LoopbackListener

API_METADATA = 3
API_SASL_HANDSHAKE = 17
API_VERSIONS = 18
API_SASL_AUTHENTICATE = 36
ERR_SASL_AUTHENTICATION_FAILED = 58


class ScramBroker(LoopbackListener):
    """`fresh_salts`: False gives every login one fixed salt (a Kafka
    broker's per-credential salt: one derivation serves every login);
    True gives each login a new one (each needs its own derivation)."""

    def __init__(self, user, password, iterations=100000):
        self.user, self._password, self.iterations = user, password.encode(), iterations
        self.fresh_salts = False
        self.hold = None  # threading.Event: set, held connections are read again
        self._held = []
        self._fixed_salt = os.urandom(16)
        self._lock = threading.Lock()
        self.events = []  # (monotonic time, kind, connection number)
        self._listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    def count(self, kind, since=0):
        with self._lock:
            return sum(1 for e in self.events[since:] if e[1] == kind)

    def mark(self):
        with self._lock:
            return len(self.events)

    def client_finals_sent(self):
        """How many held connections have bytes waiting: the client-final
        messages epochgate has written on them."""
        with self._lock:
            held = list(self._held)
        readable, _, _ = select.select(held, [], [], 0) if held else ([], [], [])
        return len(readable)

    def _event(self, kind, n):
        with self._lock:
            self.events.append((time.monotonic(), kind, n))

    def _accept(self):
        n = 0
        while not self._closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            n += 1
            with self._lock:
                self._conns.append(c)
            threading.Thread(target=self._serve, args=(c, n), daemon=True).start()

    def _body(self, key, version, payload, state, n):
        r = kw.Reader(payload)
        r.int16(), r.int16(), r.int32(), r.string()  # header v1
        if key == API_VERSIONS and version <= 2:
            keys = [(API_METADATA, 0, 1), (API_SASL_HANDSHAKE, 0, 1), (API_VERSIONS, 0, 2),
                    (API_SASL_AUTHENTICATE, 0, 1)]
            w = kw.Writer().int16(0).array(keys, lambda w, k: w.int16(k[0]).int16(k[1])
                                           .int16(k[2]))
            if version >= 1:
                w.int32(0)
            self._event("api_versions", n)
            return w.getvalue()
        if key == API_METADATA and version <= 1:
            w = kw.Writer().int32(1).int32(1).string("127.0.0.1").int32(self.port)
            if version >= 1:
                w.string(None).int32(1)
            return w.int32(0).getvalue()
        if key == API_SASL_HANDSHAKE:
            return kw.Writer().int16(0).array(["SCRAM-SHA-512"], lambda w, m: w.string(m)) \
                .getvalue()
        if key == API_SASL_AUTHENTICATE:
            token = r.bytes_().decode()
            if "first" not in state:
                return self._server_first(token, state, n)
            return self._server_final(token, state, n)
        return None

    def _server_first(self, token, state, n):
        bare = token[3:]  # after "n,,"
        attrs = dict(p.split("=", 1) for p in bare.split(","))
        salt = os.urandom(16) if self.fresh_salts else self._fixed_salt
        nonce = attrs["r"] + base64.b64encode(os.urandom(18)).decode()
        state["first"] = "r=%s,s=%s,i=%d" % (nonce, base64.b64encode(salt).decode(),
                                              self.iterations)
        state["bare"], state["salt"], state["user"] = bare, salt, attrs["n"]
        state["held"] = self.fresh_salts and self.hold is not None
        return self._auth_answer(0, state["first"].encode())

    def _server_final(self, token, state, n):
        self._event("client_final", n)
        without_proof, proof = token.rsplit(",p=", 1)
        salted = hashlib.pbkdf2_hmac("sha512", self._password, state["salt"], self.iterations)
        auth = ("%s,%s,%s" % (state["bare"], state["first"], without_proof)).encode()
        client_key = hmac.new(salted, b"Client Key", "sha512").digest()
        signature = hmac.new(hashlib.sha512(client_key).digest(), auth, "sha512").digest()
        expected = bytes(a ^ b for a, b in zip(client_key, signature))
        if state["user"] != self.user or base64.b64decode(proof) != expected:
            return self._auth_answer(ERR_SASL_AUTHENTICATION_FAILED, b"", "bad proof")
        server_key = hmac.new(salted, b"Server Key", "sha512").digest()
        verifier = hmac.new(server_key, auth, "sha512").digest()
        self._event("logged_in", n)
        return self._auth_answer(0, b"v=" + base64.b64encode(verifier))

    @staticmethod
    def _auth_answer(error, data, message=None):
        return kw.Writer().int16(error).string(message).bytes_(data).int64(0).getvalue()

    def _serve(self, c, n):
        state = {}
        try:
            for f in self.frames(c):
                key, version = struct.unpack_from(">hh", f, 4)
                body = self._body(key, version, f[4:], state, n)
                if body is None:
                    continue
                self.answer(c, kw.frame_correlation_id(f, True), body)
                if key == API_SASL_AUTHENTICATE and "first" in state and "final" not in state:
                    state["final"] = True  # the next SaslAuthenticate is the client-final
                    self._event("server_first", n)
                    if state.pop("held", False):
                        with self._lock:
                            self._held.append(c)
                        self.hold.wait(60)
        except (OSError, ValueError, KeyError, kw.WireError):
            pass  # the peer or close() ended the connection
        finally:
            c.close()
