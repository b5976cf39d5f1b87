// config/security_warnings.cc
#include "config/security_warnings.h"

namespace epochgate::config {

namespace {

bool loopback(const std::string& h) {
  return h.rfind("127.", 0) == 0 || h == "::1" || h == "[::1]" || h == "localhost";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

std::vector<std::string> security_warnings(const Config& c) {
  std::vector<std::string> out;
  const auto& sasl = c.upstream_sasl;
  const std::string& broker_host =
      c.broker_ports.bind_host.empty() ? c.listen.host : c.broker_ports.bind_host;
  const bool remote = !loopback(c.listen.host) || !loopback(broker_host);
  if (sasl.on_behalf_of_clients && sasl.allow_remote_clients && remote &&
      !(c.tls.enabled() && c.tls.client_auth == "required"))
    out.push_back(
        "upstream_sasl.allow_remote_clients: every client that can reach " +
        (loopback(c.listen.host) ? broker_host : c.listen.host) + " acts as " +
        (sasl.username.empty() ? std::string("epochgate's SASL principal")
                               : "SASL principal " + sasl.username) +
        "; the network (a NetworkPolicy) is the only authentication boundary");
  if (c.tls.enabled() && c.tls.plaintext_clients == "loopback" && c.tls.client_auth != "none")
    out.push_back("tls.plaintext_clients: loopback: a loopback peer speaking plaintext skips "
                  "tls.client_auth (" + c.tls.client_auth + ") and shows no certificate");
  if ((sasl.mechanism == "PLAIN" || sasl.mechanism == "OAUTHBEARER") && !c.upstream_tls.enabled)
    out.push_back("upstream_sasl.mechanism: " + sasl.mechanism + " without upstream_tls sends " +
                  (sasl.mechanism == "PLAIN" ? "the password" : "the bearer token") +
                  " to the brokers in cleartext");
  return out;
}

std::string security_warnings_json(const std::vector<std::string>& warnings) {
  std::string out = "[";
  for (size_t i = 0; i < warnings.size(); ++i) {
    if (i) out += ",";
    out += json_string(warnings[i]);
  }
  return out + "]";
}

}  // namespace epochgate::config
