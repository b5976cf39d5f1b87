// proxy/client/sasl_scram.cc
#include "proxy/client/sasl_scram.h"

#include "proxy/client/sasl_scram_cache.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <atomic>
#include <charconv>
#include <map>
#include <mutex>
#include <vector>

namespace epochgate::proxy {

namespace {

constexpr int kMinIterations = 4096;    // Kafka refuses fewer (ScramMechanism)
constexpr int kMaxIterations = 100000;  // a hostile server cannot burn our CPU

const EVP_MD* digest_of(ScramHash h) {
  switch (h) {
    case ScramHash::kSha1: return EVP_sha1();
    case ScramHash::kSha256: return EVP_sha256();
    case ScramHash::kSha512: return EVP_sha512();
  }
  return EVP_sha256();
}

std::string hmac(const EVP_MD* md, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(md, key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string hash(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

// RFC 5802 5.1: ',' and '=' in a user name travel as "=2C" and "=3D".
std::string escape_username(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == ',') out += "=2C";
    else if (c == '=') out += "=3D";
    else out += c;
  }
  return out;
}

// Value of attribute `key` ("k=value") in a comma-separated SCRAM message.
bool attribute(std::string_view msg, char key, std::string_view& value) {
  size_t pos = 0;
  while (pos <= msg.size()) {
    size_t end = msg.find(',', pos);
    if (end == std::string_view::npos) end = msg.size();
    std::string_view part = msg.substr(pos, end - pos);
    if (part.size() >= 2 && part[0] == key && part[1] == '=') {
      value = part.substr(2);
      return true;
    }
    pos = end + 1;
  }
  return false;
}

// Salted passwords already computed, by a digest of (hash, password, salt,
// iterations): PBKDF2 (up to 100000 rounds, ~50 ms with SHA-512) runs once
// per credential and broker salt, not on the worker loop for every session
// that logs in. The key never holds the password; the values are wiped
// when evicted. Shared by every loop (sidecar sessions, the refresher).
class SaltedCache {
 public:
  static SaltedCache& instance() {
    static SaltedCache c;
    return c;
  }
  bool find(const std::string& key, std::string& out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    out = it->second;
    return true;
  }
  void put(const std::string& key, const std::string& salted) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= kMaxEntries) clear_locked();  // rotations: a few entries live
    entries_[key] = salted;
  }
  uint64_t runs() const { return runs_.load(); }
  void count_run() { runs_.fetch_add(1); }
  ~SaltedCache() { clear_locked(); }

 private:
  static constexpr size_t kMaxEntries = 64;
  void clear_locked() {
    for (auto& [k, v] : entries_) OPENSSL_cleanse(v.data(), v.size());
    entries_.clear();
  }
  std::mutex mu_;
  std::map<std::string, std::string> entries_;
  std::atomic<uint64_t> runs_{0};
};

std::string cache_key(const EVP_MD* md, std::string_view password, std::string_view salt,
                      int iterations) {
  EVP_MD_CTX* c = EVP_MD_CTX_new();
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const std::string head = std::string(EVP_MD_get0_name(md)) + '\0' + std::to_string(iterations) +
                           '\0' + std::to_string(salt.size()) + '\0';
  bool ok = c != nullptr && EVP_DigestInit_ex(c, EVP_sha256(), nullptr) == 1 &&
            EVP_DigestUpdate(c, head.data(), head.size()) == 1 &&
            EVP_DigestUpdate(c, salt.data(), salt.size()) == 1 &&
            EVP_DigestUpdate(c, password.data(), password.size()) == 1 &&
            EVP_DigestFinal_ex(c, out, &len) == 1;
  EVP_MD_CTX_free(c);
  return ok ? std::string(reinterpret_cast<char*>(out), len) : std::string();
}

}  // namespace

uint64_t scram_salted_password_runs() { return SaltedCache::instance().runs(); }

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

bool base64_decode(std::string_view text, std::string& out) {
  if (text.size() % 4 != 0) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    bool pad = c == '=' && i >= text.size() - 2 && (i == text.size() - 1 || text.back() == '=');
    if (!alnum && c != '+' && c != '/' && !pad) return false;
  }
  out.assign(3 * text.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return false;
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') ++padding;
  if (text.size() > 1 && text[text.size() - 2] == '=') ++padding;
  out.resize(static_cast<size_t>(n) - padding);
  return true;
}

ScramClient::ScramClient(ScramHash hash, std::string username, std::string password,
                         std::string nonce)
    : hash_(hash), username_(std::move(username)), password_(std::move(password)),
      nonce_(std::move(nonce)) {}

ScramClient::~ScramClient() {
  OPENSSL_cleanse(password_.data(), password_.size());
}

