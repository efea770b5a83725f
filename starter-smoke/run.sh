#!/usr/bin/env bash
# Follows README.md's "Add it to your application" literally, as a newcomer would, in a fresh directory:
#   1. install the artifacts from this clone with the README's command,
#   2. write a minimal Spring Boot application: spring-boot-starter-parent, the README's <dependency> snippet word for
#      word, the README's application.yml, and the README's first @DistributedLock snippet in a service; build it,
#   3. start a real redis-server (the binary embedded-redis ships) on free loopback ports, with a password as the
#      README's YAML expects, a TLS port that wants client certificates, and a replica,
#   4. run the application three times: with the README's YAML (host and port pointed at the server), with the
#      README's SSL YAML added, with the README's master/replica YAML added (its nodes pointed at master and replica),
#      each time checking from outside, in plain RESP over bash's /dev/tcp, that the lock's key is in Redis while the
#      method runs, that a second caller is refused, and that nothing is left in Redis afterwards.
# Exits non-zero on any failure; prints the time of each step.
#
# Usage (from anywhere):  starter-smoke/run.sh
# Env: SMOKE_SKIP_INSTALL=1  skip step 1 (the artifacts are already in the local repository)
#      SMOKE_KEEP=1          keep the temporary directory (the application, certificates and logs)
#      MAVEN_REPO_LOCAL      the local Maven repository, if not ~/.m2/repository
#      DISTLOCK_REDIS_SERVER a redis-server binary to use instead of the one embedded-redis ships
#      JAVA_HOME             the JDK for the build and the application (java on the PATH otherwise)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPLATE="$ROOT/starter-smoke/app"
README="$ROOT/README.md"
M2="${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}"
# batch mode, no download progress; read by Maven 3.9 itself
export MAVEN_ARGS="${MAVEN_ARGS:--B -ntp}"
USER_ID=42 # the user SmokeApplication locks

WORK="$(mktemp -d -t distlock-starter-smoke.XXXXXX)"
PIDS=()     # redis-servers, stopped on exit
APP_PID=""
T0=$SECONDS
STEP_START=$SECONDS

log() { echo "starter-smoke: $*"; }
fail() { echo "starter-smoke: FAIL: $*" >&2; exit 1; }
step_done() { log "   $1 took $((SECONDS - STEP_START)) s"; STEP_START=$SECONDS; }

