#!/usr/bin/env bash
# Fires a flash sale at a running sample app, once through the locked endpoint and once through the unsafe one:
#   50 concurrent submits of the same order by one user, and 200 buyers for 100 items.
#
# Usage: sample-app/demo.sh [base-url]        (default http://localhost:8080)
# Start the app first:  ./mvnw -pl sample-app -am spring-boot:run
set -euo pipefail

BASE="${1:-http://localhost:8080}"
DUPLICATES=50
BUYERS=200
STOCK=100
RUN=$(( $(date +%s) % 100000 * 1000 ))   # user ids of this run, so the demo can be repeated

curl -fsS --max-time 5 -o /dev/null "$BASE/api/products/1" \
  || { echo "No sample app at $BASE: start it with ./mvnw -pl sample-app -am spring-boot:run" >&2; exit 1; }

new_product() { # name stock -> id
  curl -fsS --max-time 10 -H 'Content-Type: application/json' -d "{\"name\":\"$1\",\"stock\":$2}" "$BASE/api/products" \
    | sed -n 's/^{"id":\([0-9][0-9]*\),.*/\1/p'
}

field() { # product-id field -> value
  curl -fsS --max-time 10 "$BASE/api/products/$1" | sed -n "s/.*\"$2\":\([0-9-][0-9]*\).*/\1/p"
}

# Prints one HTTP status per request; all of them in flight at once (xargs -P).
fire() { # path product-id "user-ids..."
  local path=$1 product=$2
  tr ' ' '\n' <<<"$3" | xargs -P 200 -I{} curl -sS --max-time 60 -o /dev/null -w '%{http_code}\n' \
    -H 'Content-Type: application/json' -d "{\"userId\":{},\"productId\":$product,\"quantity\":1}" "$BASE$path"
}

scenario() { # label path
  local label=$1 path=$2 product statuses created sold stock
  echo "== $label ($path)"

  product=$(new_product "double-click test" 1000)
  statuses=$(fire "$path" "$product" "$(printf "$((RUN + 1)) %.0s" $(seq $DUPLICATES))")
  created=$(grep -c '^201$' <<<"$statuses" || true)
  sold=$(field "$product" sold)
  echo "   $DUPLICATES concurrent submits by one user: $sold order(s), $((DUPLICATES - created)) rejected" \
       "(HTTP: $(sort <<<"$statuses" | uniq -c | awk '{printf "%s x%s ", $2, $1}'))"

  product=$(new_product "flash-sale item" $STOCK)
  statuses=$(fire "$path" "$product" "$(seq -s ' ' $((RUN + 100)) $((RUN + 99 + BUYERS)))")
  sold=$(field "$product" sold)
  stock=$(field "$product" stock)
  echo "   $BUYERS buyers for $STOCK items: $sold sold, $((sold > STOCK ? sold - STOCK : 0)) oversold, $stock left in stock" \
       "(HTTP: $(sort <<<"$statuses" | uniq -c | awk '{printf "%s x%s ", $2, $1}'))"
  RUN=$((RUN + 100000))
}

scenario "With distlock" /api/orders
scenario "Unsafe: same code, no lock" /api/unsafe/orders
