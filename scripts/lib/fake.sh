# Sourced by the scripts that point tests at kwire-fake instead of Apache Kafka (broker-sweep.sh
# --fake, client-on-fake.sh): the fake's binary set up as scripts/kafka.sh sets
# up a broker (PLAINTEXT and SASL_PLAINTEXT listeners, PLAIN users admin and alice, SCRAM user
# alice, ACLs with ANONYMOUS and admin as super users, a delegation-token secret, no topic
# auto-creation, no initial rebalance delay), and an env file the tests read as they read a
# broker's.
#
#   fake_start RELEASE DIR [JARS]   starts the workspace build's kwire-fake imitating RELEASE
#                                   (2.8, 3.9, 4.0, 4.4), its output and DIR/env in DIR (emptied
#                                   first); JARS names the Kafka release whose jars the tests'
#                                   Java programs use (KAFKA_LIB), none without it; `fake_pid`
#                                   is its PID; fails (its stderr shown) if it did not start
#   fake_stop                       stops it (the caller's exit trap calls it too)

fake_pid=""

fake_start() {
  local release=$1 dir=$2 jars=${3-} bin=${CARGO_TARGET_DIR:-target}/debug/kwire-fake
  [ -x "$bin" ] || { echo "no $bin: the workspace build makes it" >&2; return 1; }
  rm -rf "$dir"
  mkdir -p "$dir"
  "$bin" --listen 127.0.0.1:0 --sasl-listen 127.0.0.1:0 --as-version "$release" --no-auto-create --group-initial-rebalance-delay-ms 0 \
    --sasl-plain admin:admin-secret --sasl-plain alice:alice-secret --sasl-scram alice:alice-secret \
    --acl-authorizer --super-user User:ANONYMOUS --super-user User:admin \
    --delegation-token-secret kwire-test-token-secret >"$dir/stdout" 2>"$dir/stderr" &
  fake_pid=$!
  for _ in $(seq 100); do
    grep -q "^listening on" "$dir/stdout" 2>/dev/null && break
    kill -0 "$fake_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q "^listening on" "$dir/stdout"; then
    cat "$dir/stderr" >&2
    fake_stop
    return 1
  fi
  local plain sasl lib=""
  plain=$(sed -n 's/^listening on //p' "$dir/stdout" | cut -d, -f1)
  sasl=$(sed -n 's/^sasl_plaintext on //p' "$dir/stdout" | cut -d, -f1)
  [ -z "$jars" ] || lib=$(scripts/kafka.sh classpath "$jars" 2>/dev/null | tail -1)
  {
    echo "KAFKA_VERSION=${jars:-$release}"
    echo "KWIRE_FAKE=1"
    echo "KAFKA_NODES=1"
    echo "PLAINTEXT=$plain"
    echo "SASL_PLAINTEXT=$sasl"
    echo "SASL_PLAIN_USERS=admin:admin-secret,alice:alice-secret"
    echo "SASL_SCRAM_USERS=alice:alice-secret"
    echo "BOOTSTRAP=$plain"
    [ -z "$lib" ] || echo "KAFKA_LIB=$lib"
  } >"$dir/env"
}

fake_stop() {
  [ -n "$fake_pid" ] || return 0
  kill "$fake_pid" 2>/dev/null || true
  wait "$fake_pid" 2>/dev/null || true
  fake_pid=""
}
