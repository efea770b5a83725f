#!/usr/bin/env bash
# Takes the screenshot of the dashboard in the sample's README (sample-app/docs/dashboard.png): starts the sample as
# "Run it" does (embedded redis-server, port 0), runs a flash sale with locks and one without through the dashboard's
# JSON API, opens the dashboard in headless Chromium (which draws the latest sales on opening) and saves what it shows.
# Not part of the build or CI.
#
# Usage (from anywhere):  sample-app/screenshot.sh [output.png]
# Needs:  chromium (Debian: apt-get install -y chromium), curl
# Env:    SHOT_TIMEOUT  seconds to wait for startup, default 180
#         MVN_ARGS      extra Maven arguments, e.g. "-o"
#         STOCK, BUYERS the sale's items and buyers, default 5 and 30 (the dashboard's defaults)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/sample-app/docs/dashboard.png}"
TIMEOUT="${SHOT_TIMEOUT:-180}"
STOCK="${STOCK:-5}"
BUYERS="${BUYERS:-30}"
CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
[[ -n "$CHROMIUM" ]] || { echo "screenshot: chromium not found (Debian: apt-get install -y chromium)" >&2; exit 1; }
LOG="$(mktemp -t distlock-screenshot.XXXXXX.log)"
PROFILE="$(mktemp -d -t distlock-chromium.XXXXXX)"
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
  rm -rf "$PROFILE"
  if [[ $rc -ne 0 ]]; then
    echo "--- last 40 lines of $LOG ---" >&2
    tail -n 40 "$LOG" >&2 || true
  fi
  exit $rc
}
trap cleanup EXIT INT TERM

cd "$ROOT"
# setsid: Maven and its forked JVM in a process group of their own, so cleanup can stop both
# shellcheck disable=SC2086
setsid ./mvnw -B ${MVN_ARGS:-} -q -pl sample-app -am spring-boot:run \
  -Dspring-boot.run.arguments=--server.port=0 >"$LOG" 2>&1 &
APP_PID=$!
echo "screenshot: started the sample (pid $APP_PID), log $LOG"

PORT=""
deadline=$((SECONDS + TIMEOUT))
while [[ -z "$PORT" ]]; do
  if (( SECONDS >= deadline )); then
    echo "screenshot: FAIL: the sample did not start within ${TIMEOUT}s" >&2
    exit 1
  fi
  kill -0 "$APP_PID" 2>/dev/null || { echo "screenshot: FAIL: the sample exited before it started" >&2; exit 1; }
  PORT="$(sed -n 's/.*Tomcat started on port \([0-9][0-9]*\).*/\1/p' "$LOG" | head -n 1)"
  [[ -n "$PORT" ]] || sleep 1
done
BASE="http://127.0.0.1:$PORT"
echo "screenshot: sample up on $BASE"

# a first pair of sales warms the JVM up (a fresh one takes seconds over its first sale); the page shows the latest
for mode in locked unsafe; do
  curl -sS --fail --max-time 120 -o /dev/null -X POST "$BASE/api/demo/flash-sale?mode=$mode&stock=$STOCK&buyers=$BUYERS"
done
for mode in locked unsafe; do
  result="$(curl -sS --fail --max-time 120 -X POST "$BASE/api/demo/flash-sale?mode=$mode&stock=$STOCK&buyers=$BUYERS")"
  echo "screenshot: $mode sale: $(sed 's/,"timeline".*//' <<<"$result")}"
done

mkdir -p "$(dirname "$OUT")"
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$PROFILE" \
  --screenshot="$OUT" --window-size=1280,900 --virtual-time-budget=5000 "$BASE/" >>"$LOG" 2>&1
[[ -s "$OUT" ]] || { echo "screenshot: FAIL: chromium wrote no $OUT" >&2; exit 1; }
echo "screenshot: saved $OUT"
