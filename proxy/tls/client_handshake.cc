// proxy/tls/client_handshake.cc
#include "proxy/tls/client_handshake.h"

namespace epochgate::proxy::tls {

void HandshakeList::close_all() {
  std::set<ClientHandshake*> all = items_;
  for (ClientHandshake* h : all) h->close();
}

ClientHandshake::ClientHandshake(HandshakeList& list, std::unique_ptr<TlsTransport> t, int32_t node,
                                 OnReady r)
    : list_(list), transport_(std::move(t)), listener_node_(node), on_ready_(std::move(r)) {
  list_.items_.insert(this);
}

void ClientHandshake::start(HandshakeList& list, std::unique_ptr<TlsTransport> transport,
                            int32_t listener_node, OnReady on_ready) {
  auto* h = new ClientHandshake(list, std::move(transport), listener_node, std::move(on_ready));
  h->transport_->set_user(*h);
  if (h->transport_->start_handshake() != 0) h->close();
}

void ClientHandshake::on_transport_alloc(uv_buf_t* buf) {
  // Never reading application bytes here: nothing to place.
  buf->base = nullptr;
  buf->len = 0;
}

void ClientHandshake::on_transport_ready(int status) {
  if (closing_) return;
  if (status != 0) {
    close();
    return;
  }
  const int32_t node = transport_->engine().routed_node().value_or(listener_node_);
  list_.items_.erase(this);
  OnReady ready = std::move(on_ready_);
  std::unique_ptr<Transport> t = std::move(transport_);
  delete this;
  ready(node, std::move(t));
}

void ClientHandshake::close() {
  if (closing_) return;
  closing_ = true;
  transport_->close();
}

void ClientHandshake::on_transport_closed() {
  list_.items_.erase(this);
  delete this;
}

}  // namespace epochgate::proxy::tls