stop_pid() { # SIGTERM, then SIGKILL after 10 s
  local pid=$1
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$? pid f
  stop_pid "$APP_PID"
  for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
  if [[ $rc -ne 0 ]]; then
    for f in "$WORK"/*.log; do
      [[ -f "$f" ]] || continue
      echo "--- last 40 lines of $f ---" >&2
      tail -n 40 "$f" >&2 || true
    done
  fi
  if [[ "${SMOKE_KEEP:-}" == 1 ]]; then
    log "kept $WORK"
  else
    rm -rf "$WORK"
  fi
  log "$([[ $rc -eq 0 ]] && echo OK || echo FAILED) in $((SECONDS - T0)) s"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Maven offline first (everything is usually in the local repository already); online only when offline mode is what
# failed, so a real build failure is reported once. Args: log file, Maven arguments.
mvn_offline_first() {
  local out=$1
  shift
  if "$ROOT/mvnw" -o "$@" >"$out" 2>&1; then
    return 0
  fi
  if grep -q -E "offline mode|has not been downloaded from it before|Cannot access .* in offline" "$out"; then
    log "   offline, Maven lacks artifacts: again online"
    "$ROOT/mvnw" "$@" >"$out" 2>&1 && return 0
  fi
  return 1
}

# The first fenced block after the line "<!-- starter-smoke: NAME -->" in README.md.
readme_block() {
  local block
  block="$(awk -v marker="<!-- starter-smoke: $1 -->" '
    $0 == marker { found = 1; next }
    found && !inside && /^```/ { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }
  ' "$README")"
  [[ -n "$block" ]] || fail "README.md has no fenced block after <!-- starter-smoke: $1 -->"
  printf '%s\n' "$block"
}

# ---------------------------------------------------------------------------------------------------------------- 1
if [[ "${SMOKE_SKIP_INSTALL:-}" == 1 ]]; then
  log "1. install skipped (SMOKE_SKIP_INSTALL=1)"
else
  # the README's command (quiet); after ./mvnw verify it compiles nothing again
  log "1. ./mvnw -q install -DskipTests"
  (cd "$ROOT" && mvn_offline_first "$WORK/install.log" -q install -DskipTests) || fail "the install failed"
  step_done "installing"
fi
VERSION="$(sed -n 's:^  <version>\(.*\)</version>:\1:p' "$ROOT/pom.xml" | head -n 1)"
BOOT_VERSION="$(sed -n 's:.*<spring-boot.version>\(.*\)</spring-boot.version>.*:\1:p' "$ROOT/pom.xml")"
EMBEDDED_REDIS_VERSION="$(sed -n 's:.*<embedded-redis.version>\(.*\)</embedded-redis.version>.*:\1:p' "$ROOT/pom.xml")"
STARTER="$M2/io/github/distlock/distlock-spring-boot-starter/$VERSION/distlock-spring-boot-starter-$VERSION.jar"
[[ -f "$STARTER" ]] || fail "$STARTER is not installed"

# ---------------------------------------------------------------------------------------------------------------- 2
APP="$WORK/app"
log "2. a fresh application in $APP (spring-boot-starter-parent $BOOT_VERSION)"
log "   built and run on $("${JAVA_HOME:+$JAVA_HOME/bin/}java" -version 2>&1 | head -n 1)"
mkdir -p "$APP"
cp -R "$TEMPLATE/." "$APP/"
rm -f "$APP/pom.xml.in" "$APP/src/main/java/com/example/smoke/OrderService.java.in"

DEPENDENCY="$(readme_block dependency)"
grep -q "<artifactId>distlock-spring-boot-starter</artifactId>" <<<"$DEPENDENCY" \
  || fail "README.md's dependency snippet is not the starter"
grep -q "<version>$VERSION</version>" <<<"$DEPENDENCY" \
  || fail "README.md's dependency snippet does not name version $VERSION (the project's version)"
SNIPPET="$(readme_block annotation)"
grep -q "@DistributedLock" <<<"$SNIPPET" || fail "README.md's annotation snippet has no @DistributedLock"
grep -q "{ \.\.\. }" <<<"$SNIPPET" || fail "README.md's annotation snippet has no '{ ... }' body to fill in"
mkdir -p "$APP/src/main/resources"
readme_block application.yml >"$APP/src/main/resources/application.yml"
readme_block ssl >"$WORK/ssl.yml"
readme_block masterreplica >"$WORK/masterreplica.yml"
PREFIX="$(sed -n 's/^ *key-prefix: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$APP/src/main/resources/application.yml")"
EXPECTED_KEY="${PREFIX:-lock:}order:$USER_ID"

# the snippet indented as a member of the class, its "{ ... }" a body that holds the lock until run.sh releases it
BODY='{ return whileHeld.run(userId, request); }'
while IFS= read -r line; do
  printf '    %s\n' "${line//\{ ... \}/$BODY}"
done <<<"$SNIPPET" >"$WORK/snippet.java"
while IFS= read -r line; do printf '    %s\n' "$line"; done <<<"$DEPENDENCY" >"$WORK/dependency.xml"
awk -v boot="$BOOT_VERSION" -v dep="$WORK/dependency.xml" '
  $0 ~ /^ *@README_DEPENDENCY@$/ { while ((getline l < dep) > 0) print l; close(dep); next }
  { gsub(/@BOOT_VERSION@/, boot); print }
' "$TEMPLATE/pom.xml.in" >"$APP/pom.xml"
awk -v snip="$WORK/snippet.java" '
  $0 ~ /^ *@README_SNIPPET@$/ { while ((getline l < snip) > 0) print l; close(snip); next }
  { print }
' "$TEMPLATE/src/main/java/com/example/smoke/OrderService.java.in" >"$APP/src/main/java/com/example/smoke/OrderService.java"
log "   dependency: $(tr -d ' \n' <<<"$DEPENDENCY")"
log "   method:     $(sed -e 's/^ *//' "$WORK/snippet.java" | tr '\n' ' ')"

mvn_offline_first "$WORK/build.log" -q -f "$APP/pom.xml" package \
  || fail "the application does not build with the README's snippets"
[[ -f "$APP/target/app.jar" ]] || fail "no $APP/target/app.jar"
step_done "writing and building the application"

# ---------------------------------------------------------------------------------------------------------------- 3
log "3. redis-server"
# DISTLOCK_REDIS_SERVER, else the binary embedded-redis ships for this platform, else one on the PATH (test-support's
# order)
REDIS_BIN="$WORK/redis-server"
if [[ -n "${DISTLOCK_REDIS_SERVER:-}" ]]; then
  REDIS_BIN="$DISTLOCK_REDIS_SERVER"
else
  case "$(uname -s)/$(uname -m)" in
    Linux/x86_64) RESOURCE=redis-server-6.2.6-v5-linux-amd64 ;;
    Linux/aarch64 | Linux/arm64) RESOURCE=redis-server-6.2.7-linux-arm64 ;;
    Darwin/x86_64) RESOURCE=redis-server-6.2.6-v5-darwin-amd64 ;;
    Darwin/arm64) RESOURCE=redis-server-6.2.6-v5-darwin-arm64 ;;
    *) RESOURCE="" ;;
  esac
  JAR="$M2/com/github/codemonstur/embedded-redis/$EMBEDDED_REDIS_VERSION/embedded-redis-$EMBEDDED_REDIS_VERSION.jar"
  if [[ -n "$RESOURCE" && -f "$JAR" ]]; then
    if command -v unzip >/dev/null; then
      unzip -p "$JAR" "$RESOURCE" >"$REDIS_BIN" || fail "could not extract $RESOURCE from $JAR"
    else
      (cd "$WORK" && "${JAVA_HOME:+$JAVA_HOME/bin/}jar" xf "$JAR" "$RESOURCE" && mv "$RESOURCE" redis-server) \
        || fail "could not extract $RESOURCE from $JAR"
    fi
    chmod +x "$REDIS_BIN"
  elif command -v redis-server >/dev/null; then
    REDIS_BIN="$(command -v redis-server)"
  else
    fail "no redis-server for $(uname -s)/$(uname -m): set DISTLOCK_REDIS_SERVER"
  fi
