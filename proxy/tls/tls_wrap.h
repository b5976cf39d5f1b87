// proxy/tls/tls_wrap.h: puts TLS over a connection's TCP transport where the
// config asks for it: client-facing (the current server context, SNI route,
// plaintext rule, handshake deadline) and upstream (the current client
// context, SNI and hostname check against the dialled broker host). Returns
// the TCP transport unchanged when that side has no TLS. Builds objects
// only: no I/O here.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "proxy/net/transport.h"
#include "proxy/tls/tls_services.h"
#include "proxy/tls/tls_transport.h"

namespace epochgate::proxy::tls {

/// A TLS transport over the accepted client connection `tcp` (its peer
/// address is `peer`), or null when client-facing TLS is off (`tcp` is left
/// as it is).
std::unique_ptr<TlsTransport> wrap_client(uv_loop_t* loop, const TlsServices& tls,
                                          std::unique_ptr<Transport>& tcp, const std::string& peer);

/// `tcp` to broker `host`, inside TLS when upstream TLS is on. `tls_out`
/// receives the TLS transport (null without TLS).
std::unique_ptr<Transport> wrap_upstream(uv_loop_t* loop, const TlsServices& tls,
                                         std::unique_ptr<Transport> tcp, const std::string& host,
                                         TlsTransport** tls_out);

/// True for a "host:port" peer on 127.0.0.0/8 or ::1 (IPv4-mapped included).
bool is_loopback_peer(const std::string& peer);

}  // namespace epochgate::proxy::tls
