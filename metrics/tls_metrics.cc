// metrics/tls_metrics.cc
#include "metrics/tls_metrics.h"

#include "metrics/families.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <mutex>
#include <set>

namespace epochgate::metrics {

namespace {
// Every reason a handshake can fail with (proxy/tls/tls_engine.h failure_name()).
const char* const kReasons[] = {"not_tls",         "unknown_ca",          "expired",
                                "not_yet_valid",   "hostname_mismatch",   "no_client_certificate",
                                "bad_certificate", "unknown_server_name", "unknown_node",
                                "peer_alert",      "closed",              "timeout",
                                "protocol"};
}  // namespace

struct TlsMetrics::Impl {
  explicit Impl(prometheus::Registry& r)
      : handshakes(register_family<FamilyId::tls_handshakes_total>(r)),
        duration(register_family<FamilyId::tls_handshake_duration_seconds>(r)),
        expiry(register_family<FamilyId::tls_certificate_expiry_seconds>(r)),
        reloads(register_family<FamilyId::tls_reloads_total>(r)),
        renegotiations(register_family<FamilyId::tls_renegotiations_refused_total>(r)) {
    for (const char* side : {"client", "upstream"}) {
      renegotiations.Add({{"side", side}});
      handshakes.Add({{"side", side}, {"result", "ok"}, {"reason", "ok"}});
      for (const char* reason : kReasons)
        handshakes.Add({{"side", side}, {"result", "failed"}, {"reason", reason}});
      duration.Add({{"side", side}}, prometheus::Histogram::BucketBoundaries{
                                         0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25, 0.5, 1, 2.5, 5, 10});
    }
    reloads.Add({{"result", "ok"}});
    reloads.Add({{"result", "refused"}});
  }
  prometheus::Family<prometheus::Counter>& handshakes;
  prometheus::Family<prometheus::Histogram>& duration;
  prometheus::Family<prometheus::Gauge>& expiry;
  prometheus::Family<prometheus::Counter>& reloads;
  prometheus::Family<prometheus::Counter>& renegotiations;
  std::mutex mu;
  std::map<std::string, std::map<std::string, int64_t>> files;  // owner -> file -> notAfter
  std::set<std::string> shown;  // files with a gauge child
};

TlsMetrics::TlsMetrics(std::shared_ptr<prometheus::Registry> registry)
    : impl_(std::make_unique<Impl>(*registry)) {}
TlsMetrics::~TlsMetrics() = default;

void TlsMetrics::handshake(Side side, std::string_view reason, double seconds) {
  const std::string s(side_label(side));
  const bool ok = reason == "ok";
  // Add returns the existing child for known labels (created up front).
  impl_->handshakes.Add({{"side", s}, {"result", ok ? "ok" : "failed"}, {"reason", std::string(reason)}})
      .Increment();
  if (ok)
    impl_->duration.Add({{"side", s}}, prometheus::Histogram::BucketBoundaries{}).Observe(seconds);
}

void TlsMetrics::set_certificates(const std::string& owner,
                                  const std::map<std::string, int64_t>& not_after, int64_t now) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->files[owner] = not_after;
  std::set<std::string> wanted;
  for (const auto& [o, files] : impl_->files)
    for (const auto& [f, t] : files) wanted.insert(f);
  // Gauges of files no owner loads any more go away.
  std::set<std::string>& shown = impl_->shown;
  for (auto it = shown.begin(); it != shown.end();) {
    if (!wanted.count(*it)) {
      impl_->expiry.Remove(&impl_->expiry.Add({{"file", *it}}));
      it = shown.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& f : wanted) shown.insert(f);
  for (const auto& [o, files] : impl_->files)
    for (const auto& [f, t] : files) impl_->expiry.Add({{"file", f}}).Set(double(t - now));
}

void TlsMetrics::refresh_expiry(int64_t now) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& [o, files] : impl_->files)
    for (const auto& [f, t] : files) impl_->expiry.Add({{"file", f}}).Set(double(t - now));
}

void TlsMetrics::renegotiation_refused(Side side) {
  impl_->renegotiations.Add({{"side", side_label(side)}}).Increment();
}

void TlsMetrics::reload(bool ok) { impl_->reloads.Add({{"result", ok ? "ok" : "refused"}}).Increment(); }

}  // namespace epochgate::metrics
