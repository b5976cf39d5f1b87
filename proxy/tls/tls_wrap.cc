// proxy/tls/tls_wrap.cc
#include "proxy/tls/tls_wrap.h"

#include "proxy/tls/sni_names.h"
#include "proxy/tls/tls_reloader.h"

namespace epochgate::proxy::tls {

bool is_loopback_peer(const std::string& peer) {
  return peer.rfind("127.", 0) == 0 || peer.rfind("[::1]:", 0) == 0 ||
         peer.rfind("[::ffff:127.", 0) == 0;
}

std::unique_ptr<TlsTransport> wrap_client(uv_loop_t* loop, const TlsServices& tls,
                                          std::unique_ptr<Transport>& tcp, const std::string& peer) {
  if (tls.reloader == nullptr) return nullptr;
  std::shared_ptr<const TlsContext> ctx = tls.reloader->current_server();
  if (!ctx) return nullptr;
  TlsEngine::SniRoute route;
  TlsEngine::NodeExists exists;
  if (const SniNames* names = tls.sni) {
    route = [names](std::string_view name) { return names->node_of(name); };
    exists = tls.node_exists;
  }
  auto t = std::make_unique<TlsTransport>(
      loop, std::move(tcp), TlsEngine::server(std::move(ctx), std::move(route), std::move(exists)),
                                          TlsTransport::Side::kClient, tls.handshake_timeout_ms,
                                          tls.metrics);
  if (tls.plaintext_loopback && is_loopback_peer(peer)) t->allow_plaintext();
  return t;
}

std::unique_ptr<Transport> wrap_upstream(uv_loop_t* loop, const TlsServices& tls,
                                         std::unique_ptr<Transport> tcp, const std::string& host,
                                         TlsTransport** tls_out) {
  *tls_out = nullptr;
  std::shared_ptr<const TlsContext> ctx = tls.reloader ? tls.reloader->current_client() : nullptr;
  if (!ctx) return tcp;
  // The dial deadline (limits.upstream_connect_timeout_ms) bounds the handshake.
  auto t = std::make_unique<TlsTransport>(loop, std::move(tcp), TlsEngine::client(std::move(ctx), host),
                                          TlsTransport::Side::kUpstream, 0, tls.metrics);
  *tls_out = t.get();
  return t;
}

}  // namespace epochgate::proxy::tls
