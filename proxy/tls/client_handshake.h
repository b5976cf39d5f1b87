// proxy/tls/client_handshake.h: an accepted client connection between
// accept and its finished TLS handshake. Holds the TlsTransport while the
// handshake runs (under tls.handshake_timeout_ms), so no session exists and
// no upstream is dialled for a client that never completes TLS; then hands
// the transport to the worker with the node it belongs to: the listener's,
// or in one-port SNI mode the node its server name chose. A failed
// handshake closes the connection here (the transport logged and counted it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>

#include "proxy/net/transport.h"
#include "proxy/tls/tls_transport.h"

namespace epochgate::proxy::tls {

class ClientHandshake;

/// The handshakes in progress on one worker loop (closed at shutdown).
class HandshakeList {
 public:
  size_t size() const { return items_.size(); }
  /// Closes every pending handshake's connection.
  void close_all();

 private:
  friend class ClientHandshake;
  std::set<ClientHandshake*> items_;
};

class ClientHandshake final : private TransportUser {
 public:
  /// Receives a transport whose handshake finished, and its node id.
  using OnReady = std::function<void(int32_t node_id, std::unique_ptr<Transport> transport)>;

  /// Starts the handshake of `transport` (accepted on `listener_node`'s
  /// listener). Frees itself when done; `on_ready` runs on success only.
  static void start(HandshakeList& list, std::unique_ptr<TlsTransport> transport,
                    int32_t listener_node, OnReady on_ready);

 private:
  friend class HandshakeList;
  ClientHandshake(HandshakeList& list, std::unique_ptr<TlsTransport> t, int32_t node, OnReady r);
  void on_transport_alloc(uv_buf_t* buf) override;
  void on_transport_read(ssize_t) override {}
  void on_transport_written(int) override {}
  void on_transport_ready(int status) override;
  void on_transport_closed() override;
  void close();

  HandshakeList& list_;
  std::unique_ptr<TlsTransport> transport_;
  int32_t listener_node_;
  OnReady on_ready_;
  bool closing_ = false;
};

}  // namespace epochgate::proxy::tls
