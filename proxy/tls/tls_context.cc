// proxy/tls/tls_context.cc
#include "proxy/tls/tls_context.h"

#include "proxy/tls/tls_engine.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>

namespace epochgate::proxy::tls {

namespace {

std::string fail(const std::string& setting, const std::string& file, const std::string& what) {
  std::string reason = openssl_errors();
  std::string out = setting + " " + file + ": " + what;
  if (!reason.empty()) out += ": " + reason;
  return out;
}

std::string name_text(const X509_NAME* n) {
  BIO* b = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(b, n, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long len = BIO_get_mem_data(b, &data);
  std::string s(data, static_cast<size_t>(len));
  BIO_free(b);
  return s;
}

int64_t unix_time(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

// A key or password file's bytes, read straight into memory the caller
// wipes (OPENSSL_cleanse) once used; no stream keeps a copy.
bool read_secret_file(const std::string& file, std::string& out) {
  out.clear();
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 0 || st.st_size > (1 << 20)) {
    ::close(fd);
    return false;
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return true;
}

// The passphrase of an encrypted key, read from its file; trailing newlines
// are not part of it (files written by `echo` and Kubernetes Secrets).
bool read_password(const std::string& file, std::string& out, std::string& error) {
  if (!read_secret_file(file, out)) {
    error = "cannot read the key password file";
    return false;
  }
  size_t n = out.size();
  while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r')) --n;
  OPENSSL_cleanse(out.data() + n, out.size() - n);
  out.resize(n);
  return true;
}

int password_cb(char* buf, int size, int, void* userdata) {
  const auto* pw = static_cast<const std::string*>(userdata);
  if (pw == nullptr || pw->size() > static_cast<size_t>(size)) return -1;
  pw->copy(buf, pw->size());
  return static_cast<int>(pw->size());
}

// Settings both roles share: TLS 1.2 at least (1.3 is preferred by
// OpenSSL's negotiation), no renegotiation (RFC 5746 attacks, and a
// renegotiation mid-stream would stall the proxy's byte flow), no
// compression (CRIME), and buffers released while a connection idles.
SSL_CTX* new_ctx(const SSL_METHOD* m) {
  SSL_CTX* ctx = SSL_CTX_new(m);
  if (ctx == nullptr) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

// The configured protocol floor and suites (defaults: TLS 1.2, forward-
// secret AEAD suites only; OpenSSL's DEFAULT list would also take
// non-forward-secret RSA key exchange and CBC-SHA1 suites).
bool set_suites(SSL_CTX* ctx, const std::string& prefix, const std::string& min_version,
                const std::string& cipher_list, const std::string& cipher_suites,
                std::string& error) {
  ERR_clear_error();
  SSL_CTX_set_min_proto_version(ctx, min_version == "TLSv1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
  if (SSL_CTX_set_cipher_list(ctx, cipher_list.c_str()) != 1) {
    error = prefix + ".cipher_list \"" + cipher_list + "\": no usable cipher suite: " +
            openssl_errors();
    return false;
  }
  if (SSL_CTX_set_ciphersuites(ctx, cipher_suites.c_str()) != 1) {
    error = prefix + ".cipher_suites \"" + cipher_suites + "\": no usable TLS 1.3 suite: " +
            openssl_errors();
    return false;
  }
  return true;
}


// Chain, key (optionally encrypted) and their match.
bool load_own(SSL_CTX* ctx, const std::string& prefix, const std::string& cert_file,
              const std::string& key_file, const std::string& password_file,
              std::vector<CertFileInfo>& files, std::string& error) {
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    error = fail(prefix + ".cert_file", cert_file, "cannot load the certificate chain");
    return false;
  }
  std::string password;
  bool have_password = !password_file.empty();
  if (have_password && !read_password(password_file, password, error)) {
    error = prefix + ".key_password_file " + password_file + ": " + error;
    return false;
  }
  std::string key_bytes;
  if (!read_secret_file(key_file, key_bytes)) {
    OPENSSL_cleanse(password.data(), password.size());
    error = prefix + ".key_file " + key_file + ": cannot read the key";
    return false;
  }
  BIO* kb = BIO_new_mem_buf(key_bytes.data(), static_cast<int>(key_bytes.size()));
  // Always a callback: without one OpenSSL would prompt on the terminal.
  EVP_PKEY* key = kb == nullptr ? nullptr
                                : PEM_read_bio_PrivateKey(kb, nullptr, password_cb,
                                                          have_password ? &password : nullptr);
  BIO_free(kb);
  // The parsed key lives in the context only; the file's bytes and the
  // passphrase are wiped now.
  OPENSSL_cleanse(key_bytes.data(), key_bytes.size());
  OPENSSL_cleanse(password.data(), password.size());
  if (key == nullptr) {
    error = fail(prefix + ".key_file", key_file,
                 have_password ? "cannot decrypt or parse the key"
                               : "cannot parse the key (encrypted keys need key_password_file)");
    return false;
  }
  int used = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (used != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    error = fail(prefix + ".key_file", key_file,
                 "does not match the certificate in " + cert_file);
    return false;
  }
  CertFileInfo info;
  if (!read_cert_file(prefix + ".cert_file", cert_file, info, error)) return false;
  files.push_back(std::move(info));
  return true;
}

// A CA bundle file, or every PEM file of a directory (a Kubernetes Secret
// mount has no OpenSSL hash links, so the directory is read file by file).
bool load_ca(SSL_CTX* ctx, const std::string& setting, const std::string& path,
             std::vector<CertFileInfo>& files, std::string& error) {
  ERR_clear_error();
  std::error_code ec;
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  if (std::filesystem::is_directory(path, ec)) {
    int loaded = 0;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || name[0] == '.' || !e.is_regular_file(ec)) continue;
      CertFileInfo info;
      std::string ignored;
      if (!read_cert_file(setting, e.path().string(), info, ignored)) continue;
      if (X509_STORE_load_file(store, e.path().c_str()) != 1) {
        error = fail(setting, e.path().string(), "cannot load the CA certificates");
        return false;
      }
      files.push_back(std::move(info));
      ++loaded;
    }
    if (loaded == 0) {
      error = setting + " " + path + ": the directory holds no PEM certificate";
      return false;
    }
    return true;
  }
  CertFileInfo info;
  if (!read_cert_file(setting, path, info, error)) return false;
  if (X509_STORE_load_file(store, path.c_str()) != 1) {
    error = fail(setting, path, "cannot load the CA certificates");
    return false;
  }
  files.push_back(std::move(info));
  return true;
}

}  // namespace

std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

bool read_cert_file(const std::string& setting, const std::string& file, CertFileInfo& out,
                    std::string& error) {
  out = CertFileInfo{};
  out.setting = setting;
  out.file = file;
  ERR_clear_error();
  BIO* b = BIO_new_file(file.c_str(), "r");
  if (b == nullptr) {
    error = fail(setting, file, "cannot read");
    return false;
  }
  while (X509* x = PEM_read_bio_X509(b, nullptr, nullptr, nullptr)) {
    int64_t not_after = unix_time(X509_get0_notAfter(x));
    if (out.certificates == 0) {
      out.subject = name_text(X509_get_subject_name(x));
      out.issuer = name_text(X509_get_issuer_name(x));
      out.not_before = unix_time(X509_get0_notBefore(x));
      out.not_after = not_after;
      auto* sans = static_cast<GENERAL_NAMES*>(
          X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr));
      for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
        if (g->type != GEN_DNS) continue;
        const ASN1_IA5STRING* s = g->d.dNSName;
        out.dns_names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                   static_cast<size_t>(ASN1_STRING_length(s)));
      }
      GENERAL_NAMES_free(sans);
    } else if (not_after < out.not_after) {
      out.not_after = not_after;
    }
    ++out.certificates;
    X509_free(x);
  }
  BIO_free(b);
  ERR_clear_error();  // the end of the file reads as a "no start line" error
  if (out.certificates == 0) {
    error = setting + " " + file + ": no PEM certificate in the file";
    return false;
  }
  return true;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::shared_ptr<const TlsContext> TlsContext::build_server(const config::TlsConfig& c,
                                                           std::string& error) {
  SSL_CTX* raw = new_ctx(TLS_server_method());
  if (raw == nullptr) {
    error = "tls: cannot create an OpenSSL context: " + openssl_errors();
    return nullptr;
  }
  std::shared_ptr<TlsContext> t(new TlsContext(raw, Role::kServer));
  if (!set_suites(raw, "tls", c.min_version, c.cipher_list, c.cipher_suites, error))
    return nullptr;
  if (!load_own(raw, "tls", c.cert_file, c.key_file, c.key_password_file, t->files_, error))
    return nullptr;
  t->paths_ = {c.cert_file, c.key_file};
  if (!c.key_password_file.empty()) t->paths_.push_back(c.key_password_file);
  if (!c.client_ca_file.empty()) {
    if (!load_ca(raw, "tls.client_ca_file", c.client_ca_file, t->files_, error)) return nullptr;
    // The CA names a server sends in its CertificateRequest, so clients
    // with several certificates pick the right one.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.client_ca_file.c_str()))
      SSL_CTX_set_client_CA_list(raw, names);
    ERR_clear_error();
    t->paths_.push_back(c.client_ca_file);
  }
  int mode = SSL_VERIFY_NONE;
  if (c.client_auth == "requested") mode = SSL_VERIFY_PEER;
  if (c.client_auth == "required") mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(raw, mode, nullptr);
  if (c.client_auth != "none") {
    // A resumed session skips the certificate check: with client
    // certificates, no tickets, and a cached session lives at most
    // kClientAuthSessionSeconds, so an expired certificate or a CA removed
    // by a reload stops being accepted within that time.
    SSL_CTX_set_options(raw, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(raw, 0);
    SSL_CTX_set_timeout(raw, kClientAuthSessionSeconds);
  }
  // One-port SNI routing decides here, and every server context records
  // the server name for logs.
  SSL_CTX_set_tlsext_servername_callback(raw, &TlsEngine::on_server_name);
  // Distinguishes this process's session tickets from another's.
  static const unsigned char kSessionId[] = "epochgate";
  SSL_CTX_set_session_id_context(raw, kSessionId, sizeof kSessionId - 1);
  return t;
}

std::shared_ptr<const TlsContext> TlsContext::build_client(const config::UpstreamTlsConfig& c,
                                                           std::string& error) {
  SSL_CTX* raw = new_ctx(TLS_client_method());
  if (raw == nullptr) {
    error = "upstream_tls: cannot create an OpenSSL context: " + openssl_errors();
    return nullptr;
  }
  std::shared_ptr<TlsContext> t(new TlsContext(raw, Role::kClient));
  t->verify_hostname_ = c.verify_hostname;
  if (!set_suites(raw, "upstream_tls", c.min_version, c.cipher_list, c.cipher_suites, error))
    return nullptr;
  if (c.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(raw) != 1) {
      error = "upstream_tls.ca_file: cannot load the system trust store: " + openssl_errors();
      return nullptr;
    }
  } else {
    if (!load_ca(raw, "upstream_tls.ca_file", c.ca_file, t->files_, error)) return nullptr;
    t->paths_.push_back(c.ca_file);
  }
  if (!c.cert_file.empty()) {
    if (!load_own(raw, "upstream_tls", c.cert_file, c.key_file, c.key_password_file, t->files_,
                  error))
      return nullptr;
    t->paths_.push_back(c.cert_file);
    t->paths_.push_back(c.key_file);
    if (!c.key_password_file.empty()) t->paths_.push_back(c.key_password_file);
  }
  SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nullptr);
  return t;
}

}  // namespace epochgate::proxy::tls
