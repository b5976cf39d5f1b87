// proxy/app/config_files_check.cc: opens what a configuration names, with the
// same loaders a start uses (TlsContext::build_server/build_client and the
// SASL credential reader), so `--check-config` cannot say OK to a file the
// start would refuse. A few checks run first only to give a clearer reason
// than OpenSSL's ("no start line" for a key given as a certificate).
#include "proxy/app/config_files_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "proxy/client/sasl_login.h"
#include "proxy/tls/tls_context.h"

namespace epochgate::proxy {
namespace {

class FileChecker {
 public:
  explicit FileChecker(const config::Origins& origins) : origins_(origins) {}

  // A problem at the setting that names the file; the document when the
  // setting has no position (a default, a flag without a file).
  void report(const std::string& setting, const std::string& reason) {
    config::Problem p;
    auto it = origins_.find(setting);
    if (it == origins_.end()) it = origins_.find("");
    if (it != origins_.end()) {
      p.file = it->second.file;
      p.line = it->second.line;
      p.column = it->second.column;
    }
    p.reason = reason;
    problems_.push_back(std::move(p));
  }

  // The loaders' errors start with the setting they were reading
  // ("tls.key_file /x.key: does not match ..."): locate them there.
  void report_loader_error(const std::string& error) {
    const auto end = error.find_first_of(" :");
    const std::string setting = error.substr(0, end);
    report(origins_.count(setting) ? setting : std::string(), error);
  }

  // False (reported) when `path` cannot be opened for reading as the kind
  // the setting needs: a regular file, or with `dir_ok` also a directory.
  bool openable(const std::string& setting, const std::string& path, bool dir_ok) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      report(setting, setting + " " + path + ": cannot open: " + std::strerror(errno));
      return false;
    }
    if (S_ISDIR(st.st_mode) && !dir_ok) {
      report(setting, setting + " " + path + ": is a directory, not a file");
      return false;
    }
    if (::access(path.c_str(), R_OK) != 0) {
      report(setting, setting + " " + path + ": cannot read: " + std::strerror(errno));
      return false;
    }
    return true;
  }

  // A certificate file that holds only a key (or the reverse) is the usual
  // swap of cert_file and key_file; say so instead of OpenSSL's parse error.
  bool not_swapped(const std::string& prefix, const std::string& cert_file,
                   const std::string& key_file) {
    const std::string cert = head(cert_file);
    const std::string key = head(key_file);
    const bool cert_has_cert = cert.find("-----BEGIN CERTIFICATE-----") != std::string::npos;
    const bool cert_has_key = cert.find("PRIVATE KEY-----") != std::string::npos;
    const bool key_has_cert = key.find("-----BEGIN CERTIFICATE-----") != std::string::npos;
    const bool key_has_key = key.find("PRIVATE KEY-----") != std::string::npos;
    if (!cert_has_cert && cert_has_key && key_has_cert && !key_has_key) {
      report(prefix + ".cert_file",
             prefix + ".cert_file " + cert_file + " holds a private key and " + prefix +
                 ".key_file " + key_file + " a certificate: the two are swapped");
      return false;
    }
    if (!cert_has_cert && cert_has_key) {
      report(prefix + ".cert_file", prefix + ".cert_file " + cert_file +
                                        ": holds a private key, not a certificate");
      return false;
    }
    if (key_has_cert && !key_has_key) {
      report(prefix + ".key_file", prefix + ".key_file " + key_file +
                                       ": holds a certificate, not a private key");
      return false;
    }
    return true;
  }

  std::vector<config::Problem> take() { return std::move(problems_); }

 private:
  // The start of a PEM file is enough to tell a key from a certificate; a
  // bundle with both (HAProxy style) passes as both.
  static std::string head(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string s(1 << 16, '\0');
    in.read(s.data(), static_cast<std::streamsize>(s.size()));
    s.resize(static_cast<size_t>(in.gcount()));
    return s;
  }

  const config::Origins& origins_;
  std::vector<config::Problem> problems_;
};

void check_client_tls(const config::TlsConfig& t, FileChecker& fc) {
  if (!t.enabled()) return;
  bool ok = fc.openable("tls.cert_file", t.cert_file, false);
  ok = fc.openable("tls.key_file", t.key_file, false) && ok;
  if (!t.key_password_file.empty())
    ok = fc.openable("tls.key_password_file", t.key_password_file, false) && ok;
  if (!t.client_ca_file.empty()) ok = fc.openable("tls.client_ca_file", t.client_ca_file, true) && ok;
  if (!ok || !fc.not_swapped("tls", t.cert_file, t.key_file)) return;
  std::string error;
  if (!tls::TlsContext::build_server(t, error)) fc.report_loader_error(error);
}

void check_upstream_tls(const config::UpstreamTlsConfig& u, FileChecker& fc) {
  if (!u.enabled) return;
  bool ok = true;
  if (!u.ca_file.empty()) ok = fc.openable("upstream_tls.ca_file", u.ca_file, true);
  if (!u.cert_file.empty()) {
    ok = fc.openable("upstream_tls.cert_file", u.cert_file, false) && ok;
    ok = fc.openable("upstream_tls.key_file", u.key_file, false) && ok;
    if (!u.key_password_file.empty())
      ok = fc.openable("upstream_tls.key_password_file", u.key_password_file, false) && ok;
    ok = ok && fc.not_swapped("upstream_tls", u.cert_file, u.key_file);
  }
  if (!ok) return;
  std::string error;
  if (!tls::TlsContext::build_client(u, error)) fc.report_loader_error(error);
}

// One credential the way each login reads it: the value, else the file,
// else the variable. Reported at the setting that supplies it.
void check_credential(const std::string& value, const std::string& file, const std::string& env,
                      const std::string& prefix, const char* what, FileChecker& fc) {
  if (!value.empty()) return;
  const std::string setting = prefix + (file.empty() ? "_env" : "_file");
  if (!file.empty() && !fc.openable(setting, file, false)) return;
  std::string out, error;
  if (!read_credential("", file, env, what, out, error))
    fc.report(setting, setting + ": " + error);
  std::fill(out.begin(), out.end(), '\0');
}

void check_sasl(const config::UpstreamSaslConfig& s, FileChecker& fc) {
  if (!s.enabled()) return;
  if (s.mechanism == "OAUTHBEARER") {
    check_credential("", s.token_file, "", "upstream_sasl.token", "token", fc);
    return;
  }
  check_credential(s.username, s.username_file, s.username_env, "upstream_sasl.username",
                   "username", fc);
  check_credential("", s.password_file, s.password_env, "upstream_sasl.password", "password", fc);
}

}  // namespace

std::vector<config::Problem> check_config_files(const config::Config& config,
                                                const config::Origins& origins) {
  FileChecker fc(origins);
  check_client_tls(config.tls, fc);
  check_upstream_tls(config.upstream_tls, fc);
  check_sasl(config.upstream_sasl, fc);
  auto problems = fc.take();
  config::sort_problems(problems);
  return problems;
}

}  // namespace epochgate::proxy
