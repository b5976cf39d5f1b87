#!/usr/bin/env bash
# Fetches a pinned Apache Kafka (brokers, tools, kafka-clients) from Maven
# Central into a cache outside the clone, with the log4j2 binding Kafka's
# POMs leave out. Prints the cache directory on stdout; the rest on stderr.
#   tools/kafka/fetch.sh [version]      (default: the pinned 4.x line, 4.4.0;
#                                        3.6.2 is the pinned pre-KIP-951 line)
#
# Cache: ${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/kafka-<version>/lib/*.jar
# plus conf/ (log4j2 configs). Maven's own repository goes to
# <cache>/m2, never ~/.m2, so the clone and the user's Maven stay untouched.
# A finished fetch leaves a .complete marker; a second run only checks it.
# Jars are never copied into the clone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=${1:-4.4.0}
# log4j2 pinned for the 4.x line (Kafka 4.4 builds against 2.25.5, SLF4J 1.7.36).
log4j_version=2.25.5
slf4j_version=1.7.36
cache=${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}
prefix=$cache/kafka-$version

if [ -f "$prefix/.complete" ]; then
  echo "$prefix"
  exit 0
fi
command -v mvn >/dev/null || { echo "kafka: mvn not installed (apt-get install maven)" >&2; exit 1; }
command -v javac >/dev/null || { echo "kafka: javac not installed (a JDK 17+)" >&2; exit 1; }
case $version in
  4.*) pom=pom.xml ;;
  3.6.*) pom=pom-3.x.xml ;;  # log4j 1 (reload4j) instead of log4j2
  *) echo "kafka: only the 4.x and 3.6.x lines are set up here (asked for $version)" >&2; exit 1 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/epochgate-kafka.XXXXXX")
trap 'rm -rf "$work"' EXIT
{
  echo "kafka $version: resolving with Maven into $prefix"
  rm -rf "$prefix/lib"
  mkdir -p "$prefix/lib" "$prefix/conf" "$cache/m2"
  cp "$here/$pom" "$work/pom.xml"
  (cd "$work" && mvn -B -q -Dmaven.repo.local="$cache/m2" \
      -Dkafka.version="$version" -Dlog4j.version="$log4j_version" -Dslf4j.version="$slf4j_version" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DoutputDirectory="$prefix/lib" -DincludeScope=runtime) >"$work/mvn.log" 2>&1 || {
    tail -40 "$work/mvn.log"; exit 1; }
  binding=log4j-slf4j-impl-$log4j_version
  [ "$pom" = pom.xml ] || binding=slf4j-reload4j-$slf4j_version
  for jar in kafka_2.13-$version kafka-tools-$version kafka-clients-$version $binding; do
    [ -f "$prefix/lib/$jar.jar" ] || { echo "kafka: $jar.jar missing after the fetch" >&2; exit 1; }
  done
  # Brokers log INFO to their own log file (stdout is redirected by the
  # starter); tools log WARN to stderr because the Verifiable* tools print
  # their JSON events on stdout.
  cat >"$prefix/conf/log4j2.properties" <<'CONF'
appender.o.type=Console
appender.o.name=OUT
appender.o.layout.type=PatternLayout
appender.o.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.o.ref=OUT
logger.state.name=state.change.logger
logger.state.level=WARN
CONF
  cat >"$prefix/conf/tools-log4j2.properties" <<'CONF'
appender.o.type=Console
appender.o.name=ERR
appender.o.target=SYSTEM_ERR
appender.o.layout.type=PatternLayout
appender.o.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.o.ref=ERR
CONF
  # The same two configs for log4j 1 (3.x), picked by kafka_cluster.py.
  cat >"$prefix/conf/log4j.properties" <<'CONF'
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=WARN
CONF
  cat >"$prefix/conf/tools-log4j.properties" <<'CONF'
log4j.rootLogger=WARN, err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.Target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=[%d] %p %m (%c)%n
CONF
  echo "$version" >"$prefix/.complete"
  echo "kafka $version: $(ls "$prefix/lib" | wc -l) jars in $prefix/lib"
} >&2
echo "$prefix"
