#!/usr/bin/env bash
# tools/tls/make-certs.sh: the TLS tests' certificates, made with the openssl
# command line at test time (never checked in, never reused across runs).
# Owns: a throw-away CA, leaf certificates signed by it, and the bad ones the
# failure tests need. Must never touch anything outside the directory it is
# given, never reach the network, never make keys weaker than P-256 or RSA 2048
# (Debian's OpenSSL refuses them at security level 2).
#
#   tools/tls/make-certs.sh set DIR [--rsa] [--domain kafka.example.com]
#       The standard set (about 1 s). In DIR:
#         ca.crt ca.key              the test CA ("epochgate test CA")
#         ca.d/                      the same CA as a hashed directory (openssl rehash)
#         other-ca.crt other-ca.key  a CA that nothing trusts
#         server.*                   127.0.0.1, ::1, localhost, DOMAIN, *.DOMAIN (serverAuth)
#         server-rsa.*               the same names, RSA 2048
#         client.*                   CN=epochgate-test-client (clientAuth)
#         expired.*                  server names, notAfter a day in the past
#         notyet.*                   server names, notBefore a day in the future
#         wronghost.*                only wrong.example.net
#         untrusted.*                server names, signed by other-ca
#         untrusted-client.*         client, signed by other-ca
#         client-enc.key + client-key-password.txt   client.key encrypted (AES-256)
#         server-enc.key + server-key-password.txt   server.key encrypted (AES-256)
#       For each leaf NAME: NAME.crt (leaf then CA, the chain a server sends),
#       NAME.leaf.crt (leaf alone), NAME.key (PKCS#8, unencrypted) and
#       NAME.pem (chain then key: HAProxy's `crt` file).
#   tools/tls/make-certs.sh leaf DIR NAME [--cn CN] [--san SAN,...] [--client]
#       [--ca CA_NAME] [--start YYYYMMDDHHMMSSZ] [--end YYYYMMDDHHMMSSZ] [--rsa]
#       One more leaf signed by DIR/CA_NAME (default ca), for example a rotated
#       server certificate: `leaf DIR server-2 --cn rotated` (default SANs:
#       the server names of the set).
# Prints the directory on stdout; openssl's chatter goes to DIR/openssl.log.
set -euo pipefail

die() { echo "make-certs: $*" >&2; exit 2; }
command -v openssl >/dev/null || die "openssl not installed (apt-get install openssl)"

usage() { sed -n '/^#   tools/,/^# Prints/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# UTC in openssl ca's GeneralizedTime form, DAYS from now (negative: past).
stamp() { date -u -d "@$(( $(date -u +%s) + $1 * 86400 ))" +%Y%m%d%H%M%SZ; }

newkey() {  # newkey KEYFILE rsa|ec
  if [ "$2" = rsa ]; then
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>>"$log"
  else
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
      -pkeyopt ec_param_enc:named_curve -out "$1" 2>>"$log"
  fi
  chmod 0600 "$1"
}

make_ca() {  # make_ca DIR NAME SUBJECT-CN ALG
  local dir=$1 name=$2 cn=$3 alg=$4
  newkey "$dir/$name.key" "$alg"
  openssl req -x509 -new -key "$dir/$name.key" -sha256 -days 30 -subj "/O=epochgate tests/CN=$cn" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" -out "$dir/$name.crt" >>"$log" 2>&1
  # openssl ca's bookkeeping for this CA (serials, index), kept beside it.
  mkdir -p "$dir/.$name.db"
  : >"$dir/.$name.db/index.txt"
  # A random first serial: two runs never issue the same serial under one name.
  openssl rand -hex 16 >"$dir/.$name.db/serial"
}

# sign DIR NAME CN SANS KIND CA START END ALG: one leaf via `openssl ca` (its
# -startdate/-enddate make the expired and not-yet-valid ones).
sign() {
  local dir=$1 name=$2 cn=$3 sans=$4 kind=$5 ca=$6 start=$7 end=$8 alg=$9
  [ -f "$dir/$ca.crt" ] && [ -f "$dir/$ca.key" ] || die "no CA $ca in $dir"
  local db="$dir/.$ca.db" ext="$dir/.$name.ext" cnf="$dir/.$name.cnf"
  newkey "$dir/$name.key" "$alg"
  openssl req -new -key "$dir/$name.key" -subj "/O=epochgate tests/CN=$cn" \
    -out "$dir/.$name.csr" >>"$log" 2>&1
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "authorityKeyIdentifier=keyid"
    if [ "$kind" = client ]; then
      echo "keyUsage=critical,digitalSignature"
      echo "extendedKeyUsage=clientAuth"
    else
      echo "keyUsage=critical,digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=serverAuth"
    fi
    [ -z "$sans" ] || echo "subjectAltName=$sans"
  } >"$ext"
  cat >"$cnf" <<EOF
[ca]
default_ca = this
[this]
database = $db/index.txt
serial = $db/serial
new_certs_dir = $db
certificate = $dir/$ca.crt
private_key = $dir/$ca.key
default_md = sha256
policy = anything
unique_subject = no
email_in_dn = no
[anything]
organizationName = optional
commonName = supplied
EOF
  openssl ca -batch -notext -config "$cnf" -extfile "$ext" -in "$dir/.$name.csr" \
    -startdate "$start" -enddate "$end" -out "$dir/$name.leaf.crt" >>"$log" 2>&1 ||
    die "openssl ca failed for $name (see $log)"
  cat "$dir/$name.leaf.crt" "$dir/$ca.crt" >"$dir/$name.crt"
  cat "$dir/$name.crt" "$dir/$name.key" >"$dir/$name.pem"
  chmod 0600 "$dir/$name.pem"
  rm -f "$dir/.$name.csr" "$ext" "$cnf"
}

