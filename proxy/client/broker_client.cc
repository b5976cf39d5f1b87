// proxy/client/broker_client.cc: the stable names of a BrokerClient's errors
// (proxy/client/broker_client.h), for log lines and metric labels. Pure.
#include "proxy/client/broker_client.h"

namespace epochgate::proxy {

const char* client_error_name(ClientError e) {
  switch (e) {
    case ClientError::kNone:
      return "none";
    case ClientError::kBusy:
      return "busy";
    case ClientError::kClosed:
      return "closed";
    case ClientError::kConnectFailed:
      return "connect_failed";
    case ClientError::kLoginFailed:
      return "login_failed";
    case ClientError::kUnsupportedVersion:
      return "unsupported_version";
    case ClientError::kTimeout:
      return "timeout";
    case ClientError::kDisconnected:
      return "disconnected";
    case ClientError::kBadResponse:
      return "bad_response";
  }
  return "?";
}

}  // namespace epochgate::proxy
