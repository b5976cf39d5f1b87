// proxy/tls/cipher_bio.cc
#include "proxy/tls/cipher_bio.h"

#include <algorithm>
#include <cstring>

namespace epochgate::proxy::tls {

namespace {
// Kept input larger than this is given back once read (idle connections
// hold little memory).
constexpr size_t kKeepCapacity = 16 * 1024;

// The largest spare buffer a loop thread keeps.
constexpr size_t kSpareMaxCapacity = 32u << 20;
// Per TLS record (at most 16 KiB of plaintext): header, tag, content type, padding.
constexpr size_t kRecordOverhead = 64;

std::string& spare() {
  thread_local std::string s;
  return s;
}

CipherBuffers* of(BIO* b) { return static_cast<CipherBuffers*>(BIO_get_data(b)); }

int bio_read(BIO* b, char* out, size_t n, size_t* got) {
  CipherBuffers* c = of(b);
  BIO_clear_retry_flags(b);
  size_t done = 0;
  if (c->kept_at < c->kept.size()) {
    const size_t k = std::min(n, c->kept.size() - c->kept_at);
    std::memcpy(out, c->kept.data() + c->kept_at, k);
    c->kept_at += k;
    done += k;
    if (c->kept_at == c->kept.size()) {
      c->kept.clear();
      c->kept_at = 0;
      if (c->kept.capacity() > kKeepCapacity) std::string().swap(c->kept);
    }
  }
  if (done < n && c->lent_len > 0) {
    const size_t k = std::min(n - done, c->lent_len);
    std::memcpy(out + done, c->lent, k);
    c->lent += k;
    c->lent_len -= k;
    done += k;
  }
  *got = done;
  if (done == 0) {
    BIO_set_retry_read(b);
    return 0;
  }
  return 1;
}

int bio_write(BIO* b, const char* in, size_t n, size_t* put) {
  of(b)->out.append(in, n);
  *put = n;
  return 1;
}

long bio_ctrl(BIO* b, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_PENDING: return static_cast<long>(of(b)->in_pending());
    case BIO_CTRL_WPENDING: return static_cast<long>(of(b)->out.size());
    case BIO_CTRL_FLUSH: return 1;  // nothing buffered below us
    default: return 0;
  }
}

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

int bio_destroy(BIO*) { return 1; }

const BIO_METHOD* method() {
  static const BIO_METHOD* m = [] {
    BIO_METHOD* bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "epochgate cipher");
    BIO_meth_set_read_ex(bm, bio_read);
    BIO_meth_set_write_ex(bm, bio_write);
    BIO_meth_set_ctrl(bm, bio_ctrl);
    BIO_meth_set_create(bm, bio_create);
    BIO_meth_set_destroy(bm, bio_destroy);
    return bm;
  }();
  return m;
}
}  // namespace

void CipherBuffers::keep_lent() {
  if (lent_len > 0) {
    if (kept_at > 0) {
      kept.erase(0, kept_at);
      kept_at = 0;
    }
    kept.append(reinterpret_cast<const char*>(lent), lent_len);
  }
  lent = nullptr;
  lent_len = 0;
}

void CipherBuffers::move_out(std::string& dst) {
  if (out.empty()) return;
  if (dst.empty()) {
    dst.swap(out);
  } else {
    dst.append(out);
  }
  release_cipher(out);
}

void CipherBuffers::reserve_out(size_t plain_bytes) {
  const size_t need = out.size() + plain_bytes + (plain_bytes / 16384 + 2) * kRecordOverhead;
  if (out.capacity() >= need) return;
  std::string& s = spare();
  if (out.empty() && s.capacity() >= need) {
    out.swap(s);
    s.clear();
    return;
  }
  out.reserve(need);
}

void release_cipher(std::string& s) {
  s.clear();
  if (s.capacity() <= kKeepCapacity) return;
  std::string& sp = spare();
  if (s.capacity() <= kSpareMaxCapacity && s.capacity() > sp.capacity()) s.swap(sp);
  std::string().swap(s);
}

BIO* new_cipher_bio(CipherBuffers* buffers) {
  BIO* b = BIO_new(method());
  if (b != nullptr) BIO_set_data(b, buffers);
  return b;
}

}  // namespace epochgate::proxy::tls
