#!/usr/bin/env bash
# Fetch Apache Kafka 4.4.0 (broker + tools + clients + streams) with all runtime
# dependencies from Maven Central into a flat directory of jars, usable as
#   java -cp "$DIR/*" org.apache.kafka.tools.DumpLogSegments ...
#
# Usage: tests/kafka/fetch-kafka.sh [DIR]
#   DIR defaults to ${PINLOG_KAFKA_LIBS:-$HOME/.cache/pinlog/kafka-4.4.0/libs}
#
# Needs: mvn (3.6+) and a JDK on PATH, Maven Central reachable (or the
# artifacts already in the local Maven repository, ~/.m2 by default).
# Idempotent: a marker file records a completed fetch; a second run is a
# no-op (~5 ms). Concurrent runs are serialised with flock when available.
# Prints nothing on success; on failure prints Maven's log and exits non-zero.
#
# Environment:
#   PINLOG_KAFKA_LIBS   default target directory
#   MVN                 maven executable (default: mvn)
#   PINLOG_MVN_ARGS     extra maven arguments, e.g. "-Dmaven.repo.local=/x -o"
set -euo pipefail

KAFKA_VERSION=4.4.0
SCALA_BINARY=2.13
# Kafka 4.4.0 uses slf4j-api 1.7.36 and log4j2 2.25.5 (log4j-api/log4j-core
# are already runtime deps of kafka-server). The Kafka release tarball binds
# slf4j to log4j2 via log4j-slf4j-impl; do the same. Without a log4j2 config
# file log4j2 logs ERROR and above only, to stdout.
LOG4J_VERSION=2.25.5
DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.6.1
MARKER_NAME=.pinlog-fetch-complete
# Anything that changes what ends up in DIR must change this string.
SPEC="pinlog-kafka-libs v2 kafka_${SCALA_BINARY}:${KAFKA_VERSION} kafka-tools:${KAFKA_VERSION} kafka-clients:${KAFKA_VERSION} kafka-streams:${KAFKA_VERSION} log4j-slf4j-impl:${LOG4J_VERSION}"

DIR="${1:-${PINLOG_KAFKA_LIBS:-$HOME/.cache/pinlog/kafka-${KAFKA_VERSION}/libs}}"
MVN="${MVN:-mvn}"

die() { echo "fetch-kafka.sh: $*" >&2; exit 1; }

# complete DIR -> 0 if DIR holds a finished fetch of exactly this SPEC.
complete() {
  local d="$1" m="$1/$MARKER_NAME" first jar
  [ -f "$m" ] || return 1
  IFS= read -r first < "$m" || return 1
  [ "$first" = "$SPEC" ] || return 1
  while IFS= read -r jar; do
    [ -n "$jar" ] || continue
    [ -s "$d/$jar" ] || return 1
  done < <(tail -n +2 "$m")
  return 0
}

complete "$DIR" && exit 0

command -v "$MVN" >/dev/null 2>&1 || die "maven ('$MVN') not found on PATH"

mkdir -p "$DIR" || die "cannot create $DIR"
DIR="$(cd "$DIR" && pwd -P)"

# Serialise concurrent fetches into the same DIR.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DIR/.fetch.lock"
  flock 9
  complete "$DIR" && exit 0   # someone else finished while we waited
  # Leftovers of a run that was killed (we hold the lock, so none is live).
  find "$DIR" -mindepth 1 -maxdepth 1 -type d -name '.staging.*' -exec rm -rf {} +
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/pinlog-fetch-kafka.XXXXXX")"
STAGE="$(mktemp -d "$DIR/.staging.XXXXXX")"
cleanup() { rm -rf "$WORK" "$STAGE"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat > "$WORK/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.pinlog</groupId>
  <artifactId>pinlog-kafka-libs</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_${SCALA_BINARY}</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-clients</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-streams</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>${LOG4J_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF

# shellcheck disable=SC2086  # PINLOG_MVN_ARGS is intentionally word-split
if ! (cd "$WORK" && "$MVN" -B -q -C -Dstyle.color=never ${PINLOG_MVN_ARGS:-} \
        "$DEP_PLUGIN:copy-dependencies" \
        -DincludeScope=runtime \
        -DoutputDirectory="$STAGE" \
        -Dmdep.overWriteReleases=true \
        > "$WORK/mvn.log" 2>&1); then
  cat "$WORK/mvn.log" >&2
  die "maven failed to fetch Kafka ${KAFKA_VERSION} (log above)"
fi

for want in "kafka_${SCALA_BINARY}-${KAFKA_VERSION}.jar" "kafka-tools-${KAFKA_VERSION}.jar" \
            "kafka-clients-${KAFKA_VERSION}.jar" "kafka-server-${KAFKA_VERSION}.jar" \
            "kafka-streams-${KAFKA_VERSION}.jar" \
            "log4j-slf4j-impl-${LOG4J_VERSION}.jar"; do
  [ -s "$STAGE/$want" ] || { cat "$WORK/mvn.log" >&2; die "expected $want missing after fetch"; }
done

# Replace previous contents (only what we own: jars and the marker).
rm -f "$DIR/$MARKER_NAME"
find "$DIR" -maxdepth 1 -type f -name '*.jar' -delete
find "$STAGE" -maxdepth 1 -type f -name '*.jar' -exec mv -f -t "$DIR" {} +

# Marker last: line 1 = SPEC, then one jar name per line.
{
  echo "$SPEC"
  (cd "$DIR" && find . -maxdepth 1 -type f -name '*.jar' -printf '%f\n' | LC_ALL=C sort)
} > "$DIR/$MARKER_NAME.tmp"
mv -f "$DIR/$MARKER_NAME.tmp" "$DIR/$MARKER_NAME"
complete "$DIR" || die "internal error: fetch finished but $DIR is not complete"
