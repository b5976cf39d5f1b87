// config/tls_rules.cc
#include "config/tls_rules.h"

#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>

#include <memory>
#include <sstream>

namespace epochgate::config {

namespace {

using Ctx = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

Ctx new_ctx() { return Ctx(SSL_CTX_new(TLS_method()), &SSL_CTX_free); }

// TLS 1.2 suites (not 1.3 ones, which every context lists too) in `ctx`.
int tls12_count(SSL_CTX* ctx) {
  int n = 0;
  STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(ctx);
  for (int i = 0; i < sk_SSL_CIPHER_num(all); ++i) {
    const SSL_CIPHER* c = sk_SSL_CIPHER_value(all, i);
    // TLS 1.3 suites leave the key exchange to the version (NID_kx_any).
    if (SSL_CIPHER_get_kx_nid(c) != NID_kx_any) ++n;
  }
  return n;
}

}  // namespace

std::string tls12_cipher_list_problem(const std::string& list) {
  if (list.empty()) return "must not be empty";
  Ctx ctx = new_ctx();
  if (!ctx) return "";  // no OpenSSL context at all: start-up reports it
  const bool ok = SSL_CTX_set_cipher_list(ctx.get(), list.c_str()) == 1;
  ERR_clear_error();
  if (!ok || tls12_count(ctx.get()) == 0)
    return "OpenSSL selects no TLS 1.2 cipher suite from \"" + list + "\"";
  return "";
}

std::string tls13_suites_problem(const std::string& suites) {
  if (suites.empty()) return "must not be empty";
  std::stringstream ss(suites);
  std::string name;
  while (std::getline(ss, name, ':')) {
    Ctx ctx = new_ctx();
    if (!ctx) return "";
    // One at a time: OpenSSL skips unknown names inside a longer list.
    const bool ok = !name.empty() && SSL_CTX_set_ciphersuites(ctx.get(), name.c_str()) == 1 &&
                    sk_SSL_CIPHER_num(SSL_CTX_get_ciphers(ctx.get())) > tls12_count(ctx.get());
    ERR_clear_error();
    if (!ok) return "\"" + name + "\" is not a TLS 1.3 cipher suite OpenSSL knows";
  }
  return "";
}

}  // namespace epochgate::config
