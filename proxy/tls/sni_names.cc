// proxy/tls/sni_names.cc
#include "proxy/tls/sni_names.h"

#include <cctype>
#include <limits>

namespace epochgate::proxy::tls {

namespace {
constexpr std::string_view kNodeId = "$(nodeId)";

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}
}  // namespace

SniNames::SniNames(std::string pattern, std::string bootstrap_host, std::string advertise_host)
    : bootstrap_host_(std::move(bootstrap_host)), advertise_host_(std::move(advertise_host)) {
  const auto at = pattern.find(kNodeId);
  if (at == std::string::npos) {
    prefix_ = pattern;
    return;
  }
  prefix_ = pattern.substr(0, at);
  suffix_ = pattern.substr(at + kNodeId.size());
}

std::string SniNames::host_of(int32_t node_id) const {
  return prefix_ + std::to_string(node_id) + suffix_;
}

std::optional<int32_t> SniNames::node_of(std::string_view name) const {
  if (name.empty()) return kSniBootstrapNode;
  if (!bootstrap_host_.empty() && iequals(name, bootstrap_host_)) return kSniBootstrapNode;
  if (!advertise_host_.empty() && iequals(name, advertise_host_)) return kSniBootstrapNode;
  if (name.size() <= prefix_.size() + suffix_.size()) return std::nullopt;
  if (!iequals(name.substr(0, prefix_.size()), prefix_) ||
      !iequals(name.substr(name.size() - suffix_.size()), suffix_))
    return std::nullopt;
  std::string_view digits = name.substr(prefix_.size(), name.size() - prefix_.size() - suffix_.size());
  // Node ids are non-negative int32 written without leading zeros, so each
  // node has exactly one name.
  if (digits.size() > 10 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  int64_t v = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = v * 10 + (ch - '0');
  }
  if (v > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(v);
}

}  // namespace epochgate::proxy::tls