server_sans() {  # the names every server certificate of the set carries
  echo "IP:127.0.0.1,IP:::1,DNS:localhost,DNS:$1,DNS:*.$1"
}

encrypt_key() {  # encrypt_key DIR NAME: NAME-enc.key with a password file
  local dir=$1 name=$2
  openssl rand -hex 12 >"$dir/$name-key-password.txt"
  chmod 0600 "$dir/$name-key-password.txt"
  openssl pkey -in "$dir/$name.key" -aes256 -passout "file:$dir/$name-key-password.txt" \
    -out "$dir/$name-enc.key" 2>>"$log"
  chmod 0600 "$dir/$name-enc.key"
}

cmd=${1:-}; [ $# -ge 2 ] || usage
dir=$2; shift 2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
log=$dir/openssl.log

case "$cmd" in
  set)
    alg=ec domain=kafka.example.com
    while [ $# -gt 0 ]; do
      case "$1" in
        --rsa) alg=rsa ;;
        --domain) [ $# -ge 2 ] || usage; domain=$2; shift ;;
        *) usage ;;
      esac
      shift
    done
    now=$(stamp 0) month=$(stamp 30)
    sans=$(server_sans "$domain")
    make_ca "$dir" ca "epochgate test CA" "$alg"
    make_ca "$dir" other-ca "untrusted test CA" "$alg"
    mkdir -p "$dir/ca.d"
    cp "$dir/ca.crt" "$dir/ca.d/epochgate-test-ca.pem"
    openssl rehash "$dir/ca.d" >>"$log" 2>&1
    sign "$dir" server "localhost" "$sans" server ca "$now" "$month" "$alg"
    sign "$dir" server-rsa "localhost" "$sans" server ca "$now" "$month" rsa
    sign "$dir" client "epochgate-test-client" "" client ca "$now" "$month" "$alg"
    sign "$dir" expired "localhost" "$sans" server ca "$(stamp -30)" "$(stamp -1)" "$alg"
    sign "$dir" notyet "localhost" "$sans" server ca "$(stamp 1)" "$(stamp 30)" "$alg"
    sign "$dir" wronghost "wrong.example.net" "DNS:wrong.example.net" server ca "$now" "$month" "$alg"
    sign "$dir" untrusted "localhost" "$sans" server other-ca "$now" "$month" "$alg"
    sign "$dir" untrusted-client "epochgate-test-client" "" client other-ca "$now" "$month" "$alg"
    encrypt_key "$dir" client
    encrypt_key "$dir" server
    echo "$domain" >"$dir/domain.txt"
    ;;
  leaf)
    [ $# -ge 1 ] || usage
    name=$1; shift
    cn=$name sans=default kind=server ca=ca start=$(stamp 0) end=$(stamp 30) alg=ec
    while [ $# -gt 0 ]; do
      case "$1" in
        --cn) cn=$2; shift ;;
        --san) sans=$2; shift ;;
        --client) kind=client ;;
        --ca) ca=$2; shift ;;
        --start) start=$2; shift ;;
        --end) end=$2; shift ;;
        --rsa) alg=rsa ;;
        *) usage ;;
      esac
      shift
    done
    if [ "$sans" = default ]; then
      sans=""
      [ "$kind" = client ] ||
        sans=$(server_sans "$(cat "$dir/domain.txt" 2>/dev/null || echo kafka.example.com)")
    fi
    sign "$dir" "$name" "$cn" "$sans" "$kind" "$ca" "$start" "$end" "$alg"
    ;;
  *) usage ;;
esac
echo "$dir"
