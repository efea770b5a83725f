#!/usr/bin/env bash
# Smoke test of the README's "run the sample" command: starts the sample with it (no Redis configured, so it must
# start its embedded redis-server), waits until it serves HTTP, places one order, checks it, and stops everything.
#
# Usage (from anywhere):  sample-app/smoke.sh
# Env: SMOKE_TIMEOUT  seconds to wait for startup, default 180 (a cold build downloads and compiles first)
#      MVN_ARGS       extra Maven arguments, e.g. "-o" or "-Dmaven.repo.local=/tmp/m2"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TIMEOUT="${SMOKE_TIMEOUT:-180}"
LOG="$(mktemp -t distlock-smoke.XXXXXX.log)"
APP_PID=""

cleanup() {
  local rc=$?
  if [[ -n "$APP_PID" ]] && kill -0 "$APP_PID" 2>/dev/null; then
    # the whole process group: Maven and the application JVM it forked (which stops its redis-server)
    kill -TERM -- "-$APP_PID" 2>/dev/null || true
    for _ in $(seq 1 30); do
      kill -0 -- "-$APP_PID" 2>/dev/null || break
      sleep 1
    done
    kill -KILL -- "-$APP_PID" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 ]]; then
    echo "--- last 40 lines of $LOG ---" >&2
    tail -n 40 "$LOG" >&2 || true
  fi
  exit $rc
}
trap cleanup EXIT INT TERM

cd "$ROOT"
# The README command, with port 0 so parallel runs never collide; the chosen port is read from the log.
# setsid puts Maven and its forked JVM in a process group of their own, so cleanup can stop both.
# shellcheck disable=SC2086
setsid ./mvnw -B ${MVN_ARGS:-} -pl sample-app -am spring-boot:run \
  -Dspring-boot.run.arguments=--server.port=0 >"$LOG" 2>&1 &
APP_PID=$!
echo "smoke: started the sample (pid $APP_PID), log $LOG"

PORT=""
deadline=$((SECONDS + TIMEOUT))
while [[ -z "$PORT" ]]; do
  if (( SECONDS >= deadline )); then
    echo "smoke: FAIL: the sample did not start within ${TIMEOUT}s" >&2
    exit 1
  fi
  if ! kill -0 "$APP_PID" 2>/dev/null; then
    echo "smoke: FAIL: the run command exited before the sample started" >&2
    exit 1
  fi
  PORT="$(sed -n 's/.*Tomcat started on port \([0-9][0-9]*\).*/\1/p' "$LOG" | head -n 1)"
  [[ -n "$PORT" ]] || sleep 1
done
grep -q "No Redis configured: started embedded redis-server" "$LOG" \
  || { echo "smoke: FAIL: no embedded redis-server was started" >&2; exit 1; }

BASE="http://127.0.0.1:$PORT"
echo "smoke: sample up on $BASE after ${SECONDS}s"
product="$(curl -sS --max-time 10 -H 'Content-Type: application/json' \
  -d '{"name":"smoke test item","stock":5}' "$BASE/api/products")"
product_id="$(sed -n 's/^{"id":\([0-9][0-9]*\),.*/\1/p' <<<"$product")"
[[ -n "$product_id" ]] || { echo "smoke: FAIL: could not create a product: $product" >&2; exit 1; }

status="$(curl -sS --max-time 30 -o /tmp/smoke-order.$$ -w '%{http_code}' -H 'Content-Type: application/json' \
  -d "{\"userId\":1,\"productId\":$product_id,\"quantity\":2}" "$BASE/api/orders")"
body="$(cat /tmp/smoke-order.$$)"; rm -f /tmp/smoke-order.$$
[[ "$status" == 201 ]] || { echo "smoke: FAIL: order answered $status: $body" >&2; exit 1; }

after="$(curl -sS --max-time 10 "$BASE/api/products/$product_id")"
grep -q '"stock":3,"sold":2' <<<"$after" || { echo "smoke: FAIL: unexpected product state: $after" >&2; exit 1; }
echo "smoke: OK: order placed ($body); product now $after"
