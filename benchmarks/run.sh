#!/usr/bin/env bash
# Runs the distlock benchmarks and writes a Markdown report under benchmarks/target/results/.
#
#   benchmarks/run.sh            quick look (~8 min): distinct keys at 1 and 8 threads, short iterations
#   benchmarks/run.sh full       the numbers to publish (~35 min on 2 cores): 1/8/64 threads, distinct and
#                                contended keys, hand-off latency at 2/8/64 threads, Redisson config variants
#   benchmarks/run.sh full cycle handoff   only some parts (cycle overhead paired handoff profile variants types
#                                nested cluster backends hotkey permits peers held)
#   benchmarks/run.sh full peers  distlock's Redis locks beside Spring Integration's RedisLockRegistry (~6 min)
#   benchmarks/run.sh full held   held watchdog locks per instance, 10^3 .. 10^5, every backend (~25 min)
#
# Anything else is passed to JMH itself: benchmarks/run.sh jmh LockCycle -t 8 -p impl=raw ...
set -euo pipefail
cd "$(dirname "$0")"
JAR=target/distlock-benchmarks.jar
if [[ ! -f "$JAR" || "${REBUILD:-}" == 1 ]]; then
  # -am builds the library from this checkout as well, so nothing has to be installed first
  (cd .. && ./mvnw -B -q -pl benchmarks -am package -DskipTests)
fi
mode="${1:-quick}"
if [[ "$mode" == jmh ]]; then
  shift
  exec java -jar "$JAR" "$@"
fi
# BENCH_JAVA_OPTS: e.g. -Dbench.backends=all for the backends part with PostgreSQL synchronous_commit off too
exec java -Xms1g -Xmx1g ${BENCH_JAVA_OPTS:-} -cp "$JAR" io.github.distlock.benchmarks.Suite "$@"
