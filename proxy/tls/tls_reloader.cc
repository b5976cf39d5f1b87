// proxy/tls/tls_reloader.cc
#include "proxy/tls/tls_reloader.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/json_writer.h"
#include "metrics/tls_metrics.h"

namespace epochgate::proxy::tls {

namespace {
constexpr uint64_t kExpiryTickMs = 10000;

int64_t now_unix() { return static_cast<int64_t>(std::time(nullptr)); }

// Feeds `path` and its bytes (a directory: each file in it) to `md`, a
// chunk at a time; the chunk buffer is wiped, so no copy of a key remains.
void digest_file(EVP_MD_CTX* md, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(path, ec))
      digest_file(md, e.path().string());
    return;
  }
  EVP_DigestUpdate(md, path.data(), path.size() + 1);  // with its '\0'
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    EVP_DigestUpdate(md, "missing", 7);
    return;
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) EVP_DigestUpdate(md, buf, static_cast<size_t>(n));
  OPENSSL_cleanse(buf, sizeof buf);
  ::close(fd);
}
}  // namespace

struct TlsReloader::Watch {
  uv_fs_event_t handle;
  std::string dir;
};

TlsReloader::TlsReloader(uv_loop_t* loop, config::TlsConfig tls, config::UpstreamTlsConfig upstream,
                         metrics::TlsMetrics* metrics)
    : loop_(loop), tls_(std::move(tls)), upstream_(std::move(upstream)), metrics_(metrics) {}

TlsReloader::~TlsReloader() = default;

bool TlsReloader::build(std::shared_ptr<const TlsContext>& server,
                        std::shared_ptr<const TlsContext>& client, std::string& error) const {
  if (tls_.enabled()) {
    server = TlsContext::build_server(tls_, error);
    if (!server) return false;
  }
  if (upstream_.enabled) {
    client = TlsContext::build_client(upstream_, error);
    if (!client) return false;
  }
  return true;
}

bool TlsReloader::load(std::string& error) {
  std::shared_ptr<const TlsContext> s, c;
  std::string fp = fingerprint();
  if (!build(s, c, error)) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    server_ = std::move(s);
    client_ = std::move(c);
    fingerprint_ = std::move(fp);
  }
  if (upstream_.enabled && !upstream_.verify_hostname)
    spdlog::warn("upstream_tls.verify_hostname is false: any certificate the CA signed is "
                 "accepted for every broker (a man in the middle with such a certificate is "
                 "not detected)");
  publish_metrics();
  return true;
}

bool TlsReloader::reload(const char* trigger, bool force, std::string* error_out) {
  std::string fp = fingerprint();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!force && fp == fingerprint_) return true;
  }
  std::shared_ptr<const TlsContext> s, c;
  std::string error;
  if (!build(s, c, error)) {
    ++reloads_refused_;
    // The line before the count: whoever sees the counter move finds it.
    spdlog::error("TLS reload ({}) refused, the loaded certificates stay in use: {}", trigger,
                  error);
    if (metrics_) metrics_->reload(false);
    if (error_out) *error_out = error;
    std::lock_guard<std::mutex> lock(mu_);
    fingerprint_ = fp;  // the same bad bytes are not retried on every event
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    server_ = std::move(s);
    client_ = std::move(c);
    fingerprint_ = std::move(fp);
  }
  ++reloads_ok_;
  spdlog::info("TLS certificates reloaded ({}); new connections use them", trigger);
  if (metrics_) metrics_->reload(true);
  publish_metrics();
  return true;
}

void TlsReloader::publish_metrics() {
  const int64_t now = now_unix();
  auto srv = current_server();
  auto cli = current_client();
  for (const auto& [owner, ctx] :
       {std::pair<const char*, std::shared_ptr<const TlsContext>>{"tls", srv}, {"upstream_tls", cli}}) {
    std::map<std::string, int64_t> files;
    if (ctx)
      for (const auto& f : ctx->files()) {
        files[f.file] = f.not_after;
        if (f.setting.ends_with(".cert_file") && f.not_after <= now)
          spdlog::warn("{} {} expired at {} (notAfter); peers will refuse it", f.setting, f.file,
                       f.not_after);
        else if (f.setting.ends_with(".cert_file") && f.not_before > now)
          spdlog::warn("{} {} is not valid before {} (notBefore); peers will refuse it",
                       f.setting, f.file, f.not_before);
      }
    if (metrics_) metrics_->set_certificates(owner, files, now);
  }
}

std::vector<std::string> TlsReloader::paths() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& p) {
    if (!p.empty()) out.push_back(p);
  };
  if (tls_.enabled()) {
    add(tls_.cert_file);
    add(tls_.key_file);
    add(tls_.key_password_file);
    add(tls_.client_ca_file);
  }
  if (upstream_.enabled) {
    add(upstream_.ca_file);
    add(upstream_.cert_file);
    add(upstream_.key_file);
    add(upstream_.key_password_file);
  }
  return out;
}

