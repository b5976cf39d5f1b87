// config/value_parsers.cc: single-value parsing for the loader and the CLI.
#include "config/value_parsers.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace epochgate::config {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::optional<uint64_t> multiply(uint64_t v, uint64_t factor) {
  if (factor != 0 && v > std::numeric_limits<uint64_t>::max() / factor) return std::nullopt;
  return v * factor;
}

}  // namespace

bool valid_host(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  if (host.find(':') != std::string_view::npos) {
    in6_addr a6;
    return inet_pton(AF_INET6, std::string(host).c_str(), &a6) == 1;
  }
  std::size_t label_start = 0;
  for (std::size_t i = 0; i <= host.size(); ++i) {
    if (i == host.size() || host[i] == '.') {
      const std::string_view label = host.substr(label_start, i - label_start);
      if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
        return false;
      }
      label_start = i + 1;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(host[i]);
    if (!std::isalnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

std::optional<HostPort> parse_host_port(std::string_view text, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<HostPort> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  std::string_view host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return fail("missing ']' after IPv6 address");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return fail("expected ':port' after ']'");
    }
    port_text = text.substr(close + 2);
    if (host.find(':') == std::string_view::npos || !valid_host(host)) {
      return fail("'" + std::string(host) + "' is not an IPv6 address");
    }
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return fail("expected host:port");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return fail("IPv6 addresses need brackets: [addr]:port");
    }
    if (!valid_host(host)) return fail("'" + std::string(host) + "' is not a valid host");
  }
  const auto port = parse_uint(port_text);
  if (!port) return fail("'" + std::string(port_text) + "' is not a port number");
  if (*port > 65535) return fail("port " + std::string(port_text) + " is out of range (0..65535)");
  HostPort hp;
  hp.host = std::string(host);
  hp.port = static_cast<uint16_t>(*port);
  return hp;
}

std::optional<Mode> parse_mode(std::string_view text) {
  if (text == "enforce") return Mode::kEnforce;
  if (text == "observe") return Mode::kObserve;
  if (text == "off") return Mode::kOff;
  return std::nullopt;
}

std::optional<uint64_t> parse_uint(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  static const std::pair<std::string_view, uint64_t> kSuffixes[] = {
      {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}};
  for (const auto& [suffix, factor] : kSuffixes) {
    if (ends_with(text, suffix)) {
      auto v = parse_uint(text.substr(0, text.size() - suffix.size()));
      if (!v) return std::nullopt;
      return multiply(*v, factor);
    }
  }
  return parse_uint(text);
}

std::optional<uint64_t> parse_duration_ms(std::string_view text) {
  static const std::pair<std::string_view, uint64_t> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
  for (const auto& [unit, factor] : kUnits) {
    if (ends_with(text, unit)) {
      auto v = parse_uint(text.substr(0, text.size() - unit.size()));
      if (!v) continue;  // "5ms" must not be read as "5m" + junk
      return multiply(*v, factor);
    }
  }
  return parse_uint(text);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(std::string_view name, const std::vector<std::string_view>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (std::string_view c : candidates) {
    std::size_t d = edit_distance(name, c);
    // A unit suffix left off ("high_watermark" for "high_watermark_bytes") is
    // the most common slip and too far for plain edit distance.
    if (name.size() >= 4 && c.size() > name.size() && c.substr(0, name.size()) == name) d = 1;
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  return best;
}

const std::vector<std::string_view>& policy_api_names() {
  static const std::vector<std::string_view> kNames = {
      "produce", "fetch", "list_offsets", "offset_for_leader_epoch", "share", "persister"};
  return kNames;
}

bool is_secret_key(std::string_view key) {
  std::string k(key);
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  for (std::string_view word : {"password", "secret", "token", "credential", "private_key"}) {
    if (k.find(word) != std::string::npos) return true;
  }
  return k.rfind("sasl", 0) == 0;
}

}  // namespace epochgate::config
