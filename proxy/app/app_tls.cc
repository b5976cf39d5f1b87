// proxy/app/app_tls.cc
#include "proxy/app/app_tls.h"

#include "metrics/tls_metrics.h"
#include "proxy/core/worker_context.h"

namespace epochgate::proxy::tls {

AppTls::AppTls(std::shared_ptr<prometheus::Registry> registry)
    : metrics_(std::make_unique<metrics::TlsMetrics>(std::move(registry))) {}

AppTls::~AppTls() = default;

bool AppTls::start(uv_loop_t* loop, const config::Config& c, std::string& error) {
  if (c.tls.sni.enabled())
    sni_.emplace(c.tls.sni.broker_host_pattern, c.tls.sni.bootstrap_host,
                 c.effective_advertise_host());
  client_tls_ = c.tls.enabled();
  plaintext_loopback_ = c.tls.plaintext_clients == "loopback";
  handshake_timeout_ms_ = c.tls.handshake_timeout_ms;
  if (!c.tls.enabled() && !c.upstream_tls.enabled) return true;
  reloader_ = std::make_unique<TlsReloader>(loop, c.tls, c.upstream_tls, metrics_.get());
  if (!reloader_->load(error)) return false;
  reloader_->start();
  return true;
}

void AppTls::close(std::function<void()> done) {
  if (reloader_)
    reloader_->close(std::move(done));
  else if (done)
    done();
}

void AppTls::fill(WorkerContext& ctx) const {
  ctx.tls.reloader = reloader_.get();
  ctx.tls.metrics = metrics_.get();
  ctx.tls.sni = sni_ ? &*sni_ : nullptr;
  ctx.tls.node_exists = node_exists_;
  ctx.tls.client_tls = client_tls_;
  ctx.tls.plaintext_loopback = plaintext_loopback_;
  ctx.tls.handshake_timeout_ms = handshake_timeout_ms_;
}

AdvertisedAddress AppTls::sni_address(int32_t node_id, int32_t port) const {
  return AdvertisedAddress{sni_->host_of(node_id), port};
}

std::string AppTls::add_debug(std::string json) const {
  if (json.empty() || json.back() != '}') return json;
  json.pop_back();
  json += ",\"tls_files\":";
  json += reloader_ ? reloader_->files_json() : "[]";
  json += "}";
  return json;
}

}  // namespace epochgate::proxy::tls