fi

PASSWORD="smoke-$RANDOM$RANDOM$RANDOM"

# RESP over bash's /dev/tcp (embedded-redis ships no redis-cli): AUTH, then one command, on the plain port given;
# prints the command's reply line (integers, statuses, errors: all this script needs)
resp() {
  local arg
  printf '*%d\r\n' $#
  for arg; do printf '$%d\r\n%s\r\n' "${#arg}" "$arg"; done
}
redis_at() {
  local port=$1 fd reply=""
  shift
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
  { resp AUTH "$PASSWORD"; resp "$@"; } >&"$fd"
  if read -r -t 5 -u "$fd" reply && [[ "${reply%$'\r'}" == "+OK" ]] && read -r -t 5 -u "$fd" reply; then
    exec {fd}>&-
    echo "${reply%$'\r'}"
  else
    exec {fd}>&-
    echo "no answer from 127.0.0.1:$port to AUTH + $*: ${reply:-nothing}" >&2
    return 1
  fi
}

# start_redis NAME ARGS...: on free loopback ports (a taken port makes redis-server exit; then others are tried);
# sets PORT (plain) and TLS_PORT (if the arguments mention @TLS_PORT@)
start_redis() {
  local name=$1 attempt pid args
  shift
  for attempt in 1 2 3 4 5; do
    PORT=$((20000 + RANDOM % 30000))
    TLS_PORT=$((20000 + RANDOM % 30000))
    args=("${@//@TLS_PORT@/$TLS_PORT}")
    "$REDIS_BIN" --port "$PORT" --bind 127.0.0.1 --requirepass "$PASSWORD" --save "" --appendonly no \
      --dir "$WORK" --dbfilename "$name.rdb" --daemonize no "${args[@]}" >"$WORK/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      if grep -q "Ready to accept connections" "$WORK/$name.log" \
        && [[ "$(redis_at "$PORT" PING 2>/dev/null)" == "+PONG" ]]; then
        PIDS+=("$pid")
        return 0
      fi
      sleep 0.05
    done
    stop_pid "$pid"
    log "   $name could not start on ports $PORT/$TLS_PORT (attempt $attempt)"
  done
  fail "$name did not start"
}

