// config/value_parsers.h: parsing and checking of single configuration values,
// shared by the YAML loader and the command line so both accept exactly the
// same spellings: host:port, modes, sizes with binary suffixes, durations, and
// the "did you mean" suggestion for misspelled names. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace epochgate::config {

/// Parses "host:port" or "[ipv6]:port". Host: a DNS name ([A-Za-z0-9._-],
/// labels not starting or ending with '-'), an IPv4 address, or a bracketed
/// IPv6 address. Port: decimal 0..65535. On failure returns nullopt and sets
/// `*error` to the reason.
std::optional<HostPort> parse_host_port(std::string_view text, std::string* error);

/// True if `host` is a valid host name or IP address (IPv6 without brackets).
bool valid_host(std::string_view host);

/// "enforce" | "observe" | "off".
std::optional<Mode> parse_mode(std::string_view text);

/// Unsigned decimal integer, no sign, no spaces; nullopt on overflow or junk.
std::optional<uint64_t> parse_uint(std::string_view text);

/// Byte size: a plain integer or one with a binary suffix KiB, MiB, GiB
/// ("100MiB" = 104857600). nullopt on junk or overflow.
std::optional<uint64_t> parse_size(std::string_view text);

/// Duration in ms: a plain integer (ms) or a number with unit ms, s, m, h
/// ("30s" = 30000). nullopt on junk or overflow.
std::optional<uint64_t> parse_duration_ms(std::string_view text);

/// Levenshtein edit distance (insert, delete, substitute all cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `name` if it is close enough to be a likely typo
/// (distance <= max(2, len/3), or a candidate that extends `name`, such as a
/// missing "_bytes"), else "".
std::string closest_name(std::string_view name, const std::vector<std::string_view>& candidates);

/// Names of the fenced API groups a policy rule may list.
const std::vector<std::string_view>& policy_api_names();

/// True for keys whose values must never be shown (password, secret, token,
/// credential, private_key, sasl_*): /debug/config and logs redact them.
bool is_secret_key(std::string_view key);

}  // namespace epochgate::config
