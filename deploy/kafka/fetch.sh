#!/usr/bin/env bash
# Resolve the jars of the embedded Kafka broker (see pom.xml) into a cache dir and print it.
# A no-op when the dir is already complete. Usage: deploy/kafka/fetch.sh [DIR]
# DIR defaults to $TRUSTLAYER_KAFKA_LIBS, else ~/.cache/trustlayer/kafka-4.4.0/libs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kafka_version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"
dir="${1:-${TRUSTLAYER_KAFKA_LIBS:-$HOME/.cache/trustlayer/kafka-${kafka_version}/libs}}"
marker="$dir/.trustlayer-complete"

if [[ -f "$marker" && -f "$dir/kafka_2.13-${kafka_version}.jar" ]] \
   && cmp -s "$marker" "$here/pom.xml"; then
  echo "$dir"
  exit 0
fi

if ! command -v mvn >/dev/null 2>&1; then
  echo "fetch.sh: mvn (Apache Maven) is needed: apt-get install -y maven" >&2
  exit 1
fi

parent="$(dirname "$dir")"
mkdir -p "$parent"
tmp="$(mktemp -d "$parent/.libs.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "fetch.sh: resolving org.apache.kafka:kafka_2.13:${kafka_version} into $dir" >&2
mvn -q -B -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies \
  -DoutputDirectory="$tmp" -DincludeScope=runtime >&2

cp "$here/pom.xml" "$tmp/.trustlayer-complete"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "$dir"
