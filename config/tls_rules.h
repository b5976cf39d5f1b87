// config/tls_rules.h: the TLS settings --check-config can judge without
// reading a certificate: whether OpenSSL accepts a cipher list or a TLS 1.3
// suite list. Asks the OpenSSL the binary is linked with, so a name this
// build does not know is refused before start-up, never at a handshake.
#pragma once

#include <string>

namespace epochgate::config {

/// "" when OpenSSL selects at least one TLS 1.2 suite from `list` (cipher
/// list syntax, e.g. "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256");
/// otherwise why not.
std::string tls12_cipher_list_problem(const std::string& list);

/// "" when every name in `suites` (":"-separated, e.g.
/// "TLS_AES_128_GCM_SHA256") is a TLS 1.3 suite OpenSSL knows (RFC 8446
/// B.4); otherwise why not.
std::string tls13_suites_problem(const std::string& suites);

}  // namespace epochgate::config
