// proxy/tls/cipher_bio.h: the one BIO a TlsEngine's SSL object reads
// ciphertext from and writes ciphertext to. Reads are served from bytes the
// transport lends for one call (the loop's read buffer, so nothing is
// copied in before OpenSSL decrypts) and from what was kept of them; writes
// append to a string the transport takes whole (no memory BIO growing and
// zero-filling, no copy out). Replaces a pair of memory BIOs. Owns only
// these bytes: never touches a socket, never sees plaintext.
#pragma once

#include <openssl/bio.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace epochgate::proxy::tls {

/// Ciphertext of one TLS connection in both directions.
struct CipherBuffers {
  /// Network -> SSL: bytes lent by the caller, valid until keep_lent().
  const uint8_t* lent = nullptr;
  size_t lent_len = 0;
  /// Network -> SSL: bytes kept from earlier loans, from `kept_at` on.
  std::string kept;
  size_t kept_at = 0;
  /// SSL -> network: records not yet taken.
  std::string out;

  /// Ciphertext received and not yet read by OpenSSL.
  size_t in_pending() const { return kept.size() - kept_at + lent_len; }
  /// Copies what OpenSSL left of the loan into `kept`, ending the loan.
  void keep_lent();
  /// Moves every queued record to the end of `dst` (a swap when `dst` is empty).
  void move_out(std::string& dst);
  /// Makes room in `out` for the records of `plain_bytes` more plaintext,
  /// so a large write grows it once (from this thread's spare when it fits).
  void reserve_out(size_t plain_bytes);
};

/// Empties `s`. A large buffer becomes this thread's spare ciphertext
/// buffer (one per loop thread, at most 32 MiB, the larger one kept), so a
/// stream of large responses reuses its pages instead of faulting in fresh
/// ones for each; small ones keep their capacity.
void release_cipher(std::string& s);

/// A new BIO over `buffers` (which must outlive it). SSL_set_bio(ssl, b, b)
/// takes its one reference. Reads with nothing pending ask to retry (an
/// empty buffer is "wait for the socket", never end of stream).
BIO* new_cipher_bio(CipherBuffers* buffers);

}  // namespace epochgate::proxy::tls
