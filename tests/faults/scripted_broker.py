"""A loopback stand-in broker for answers no real broker or mock cluster can
be made to give: a Metadata response naming thousands of brokers, or a node
set the test changes at will. It answers only ApiVersions v0-2 (offering
ApiVersions v0-2 and Metadata v0-1) and Metadata v0-1 (the brokers the test
set, no topics); every other request gets no answer. Each advertised broker
points at this same listener.
Must never bind anything but 127.0.0.1, hold more than max_connections
(64 unless the test says) connections, or outlive close().
"""

import struct
import threading

from epochgate_testlib import kafka_wire as kw
from epochgate_testlib.loopback_listener import LoopbackListener

API_METADATA = 3
API_VERSIONS = 18
MAX_CONNECTIONS = 64


class ScriptedBroker(LoopbackListener):
    def __init__(self, node_ids, max_connections=MAX_CONNECTIONS):
        self.max_connections = max_connections
        self._lock = threading.Lock()
        self._node_ids = list(node_ids)
        self.metadata_answers = 0
        self._listen(256)
        threading.Thread(target=self._accept, daemon=True).start()

    def set_nodes(self, node_ids):
        with self._lock:
            self._node_ids = list(node_ids)

    def _metadata_body(self, version):
        with self._lock:
            ids = list(self._node_ids)
        w = kw.Writer().int32(len(ids))
        for n in ids:
            w.int32(n).string("127.0.0.1").int32(self.port)
            if version >= 1:
                w.string(None)  # rack
        if version >= 1:
            w.int32(ids[0] if ids else -1)  # controller
        w.int32(0)  # no topics
        return w.getvalue()

    @staticmethod
    def _api_versions_body(version):
        w = kw.Writer().int16(0).int32(2)
        w.int16(API_METADATA).int16(0).int16(1)
        w.int16(API_VERSIONS).int16(0).int16(2)
        if version >= 1:
            w.int32(0)  # throttle_time_ms
        return w.getvalue()

    def _accept(self):
        while not self._closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                if len(self._conns) >= self.max_connections:
                    c.close()
                    continue
                self._conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            for f in self.frames(c):
                key, version = struct.unpack_from(">hh", f, 4)
                corr = kw.frame_correlation_id(f, True)
                if key == API_VERSIONS and version <= 2:
                    body = self._api_versions_body(version)
                elif key == API_METADATA and version <= 1:
                    body = self._metadata_body(version)
                    self.metadata_answers += 1
                else:
                    continue
                self.answer(c, corr, body)
        except OSError:
            pass
        finally:
            with self._lock:
                if c in self._conns:
                    self._conns.remove(c)
            c.close()