# TLS material for the server and for the README's SSL bundle: a CA, a server certificate for 127.0.0.1, a client
# certificate (the server asks for one, so the bundle's keystore is exercised too)
TLS=1
if command -v openssl >/dev/null; then
  (
    cd "$WORK"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=starter-smoke CA" \
      -keyout ca-key.pem -out ca.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server-key.pem -out server.csr
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile server.ext \
      -out server.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=starter-smoke client" -keyout client-key.pem -out client.csr
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -out client.pem
  ) >"$WORK/openssl.log" 2>&1 || fail "could not make certificates with openssl"
else
  TLS=0
  log "   no openssl: the SSL run is SKIPPED"
fi

# --repl-diskless-sync-delay 0: the master sends the replica its first copy at once (Redis 7.0 waits 5 s for more
# replicas to join by default)
if [[ $TLS == 1 ]]; then
  start_redis master --repl-diskless-sync-delay 0 --tls-port @TLS_PORT@ --tls-cert-file "$WORK/server.pem" \
    --tls-key-file "$WORK/server-key.pem" --tls-ca-cert-file "$WORK/ca.pem" --tls-auth-clients yes
  MASTER_TLS_PORT=$TLS_PORT
else
  start_redis master --repl-diskless-sync-delay 0
fi
MASTER_PORT=$PORT
start_redis replica --replicaof 127.0.0.1 "$MASTER_PORT" --masterauth "$PASSWORD"
REPLICA_PORT=$PORT
for _ in $(seq 1 100); do
  grep -q "MASTER <-> REPLICA sync: Finished with success" "$WORK/replica.log" && break
  sleep 0.1
done
grep -q "MASTER <-> REPLICA sync: Finished with success" "$WORK/replica.log" || fail "the replica did not sync"
TLS_NOTE=""
[[ $TLS == 0 ]] || TLS_NOTE=" (TLS, client certificates required, on $MASTER_TLS_PORT)"
log "   $("$REDIS_BIN" --version | cut -d' ' -f1-3): master on 127.0.0.1:$MASTER_PORT$TLS_NOTE, replica on $REPLICA_PORT"
step_done "starting Redis"

# ---------------------------------------------------------------------------------------------------------------- 4
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
RUN=0