std::string ScramClient::random_nonce() {
  unsigned char raw[24];
  // A predictable nonce would let a recorded exchange be replayed.
  if (RAND_bytes(raw, sizeof raw) != 1) return {};
  return base64_encode(std::string_view(reinterpret_cast<char*>(raw), sizeof raw));
}

std::string ScramClient::client_first() const {
  return "n,,n=" + escape_username(username_) + ",r=" + nonce_;
}

ScramSaltedPassword::~ScramSaltedPassword() {
  OPENSSL_cleanse(password.data(), password.size());
  OPENSSL_cleanse(salted.data(), salted.size());
}

bool ScramSaltedPassword::from_cache() {
  key = cache_key(digest_of(hash), password, salt, iterations);
  return !key.empty() && SaltedCache::instance().find(key, salted);
}

bool ScramSaltedPassword::derive() {
  const EVP_MD* md = digest_of(hash);
  salted.assign(static_cast<size_t>(EVP_MD_get_size(md)), '\0');
  SaltedCache::instance().count_run();
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                        reinterpret_cast<const unsigned char*>(salt.data()),
                        static_cast<int>(salt.size()), iterations, md,
                        static_cast<int>(salted.size()),
                        reinterpret_cast<unsigned char*>(salted.data())) != 1) {
    salted.clear();
    return false;
  }
  if (!key.empty()) SaltedCache::instance().put(key, salted);
  return true;
}

bool ScramClient::client_final(std::string_view server_first, std::string& out,
                               std::string& error) {
  ScramSaltedPassword need;
  if (!begin_final(server_first, need, error)) return false;
  if (need.salted.empty() && !need.derive()) {
    error = "PBKDF2 failed";
    return false;
  }
  out = finish_final(need);
  return true;
}

bool ScramClient::begin_final(std::string_view server_first, ScramSaltedPassword& need,
                              std::string& error) {
  std::string_view nonce, salt_b64, iterations_text, ignored;
  if (attribute(server_first, 'm', ignored)) {
    error = "server requires an unsupported SCRAM extension";
    return false;
  }
  if (!attribute(server_first, 'r', nonce) || !attribute(server_first, 's', salt_b64) ||
      !attribute(server_first, 'i', iterations_text)) {
    error = "malformed server-first-message";
    return false;
  }
  if (nonce.size() <= nonce_.size() || nonce.substr(0, nonce_.size()) != nonce_) {
    error = "server nonce does not extend the client nonce";
    return false;
  }
  std::string salt;
  if (!base64_decode(salt_b64, salt) || salt.empty()) {
    error = "salt is not base64";
    return false;
  }
  int iterations = 0;
  auto [end, ec] = std::from_chars(iterations_text.data(),
                                   iterations_text.data() + iterations_text.size(), iterations);
  if (ec != std::errc() || end != iterations_text.data() + iterations_text.size() ||
      iterations < kMinIterations || iterations > kMaxIterations) {
    error = "iteration count " + std::string(iterations_text) + " outside 4096..100000";
    return false;
  }
  server_first_ = std::string(server_first);
  server_nonce_ = std::string(nonce);
  need.hash = hash_;
  need.password = password_;
  need.salt = std::move(salt);
  need.iterations = iterations;
  need.salted.clear();
  need.from_cache();
  return true;
}

std::string ScramClient::finish_final(const ScramSaltedPassword& ready) {
  const EVP_MD* md = digest_of(hash_);
  std::string client_key = hmac(md, ready.salted, "Client Key");
  std::string stored_key = hash(md, client_key);
  // "biws" is base64("n,,"): no channel binding, no authorization id.
  std::string without_proof = "c=biws,r=" + server_nonce_;
  std::string client_first_bare = client_first().substr(3);
  std::string auth_message = client_first_bare + "," + server_first_ + "," + without_proof;
  std::string signature = hmac(md, stored_key, auth_message);
  std::string proof = client_key;
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = static_cast<char>(proof[i] ^ signature[i]);
  expected_server_signature_ = hmac(md, hmac(md, ready.salted, "Server Key"), auth_message);
  OPENSSL_cleanse(client_key.data(), client_key.size());
  return without_proof + ",p=" + base64_encode(proof);
}

bool ScramClient::verify_server_final(std::string_view server_final, std::string& error) const {
  std::string_view value;
  if (attribute(server_final, 'e', value)) {
    error = "server error: " + std::string(value);
    return false;
  }
  std::string signature;
  if (!attribute(server_final, 'v', value) || !base64_decode(value, signature)) {
    error = "malformed server-final-message";
    return false;
  }
  if (expected_server_signature_.empty() ||
      CRYPTO_memcmp(signature.data(), expected_server_signature_.data(),
                    std::min(signature.size(), expected_server_signature_.size())) != 0 ||
      signature.size() != expected_server_signature_.size()) {
    error = "server signature does not verify (not the broker holding our credentials)";
    return false;
  }
  return true;
}

}  // namespace epochgate::proxy
