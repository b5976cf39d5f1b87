// proxy/client/sasl_login.cc
#include "proxy/client/sasl_login.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "codec/header.h"
#include "codec/reader.h"
#include "codec/writer.h"

namespace epochgate::proxy {

namespace {

constexpr const char* kClientId = "epochgate-refresher";
constexpr int kMaxRounds = 4;  // SCRAM needs 2; more is a confused broker
constexpr int16_t kSaslAuthenticateVersion = 1;  // first with session_lifetime_ms

void wipe(std::string& s) { OPENSSL_cleanse(s.data(), s.size()); s.clear(); }

// Size-prefixed request frame with a v1 header (neither API is flexible at
// the versions used here).
std::vector<uint8_t> request_frame(int16_t key, int16_t version, int32_t corr,
                                   const std::string& body_string, bool body_is_bytes) {
  std::vector<uint8_t> out(4, 0);
  codec::Writer w(out);
  w.int16(key);
  w.int16(version);
  w.int32(corr);
  w.string(kClientId, false);
  if (body_is_bytes) {
    w.int32(static_cast<int32_t>(body_string.size()));
    w.raw(body_string.data(), body_string.size());
  } else {
    w.string(body_string, false);
  }
  uint32_t n = static_cast<uint32_t>(out.size() - 4);
  out[0] = static_cast<uint8_t>(n >> 24);
  out[1] = static_cast<uint8_t>(n >> 16);
  out[2] = static_cast<uint8_t>(n >> 8);
  out[3] = static_cast<uint8_t>(n);
  return out;
}

// The first line of `file` without its line end and trailing spaces (what
// docs/config.md promises), read with no stream buffer, so nothing but
// `out` ever holds the secret; the rest of the file is wiped unread.
bool read_first_line(const std::string& file, std::string& out) {
  out.clear();
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  constexpr size_t kMax = 64 * 1024;  // a credential, not a data file
  out.resize(kMax);
  size_t got = 0;
  ssize_t n;
  while (got < kMax && (n = ::read(fd, out.data() + got, kMax - got)) > 0)
    got += static_cast<size_t>(n);
  ::close(fd);
  size_t end = std::min(got, out.find('\n'));
  while (end > 0 && (out[end - 1] == '\r' || out[end - 1] == ' ' || out[end - 1] == '\t')) --end;
  OPENSSL_cleanse(out.data() + end, out.size() - end);
  out.resize(end);
  return true;
}

}  // namespace

bool read_credential(const std::string& value, const std::string& file, const std::string& env,
                     const char* what, std::string& out, std::string& error) {
  if (!value.empty()) {
    out = value;
    return true;
  }
  if (!file.empty()) {
    if (!read_first_line(file, out)) {
      error = std::string("cannot read the ") + what + " file " + file;
      return false;
    }
    if (out.empty()) {
      error = std::string("the ") + what + " file " + file + " is empty";
      return false;
    }
    return true;
  }
  if (!env.empty()) {
    const char* v = std::getenv(env.c_str());
    if (v == nullptr || *v == '\0') {
      error = std::string("environment variable ") + env + " (" + what + ") is not set";
      return false;
    }
    out = v;
    return true;
  }
  error = std::string("no ") + what + " configured";
  return false;
}

SaslLoginStep::~SaslLoginStep() {
  if (!frame.empty()) OPENSSL_cleanse(frame.data(), frame.size());
}

SaslLogin::SaslLogin(const config::UpstreamSaslConfig& config) : config_(config) {}

SaslLogin::~SaslLogin() {
  wipe(secret_);
}

SaslLoginStep SaslLogin::failed(std::string why) {
  wipe(secret_);
  scram_.reset();
  SaslLoginStep s;
  s.kind = SaslLoginStep::Kind::kFailed;
  s.error = std::move(why);
  return s;
}

SaslLoginStep SaslLogin::start(int32_t correlation_id) {
  std::string error;
  const std::string& m = config_.mechanism;
  if (m == "OAUTHBEARER") {
    if (!read_credential("", config_.token_file, "", "token", secret_, error)) return failed(error);
  } else {
    if (!read_credential(config_.username, config_.username_file, config_.username_env,
                         "username", username_, error) ||
        !read_credential("", config_.password_file, config_.password_env, "password", secret_,
                         error))
      return failed(error);
  }
  stage_ = Stage::kHandshake;
  awaiting_ = correlation_id;
  SaslLoginStep s;
  s.kind = SaslLoginStep::Kind::kSend;
  s.frame = request_frame(codec::kSaslHandshake, 1, correlation_id, m, false);
  return s;
}

SaslLoginStep SaslLogin::authenticate(const std::string& token, int32_t correlation_id) {
  if (++rounds_ > kMaxRounds) return failed("the broker asked for more than 4 SASL rounds");
  awaiting_ = correlation_id;
  SaslLoginStep s;
  s.kind = SaslLoginStep::Kind::kSend;
  s.frame = request_frame(codec::kSaslAuthenticate, kSaslAuthenticateVersion, correlation_id,
                          token, true);
  return s;
}

SaslLoginStep SaslLogin::on_response(const uint8_t* frame, size_t size, int32_t correlation_id) {
  codec::Reader r(frame, size);
  int32_t corr = r.int32();
  if (!r.ok() || corr != awaiting_) return failed("answer with an unexpected correlation id");
  const std::string& m = config_.mechanism;
  if (stage_ == Stage::kHandshake) {
    int16_t error_code = r.int16();
    int32_t n = r.array_length(false, false, 2);
    std::string offered;
    for (int32_t i = 0; r.ok() && i < n; ++i) offered += (i ? "," : "") + r.string(false);
    if (!r.ok()) return failed("malformed SaslHandshake answer");
    if (error_code != 0)
      return failed("the broker does not offer " + m + " (it offers " + offered + ")");
    stage_ = Stage::kAuthenticate;
    if (m == "PLAIN") {
      std::string token;
      token.push_back('\0');
      token += username_;
      token.push_back('\0');
      token += secret_;
      SaslLoginStep s = authenticate(token, correlation_id);
      wipe(token);
      return s;
    }
    if (m == "OAUTHBEARER") {
      // RFC 7628 3.1 client initial response, no authorization id.
      std::string token = "n,,\x01" "auth=Bearer " + secret_ + "\x01\x01";
      SaslLoginStep s = authenticate(token, correlation_id);
      wipe(token);
      return s;
    }
    std::string nonce = ScramClient::random_nonce();
    if (nonce.empty()) return failed("no random bytes for the SCRAM nonce (RAND_bytes failed)");
    scram_ = std::make_unique<ScramClient>(
        m == "SCRAM-SHA-512" ? ScramHash::kSha512 : ScramHash::kSha256, username_, secret_,
        std::move(nonce));
    wipe(secret_);  // the SCRAM client holds (and wipes) the only copy from here
    return authenticate(scram_->client_first(), correlation_id);
  }
  if (stage_ == Stage::kDeriving) return failed("an answer before the SCRAM client-final request");
  if (stage_ != Stage::kAuthenticate) return failed("answer after the login ended");
  int16_t error_code = r.int16();
  std::optional<std::string> message = r.nullable_string(false);
  codec::Bytes auth = r.bytes(false, false);
  int64_t lifetime_ms = r.int64();
  if (!r.ok()) return failed("malformed SaslAuthenticate answer");
  if (error_code != 0)
    return failed(message && !message->empty() ? *message
                                               : "SaslAuthenticate error " + std::to_string(error_code));
  std::string challenge(auth.view());
  if (scram_ && rounds_ == 1) {
    auto need = std::make_unique<ScramSaltedPassword>();
    std::string error;
    if (!scram_->begin_final(challenge, *need, error)) return failed(error);
    if (!need->salted.empty()) return authenticate(scram_->finish_final(*need), correlation_id);
    stage_ = Stage::kDeriving;
    SaslLoginStep s;
    s.kind = SaslLoginStep::Kind::kDerive;
    s.salted = std::move(need);
    return s;
  }
  if (scram_) {
    std::string error;
    if (!scram_->verify_server_final(challenge, error)) return failed(error);
  } else if (m == "OAUTHBEARER" && !challenge.empty()) {
    // An error challenge (RFC 7628 3.2.2); the login fails on the %x01.
    return failed("the broker refused the token: " + challenge);
  }
  stage_ = Stage::kDone;
  wipe(secret_);
  scram_.reset();
  SaslLoginStep s;
  s.kind = SaslLoginStep::Kind::kDone;
  s.session_lifetime_ms = lifetime_ms;
  return s;
}

SaslLoginStep SaslLogin::on_derived(std::unique_ptr<ScramSaltedPassword> ready,
                                    int32_t correlation_id) {
  if (stage_ != Stage::kDeriving || !scram_) return failed("a SCRAM derivation nobody waits for");
  if (!ready || ready->salted.empty()) return failed("PBKDF2 failed");
  stage_ = Stage::kAuthenticate;
  return authenticate(scram_->finish_final(*ready), correlation_id);
}

}  // namespace epochgate::proxy