std::string TlsReloader::fingerprint() const {
  // A SHA-256 of the files, not their bytes: the key and its passphrase are
  // kept only inside OpenSSL's context, never in a copy for comparing.
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  bool ok = md != nullptr && EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1;
  if (ok) {
    for (const auto& p : paths()) digest_file(md, p);
    ok = EVP_DigestFinal_ex(md, out, &len) == 1;
  }
  EVP_MD_CTX_free(md);
  // Unknown: a value that differs every time, so a reload rebuilds.
  if (!ok) return "unknown " + std::to_string(uv_hrtime());
  return std::string(reinterpret_cast<char*>(out), len);
}

int TlsReloader::start() {
  if (started_) return 0;
  started_ = true;
  int first_error = 0;
  uv_timer_init(loop_, &debounce_);
  debounce_.data = this;
  uv_timer_init(loop_, &expiry_);
  expiry_.data = this;
  uv_timer_start(&expiry_, &TlsReloader::on_expiry_tick, kExpiryTickMs, kExpiryTickMs);
  uv_signal_init(loop_, &sighup_);
  sighup_.data = this;
  uv_signal_start(&sighup_, &TlsReloader::on_signal, SIGHUP);
  open_handles_ = 3;
  std::set<std::string> dirs;
  for (const auto& p : paths()) {
    std::error_code ec;
    std::filesystem::path fp(p);
    std::string dir = std::filesystem::is_directory(fp, ec) ? p : fp.parent_path().string();
    dirs.insert(dir.empty() ? "." : dir);
  }
  for (const auto& d : dirs) {
    auto w = std::make_unique<Watch>();
    w->dir = d;
    uv_fs_event_init(loop_, &w->handle);
    w->handle.data = this;
    ++open_handles_;
    if (int rc = uv_fs_event_start(&w->handle, &TlsReloader::on_fs_event, d.c_str(), 0); rc != 0) {
      spdlog::warn("TLS files in {} are not watched ({}); SIGHUP still reloads them", d,
                   uv_strerror(rc));
      if (first_error == 0) first_error = rc;
    }
    watches_.push_back(std::move(w));
  }
  return first_error;
}

void TlsReloader::on_fs_event(uv_fs_event_t* h, const char*, int, int status) {
  auto* self = static_cast<TlsReloader*>(h->data);
  if (status != 0) return;
  // Editors and Secret updates touch several names in a burst: one reload,
  // after the last event but never later than a bound after the first (a log
  // file beside the certificates would otherwise postpone it while busy).
  const bool pending = uv_is_active(reinterpret_cast<uv_handle_t*>(&self->debounce_));
  const uint64_t delay = self->burst_.delay_ms(pending, uv_now(self->loop_));
  uv_timer_start(&self->debounce_, &TlsReloader::on_debounce, delay, 0);
}

void TlsReloader::on_debounce(uv_timer_t* t) {
  static_cast<TlsReloader*>(t->data)->reload("file change", false);
}

void TlsReloader::on_expiry_tick(uv_timer_t* t) {
  auto* self = static_cast<TlsReloader*>(t->data);
  if (self->metrics_) self->metrics_->refresh_expiry(now_unix());
}

void TlsReloader::on_signal(uv_signal_t* s, int) {
  static_cast<TlsReloader*>(s->data)->reload("SIGHUP", true);
}

void TlsReloader::on_handle_closed(uv_handle_t* h) {
  auto* self = static_cast<TlsReloader*>(h->data);
  if (--self->open_handles_ > 0) return;
  auto cb = std::move(self->on_closed_);
  self->on_closed_ = nullptr;
  if (cb) cb();
}

void TlsReloader::close(std::function<void()> done) {
  if (!started_ || open_handles_ == 0) {
    if (done) done();
    return;
  }
  on_closed_ = std::move(done);
  for (auto& w : watches_)
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&w->handle)))
      uv_close(reinterpret_cast<uv_handle_t*>(&w->handle), &TlsReloader::on_handle_closed);
  for (uv_handle_t* h : {reinterpret_cast<uv_handle_t*>(&debounce_),
                         reinterpret_cast<uv_handle_t*>(&expiry_),
                         reinterpret_cast<uv_handle_t*>(&sighup_)})
    if (!uv_is_closing(h)) uv_close(h, &TlsReloader::on_handle_closed);
}

std::shared_ptr<const TlsContext> TlsReloader::current_server() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_;
}

std::shared_ptr<const TlsContext> TlsReloader::current_client() const {
  std::lock_guard<std::mutex> lock(mu_);
  return client_;
}

std::string TlsReloader::files_json() const {
  const int64_t now = now_unix();
  common::JsonWriter w;
  w.begin_array();
  for (const auto& ctx : {current_server(), current_client()}) {
    if (!ctx) continue;
    for (const auto& f : ctx->files()) {
      w.begin_object();
      w.key("setting").value(f.setting);
      w.key("file").value(f.file);
      w.key("subject").value(f.subject);
      w.key("issuer").value(f.issuer);
      w.key("dns_names").begin_array();
      for (const auto& n : f.dns_names) w.value(n);
      w.end_array();
      w.key("certificates").value(f.certificates);
      w.key("not_before").value(f.not_before);
      w.key("not_after").value(f.not_after);
      w.key("expires_in_seconds").value(f.not_after - now);
      w.end_object();
    }
  }
  w.end_array();
  return w.take();
}

}  // namespace epochgate::proxy::tls