# run_app NAME ARGS...: runs the application, checks its lock from outside while held and after; the key must be on
# every port in CHECK_PORTS while held
run_app() {
  local name=$1 key="" deadline ttl rc port
  shift
  RUN=$((RUN + 1))
  rm -f "$WORK/release"
  # the file exists before the application starts: the loop below reads it at once, maybe before the shell that starts
  # the application has opened it
  : >"$WORK/app-$name.log"
  # C1 only: a short-lived application starts faster
  REDIS_PASSWORD="$PASSWORD" "$JAVA" -XX:TieredStopAtLevel=1 -jar "$APP/target/app.jar" --smoke.release-file="$WORK/release" "$@" \
    >"$WORK/app-$name.log" 2>&1 &
  APP_PID=$!
  deadline=$((SECONDS + 120))
  while [[ -z "$key" ]]; do
    kill -0 "$APP_PID" 2>/dev/null || fail "$name: the application exited before holding its lock"
    ((SECONDS < deadline)) || fail "$name: the application did not hold its lock within 120 s"
    key="$(sed -n 's/^SMOKE held //p' "$WORK/app-$name.log")"
    [[ -n "$key" ]] || sleep 0.1
  done
  [[ "$key" == "$EXPECTED_KEY" ]] || fail "$name: the lock's key is $key, not $EXPECTED_KEY"
  grep "^SMOKE contended " "$WORK/app-$name.log" | sed 's/^SMOKE /starter-smoke:    /'
  for port in "${CHECK_PORTS[@]}"; do
    for _ in $(seq 1 50); do # a replica may need a moment
      [[ "$(redis_at "$port" EXISTS "$key")" == ":1" ]] && break
      sleep 0.1
    done
    [[ "$(redis_at "$port" EXISTS "$key")" == ":1" ]] || fail "$name: $key is not on port $port while held"
    [[ "$(redis_at "$port" TYPE "$key")" == "+hash" ]] || fail "$name: $key on port $port is not a lock hash"
    ttl="$(redis_at "$port" PTTL "$key")"
    [[ "$ttl" =~ ^:[0-9]+$ && "${ttl#:}" -gt 0 ]] || fail "$name: $key on port $port has no lease (PTTL $ttl)"
    log "   held: $key on port $port (hash, PTTL ${ttl#:} ms)"
  done

  touch "$WORK/release"
  rc=0
  wait "$APP_PID" || rc=$?
  APP_PID=""
  [[ $rc -eq 0 ]] || fail "$name: the application exited with $rc"
  grep -q "^SMOKE released $key " "$WORK/app-$name.log" || fail "$name: the application reported no release"
  grep "^SMOKE virtual-threads " "$WORK/app-$name.log" | sed 's/^SMOKE /starter-smoke:    /' || true
  grep -q "^SMOKE done" "$WORK/app-$name.log" || fail "$name: the application did not finish its checks"
  for port in "${CHECK_PORTS[@]}"; do
    for _ in $(seq 1 50); do
      [[ "$(redis_at "$port" DBSIZE)" == ":0" ]] && break
      sleep 0.1
    done
    [[ "$(redis_at "$port" DBSIZE)" == ":0" ]] || fail "$name: keys left on port $port: DBSIZE $(redis_at "$port" DBSIZE)"
  done
  log "   released: nothing left on port(s) ${CHECK_PORTS[*]}"
  step_done "the $name run"
}

log "4a. the README's application.yml, spring.data.redis.host/port pointed at the master"
CHECK_PORTS=("$MASTER_PORT")
run_app plain --spring.data.redis.host=127.0.0.1 --spring.data.redis.port="$MASTER_PORT"

if [[ $TLS == 1 ]]; then
  log "4b. + the README's SSL YAML: its bundle's files and host/port pointed at the TLS port"
  CHECK_PORTS=("$MASTER_PORT")
  run_app ssl --spring.config.additional-location="file:$WORK/ssl.yml" \
    --spring.data.redis.host=127.0.0.1 --spring.data.redis.port="$MASTER_TLS_PORT" \
    --spring.ssl.bundle.pem.redis.truststore.certificate="file:$WORK/ca.pem" \
    --spring.ssl.bundle.pem.redis.keystore.certificate="file:$WORK/client.pem" \
    --spring.ssl.bundle.pem.redis.keystore.private-key="file:$WORK/client-key.pem" \
    --smoke.virtual-threads=false
fi

log "4c. + the README's master/replica YAML: its nodes pointed at the replica first, then the master"
CHECK_PORTS=("$MASTER_PORT" "$REPLICA_PORT")
run_app masterreplica --spring.config.additional-location="file:$WORK/masterreplica.yml" \
  --spring.data.redis.masterreplica.nodes="127.0.0.1:$REPLICA_PORT,127.0.0.1:$MASTER_PORT" \
  --smoke.virtual-threads=false
grep -q "127.0.0.1:$MASTER_PORT is the master" "$WORK/app-masterreplica.log" \
  || fail "masterreplica: Redisson did not report 127.0.0.1:$MASTER_PORT as the master"
log "   Redisson found the master among the nodes: $(grep -o "redis://127.0.0.1:$MASTER_PORT is the master" \
  "$WORK/app-masterreplica.log" | head -n 1)"

log "$RUN runs of the application passed"
