// config/config.cc: the few functions the Config data model declares.
#include "config/config.h"

namespace epochgate::config {

std::string HostPort::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kEnforce:
      return "enforce";
    case Mode::kObserve:
      return "observe";
    case Mode::kOff:
      return "off";
  }
  return "enforce";
}

}  // namespace epochgate::config
