// metrics/admin_routes.cc: what the admin server answers: the endpoints
// (/metrics, /healthz, /readyz, /debug/*, /), who may read /debug (loopback
// peers, allowed Host names), and the Prometheus text. Runs the app's
// handlers on the admin loop; never touches sockets (metrics/admin_server.cc).
#include <strings.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <exception>

#include "metrics/admin_conn.h"
#include "metrics/proxy_metrics.h"

namespace epochgate::metrics {
namespace {

Response text_response(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

}  // namespace

bool is_loopback_peer(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

Response AdminServer::Impl::route(const Conn& c) {
  std::string path = c.url.substr(0, c.url.find('?'));
  const bool is_get = c.method == HTTP_GET || c.method == HTTP_HEAD;
  enum class Ep { kIndex, kMetrics, kHealthz, kReadyz, kMetadata, kConfig, kNone };
  Ep ep = Ep::kNone;
  if (path == "/")
    ep = Ep::kIndex;
  else if (path == "/metrics")
    ep = Ep::kMetrics;
  else if (path == "/healthz")
    ep = Ep::kHealthz;
  else if (path == "/readyz")
    ep = Ep::kReadyz;
  else if (path == "/debug/metadata" && handlers.debug_metadata)
    ep = Ep::kMetadata;
  else if (path == "/debug/config" && handlers.debug_config)
    ep = Ep::kConfig;
  // The view and config stay inside the pod unless asked (admin.expose_debug).
  if ((ep == Ep::kMetadata || ep == Ep::kConfig) && options.debug_loopback_only && !c.loopback_peer)
    ep = Ep::kNone;
  if ((ep == Ep::kMetadata || ep == Ep::kConfig) && c.has_host &&
      !debug_host_allowed(c.host, options.debug_hosts))
    return text_response(403, "forbidden: /debug answers only to loopback host names and the "
                              "admin address\n");
  if (ep == Ep::kMetrics && !handlers.metrics) ep = Ep::kNone;
  if (ep == Ep::kNone) return text_response(404, "not found\n");
  if (!is_get) {
    Response r = text_response(405, "method not allowed\n");
    r.allow_header = true;
    return r;
  }
  try {
    switch (ep) {
      case Ep::kIndex:
        return text_response(200,
                             "epochgate admin\n/metrics\n/healthz\n/readyz\n/debug/metadata\n"
                             "/debug/config\n");
      case Ep::kMetrics: {
        Response r = text_response(200, handlers.metrics());
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        return r;
      }
      case Ep::kHealthz:
        if (handlers.healthz && !handlers.healthz()) return text_response(503, "unhealthy\n");
        return text_response(200, "ok\n");
      case Ep::kReadyz: {
        const Readiness rd = handlers.readyz ? handlers.readyz() : Readiness{};
        if (!rd.ready) return text_response(503, "not ready: " + rd.reason + "\n");
        return text_response(200, "ready\n");
      }
      case Ep::kMetadata:
      case Ep::kConfig: {
        Response r = text_response(
            200, ep == Ep::kMetadata ? handlers.debug_metadata() : handlers.debug_config());
        r.content_type = "application/json";
        if (r.body.empty() || r.body.back() != '\n') r.body.push_back('\n');
        return r;
      }
      case Ep::kNone:
        break;
    }
  } catch (const std::exception& e) {
    return text_response(500, std::string("handler failed: ") + e.what() + "\n");
  } catch (...) {
    return text_response(500, "handler failed\n");
  }
  return text_response(404, "not found\n");
}

std::function<std::string()> AdminHandlers::metrics_from(
    std::shared_ptr<prometheus::Registry> registry, ProxyMetrics* metrics) {
  return [registry = std::move(registry), metrics] {
    if (metrics) metrics->fold();
    return render_prometheus_text(*registry);
  };
}

std::string render_prometheus_text(prometheus::Registry& registry) {
  prometheus::TextSerializer serializer;
  return serializer.Serialize(registry.Collect());
}

bool debug_host_allowed(std::string_view h, const std::vector<std::string>& allowed) {
  // The name without its port: "[v6]:p", "[v6]", "name:p" or "name".
  std::string_view name = h;
  while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
  if (!name.empty() && name.front() == '[') {
    const size_t end = name.find(']');
    if (end == std::string_view::npos) return false;
    name = name.substr(0, end + 1);
  } else if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    name = name.substr(0, colon);
  }
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);  // "localhost."
  auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
  };
  if (same(name, "localhost")) return true;
  // An address rather than a name: a rebound DNS name is sent as that name,
  // so a literal address is the listener reached directly (the pod IP, a
  // port-forward), never a foreign site.
  if (!name.empty() && name.find_first_not_of("0123456789.") == std::string_view::npos &&
      std::count(name.begin(), name.end(), '.') == 3)
    return true;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') return true;
  for (const std::string& a : allowed) {
    std::string_view want = a;
    if (!want.empty() && want.front() != '[' && want.find(':') != std::string_view::npos) {
      // A bare IPv6 address as configured: Host carries it in brackets.
      if (name.size() == want.size() + 2 && name.front() == '[' &&
          same(name.substr(1, want.size()), want))
        return true;
      continue;
    }
    if (same(name, want)) return true;
  }
  return false;
}

}  // namespace epochgate::metrics
