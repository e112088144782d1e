#!/usr/bin/env bash
# A real Apache Kafka broker for the tests, resolved from Maven Central (no tarball downloads).
#
#   scripts/kafka.sh classpath VERSION          resolve the broker's jars into target/kafka/cache/VERSION/lib
#   scripts/kafka.sh start VERSION [--nodes 3]  format KRaft storage and start; prints the env file
#   scripts/kafka.sh status VERSION [--nodes 3] exit 0 if every process is alive
#   scripts/kafka.sh stop VERSION [--nodes 3]   SIGTERM each PID, bounded wait, then SIGKILL
#   scripts/kafka.sh restart-node VERSION --nodes 3 --node N
#                                               SIGKILL node N if alive, start it again on its
#                                               ports and storage, wait until it answers
#
# One node: a combined broker+controller on loopback, free ports, listeners PLAINTEXT,
# SASL_PLAINTEXT (PLAIN users admin/alice; SCRAM-SHA-256/512 user alice created at format time)
# and SSL (a CA and broker certificate made here with openssl; client certificates requested,
# not required: one signed by the CA makes its subject the principal, e.g. User:CN=me), the StandardAuthorizer with
# ANONYMOUS (PLAINTEXT, SSL) and admin as super users, so ACLs apply to SASL users only.
# SASL_SSL: the SASL users over TLS with the same certificate.
# Two SASL_PLAINTEXT listeners for OAUTHBEARER: OAUTH checks RS256 JWTs with Kafka's OIDC
# validator against a JWKS file made here (an RSA key the tests sign with; a second key the JWKS
# does not hold, for refused signatures), sessions of 3 s (connections.max.reauth.ms) so tests see
# re-authentication; OAUTH_UNSECURED takes the unsecured JWS tokens (alg none) of development
# setups. The tokens' principal kwire-oauth is a super user.
# Three nodes: three combined processes, PLAINTEXT only, small heaps; node N in rack rack-N, with
# the rack-aware replica selector (KIP-392).
#
# Addresses go to target/kafka/<VERSION>[-cluster]/env (KEY=VALUE lines, also printed; KAFKA_LIB
# the broker's jars, KAFKA_TOOLS the kafka-tools jar beside them), logs to
# logs/ beside it; they are kept after stop. Override the java binary with KWIRE_JAVA.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() { echo "usage: $0 classpath|start|status|stop|restart-node VERSION [--nodes 1|3] [--node N]" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 version=$2
shift 2
nodes=1 node=
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=${2:?}; shift 2 ;;
    --node) node=${2:?}; shift 2 ;;
    *) usage ;;
  esac
done
case $nodes in 1|3) ;; *) usage ;; esac

base=${KWIRE_KAFKA_DIR:-$root/target/kafka}
lib=$base/cache/$version/lib
if [ "$nodes" = 1 ]; then dir=$base/$version; else dir=$base/$version-cluster; fi
java=${KWIRE_JAVA:-java}
START_TIMEOUT=${KWIRE_START_TIMEOUT:-120}
STOP_TIMEOUT=30

log() { echo "kafka.sh: $*" >&2; }

# OAUTHBEARER: what the OAUTH listener expects of a token (written to the env file too).
OAUTH_KID=kwire-test-1
OAUTH_ISSUER=https://kwire.test/issuer
OAUTH_AUDIENCE=kwire-test
OAUTH_PRINCIPAL=kwire-oauth
OAUTH_REAUTH_MS=3000

classpath() {
  [ -f "$lib/.complete" ] && return 0
  local profile=log4j2
  case $version in 0.*|1.*|2.*|3.*) profile=log4j1 ;; esac
  mkdir -p "$base/cache"
  log "resolving org.apache.kafka:kafka_2.13:$version from Maven Central into $lib"
  rm -rf "$lib"
  if ! timeout 1200 mvn -B -q -f "$root/scripts/kafka/pom.xml" -Dkafka.version="$version" -P "$profile" \
      dependency:copy-dependencies -DoutputDirectory="$lib" >"$base/cache/mvn-$version.log" 2>&1; then
    tail -20 "$base/cache/mvn-$version.log" >&2
    log "could not resolve Kafka $version (log: $base/cache/mvn-$version.log)"
    exit 1
  fi
  touch "$lib/.complete"
}

# Kafka's command-line tools (kafka-tools: ConsumerGroupCommand, TopicCommand, ...), which the
# broker's classpath lacks, beside it: the jar alone, its dependencies being the broker's. For
# tests that compare with Kafka's tools (cli/tests/broker_cli.rs): `java -cp "$KAFKA_LIB/*:$KAFKA_TOOLS/*"`.
# Not fatal: a broker starts without it, and the env file then has no KAFKA_TOOLS.
tools=$base/cache/$version/tools
tools_classpath() {
  [ -f "$tools/.complete" ] && return 0
  log "resolving org.apache.kafka:kafka-tools:$version from Maven Central into $tools"
  rm -rf "$tools"
  if timeout 600 mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
      -Dartifact="org.apache.kafka:kafka-tools:$version" -DoutputDirectory="$tools" >"$base/cache/mvn-tools-$version.log" 2>&1; then
    touch "$tools/.complete"
  else
    log "could not resolve kafka-tools $version (log: $base/cache/mvn-tools-$version.log)"
  fi
}

# The client telemetry receiver (KIP-714; scripts/kafka/TelemetryReceiver.java), compiled against
# this version's jars into the cache, for `metric.reporters`: with it the broker advertises
# GetTelemetrySubscriptions and PushTelemetry, and writes what clients push to TELEMETRY_LOG.
telemetry=$base/cache/$version/telemetry
telemetry_receiver() {
  local src=$root/scripts/kafka/TelemetryReceiver.java
  [ "$telemetry/TelemetryReceiver.class" -nt "$src" ] && return 0
  rm -rf "$telemetry"
  mkdir -p "$telemetry"
  if ! javac -nowarn -cp "$lib/*" -d "$telemetry" "$src" >"$base/cache/javac-telemetry-$version.log" 2>&1; then
    cat "$base/cache/javac-telemetry-$version.log" >&2
    log "could not compile $src against Kafka $version"
    exit 1
  fi
}

# N free loopback ports, all bound at once so they differ.
free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# True once the broker at $1 answers ApiVersions v0 with correlation id 1 and no error.
answers_api_versions() {
  python3 - "$1" <<'EOF'
import socket, struct, sys
host, port = sys.argv[1].rsplit(":", 1)
try:
    s = socket.create_connection((host, int(port)), timeout=3)
    # size, api key 18, version 0, correlation id 1, null client id
    s.sendall(struct.pack(">ihhih", 10, 18, 0, 1, -1))
    data = b""
    while len(data) < 10:
        chunk = s.recv(10 - len(data))
        if not chunk:
            break
        data += chunk
    _, corr, err = struct.unpack(">iih", data)
    sys.exit(0 if corr == 1 and err == 0 else 1)
except Exception:
    sys.exit(1)
EOF
}

pids() { cat "$dir"/node*/pid 2>/dev/null || true; }

alive() {
  local any=0 pid
  for pid in $(pids); do
    kill -0 "$pid" 2>/dev/null || return 1
    any=1
  done
  [ $any = 1 ]
}

stop() {
  local pid
  for pid in $(pids); do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $(pids); do
    for _ in $(seq $((STOP_TIMEOUT * 5))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then log "pid $pid still alive after ${STOP_TIMEOUT}s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  done
  rm -f "$dir"/node*/pid
}

# The OIDC validator's keys: an RSA signing key (PKCS#1 PEM, as JWT libraries read it) and its
# public half as a JWKS file, which the broker reads through a file: URL; a second key to sign
# tokens the broker must refuse.
make_oauth_keys() {
  local o=$dir/oauth
  mkdir -p "$o"
  openssl genrsa -traditional -out "$o/signing.key" 2048 2>/dev/null
  openssl genrsa -traditional -out "$o/other.key" 2048 2>/dev/null
  openssl rsa -in "$o/signing.key" -noout -modulus | python3 -c '
import base64, json, sys
n = bytes.fromhex(sys.stdin.read().strip().split("=", 1)[1])
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
key = {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": sys.argv[1], "n": b64(n), "e": b64((65537).to_bytes(3, "big"))}
print(json.dumps({"keys": [key]}))
' "$OAUTH_KID" >"$o/jwks.json"
}

make_certs() {
  local c=$dir/certs
  mkdir -p "$c"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kwire-test-ca \
    -keyout "$c/ca.key" -out "$c/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$c/broker.key" -out "$c/broker.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$c/ext.cnf"
  openssl x509 -req -days 2 -in "$c/broker.csr" -CA "$c/ca.pem" -CAkey "$c/ca.key" -CAcreateserial \
    -extfile "$c/ext.cnf" -out "$c/broker.pem" 2>/dev/null
  openssl pkcs12 -export -in "$c/broker.pem" -inkey "$c/broker.key" -certfile "$c/ca.pem" -name broker \
    -passout pass:kwire -out "$c/broker.p12"
}

# node_config NODE_ID NODE_DIR LISTENERS ADVERTISED PROTOCOL_MAP VOTERS
node_config() {
  local id=$1 nd=$2
  cat <<EOF
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$6
listeners=$3
advertised.listeners=$4
listener.security.protocol.map=$5
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$nd/data
num.partitions=1
auto.create.topics.enable=false
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
offsets.topic.num.partitions=3
offsets.topic.replication.factor=$nodes
transaction.state.log.num.partitions=3
transaction.state.log.replication.factor=$nodes
transaction.state.log.min.isr=1
# Timed-out transactions aborted within a second, not ten (the client's transaction timeout test).
transaction.abort.timed.out.transaction.cleanup.interval.ms=500
share.coordinator.state.topic.replication.factor=$nodes
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=3
# KIP-848 groups: seconds rather than 45 s sessions and 5 s heartbeats, so the consumer tests
# see a crashed member replaced quickly (the classic protocol's are the client's to set).
group.consumer.min.session.timeout.ms=3000
group.consumer.session.timeout.ms=8000
group.consumer.min.heartbeat.interval.ms=500
group.consumer.heartbeat.interval.ms=1000
metric.reporters=TelemetryReceiver
kwire.telemetry.file=$dir/telemetry.log
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS;User:admin;User:$OAUTH_PRINCIPAL
EOF
  # KIP-848's consumer protocol: advertised by 3.9 but off by default there (on from 4.0).
  case $version in 3.*) echo "group.coordinator.rebalance.protocols=classic,consumer" ;; esac
  # KIP-932 share groups (4.x): seconds-long sessions, heartbeats and record locks (the share consumer tests).
  case $version in 4.*) printf '%s\n' group.share.min.session.timeout.ms=3000 group.share.session.timeout.ms=8000 \
    group.share.min.heartbeat.interval.ms=500 group.share.heartbeat.interval.ms=1000 group.share.min.record.lock.duration.ms=1000 ;; esac
}

log_config() {
  local nd=$1
  cat >"$nd/log4j.properties" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$nd/logs/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
  cat >"$nd/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$nd/logs/server.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
EOF
}

start() {
  if alive; then log "already running"; cat "$dir/env"; return 0; fi
  stop
  classpath
  tools_classpath
  telemetry_receiver
  local cp="$lib/*" heap="-Xms256m -Xmx768m"
  [ "$nodes" = 3 ] && heap="-Xms128m -Xmx384m"
  rm -rf "$dir"
  mkdir -p "$dir"
  local cluster_id
  cluster_id=$("$java" -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
  local ports
  # Four per node (PLAINTEXT, SASL_PLAINTEXT, SSL, CONTROLLER), then OAUTH, OAUTH_UNSECURED and
  # SASL_SSL for a single node.
  read -r -a ports <<<"$(free_ports $((nodes * 4 + (nodes == 1 ? 3 : 0))))"
  local voters="" i
  for i in $(seq "$nodes"); do voters+="${voters:+,}$i@127.0.0.1:${ports[$(((i - 1) * 4 + 3))]}"; done
  {
    echo "KAFKA_VERSION=$version"
    echo "KAFKA_CLUSTER_ID=$cluster_id"
    echo "KAFKA_NODES=$nodes"
  } >"$dir/env.tmp"
  local bootstrap=""
  for i in $(seq "$nodes"); do
    local nd=$dir/node$i p0=${ports[$(((i - 1) * 4))]} p1=${ports[$(((i - 1) * 4 + 1))]}
    local p2=${ports[$(((i - 1) * 4 + 2))]} pc=${ports[$(((i - 1) * 4 + 3))]}
    mkdir -p "$nd/logs"
    log_config "$nd"
    local format_args=()
    if [ "$nodes" = 1 ]; then
      local po=${ports[4]} pu=${ports[5]} ps=${ports[6]}
      make_certs
      make_oauth_keys
      node_config 1 "$nd" \
        "PLAINTEXT://127.0.0.1:$p0,SASL_PLAINTEXT://127.0.0.1:$p1,SSL://127.0.0.1:$p2,CONTROLLER://127.0.0.1:$pc,OAUTH://127.0.0.1:$po,OAUTH_UNSECURED://127.0.0.1:$pu,SASL_SSL://127.0.0.1:$ps" \
        "PLAINTEXT://127.0.0.1:$p0,SASL_PLAINTEXT://127.0.0.1:$p1,SSL://127.0.0.1:$p2,OAUTH://127.0.0.1:$po,OAUTH_UNSECURED://127.0.0.1:$pu,SASL_SSL://127.0.0.1:$ps" \
        "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT,OAUTH:SASL_PLAINTEXT,OAUTH_UNSECURED:SASL_PLAINTEXT,SASL_SSL:SASL_SSL" \
        "$voters" >"$nd/server.properties"
      cat >>"$nd/server.properties" <<EOF
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PKCS12
ssl.keystore.location=$dir/certs/broker.p12
ssl.keystore.password=kwire
ssl.key.password=kwire
ssl.truststore.type=PEM
ssl.truststore.location=$dir/certs/ca.pem
ssl.client.auth=requested
delegation.token.secret.key=kwire-test-token-secret
listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.oauth.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="kwire-broker";
listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
listener.name.oauth.oauthbearer.connections.max.reauth.ms=$OAUTH_REAUTH_MS
sasl.oauthbearer.jwks.endpoint.url=file://$dir/oauth/jwks.json
sasl.oauthbearer.expected.audience=$OAUTH_AUDIENCE
sasl.oauthbearer.expected.issuer=$OAUTH_ISSUER
listener.name.oauth_unsecured.sasl.enabled.mechanisms=OAUTHBEARER
listener.name.oauth_unsecured.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="kwire-broker";
EOF
      format_args=(--add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'
        --add-scram 'SCRAM-SHA-512=[name=alice,password=alice-secret]')
      {
        echo "PLAINTEXT=127.0.0.1:$p0"
        echo "SASL_PLAINTEXT=127.0.0.1:$p1"
        echo "SSL=127.0.0.1:$p2"
        echo "SASL_SSL=127.0.0.1:$ps"
        echo "CONTROLLER=127.0.0.1:$pc"
        echo "SSL_CA=$dir/certs/ca.pem"
        echo "SASL_PLAIN_USERS=admin:admin-secret,alice:alice-secret"
        echo "SASL_SCRAM_USERS=alice:alice-secret"
        echo "OAUTH=127.0.0.1:$po"
        echo "OAUTH_UNSECURED=127.0.0.1:$pu"
        echo "OAUTH_JWKS_KEY=$dir/oauth/signing.key"
        echo "OAUTH_JWKS_KID=$OAUTH_KID"
        echo "OAUTH_OTHER_KEY=$dir/oauth/other.key"
        echo "OAUTH_ISSUER=$OAUTH_ISSUER"
        echo "OAUTH_AUDIENCE=$OAUTH_AUDIENCE"
        echo "OAUTH_PRINCIPAL=$OAUTH_PRINCIPAL"
        echo "OAUTH_REAUTH_MS=$OAUTH_REAUTH_MS"
      } >>"$dir/env.tmp"
    else
      node_config "$i" "$nd" "PLAINTEXT://127.0.0.1:$p0,CONTROLLER://127.0.0.1:$pc" "PLAINTEXT://127.0.0.1:$p0" \
        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT" "$voters" >"$nd/server.properties"
      # A rack per node, and followers serving consumers in their rack (KIP-392; clients
      # without a rack still fetch from leaders).
      cat >>"$nd/server.properties" <<EOF
broker.rack=rack-$i
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector
EOF
      echo "NODE${i}_PLAINTEXT=127.0.0.1:$p0" >>"$dir/env.tmp"
      echo "NODE${i}_RACK=rack-$i" >>"$dir/env.tmp"
    fi
    bootstrap+="${bootstrap:+,}127.0.0.1:$p0"
    if ! "$java" -cp "$cp" -Dlog4j.configuration="file:$nd/log4j.properties" -Dlog4j2.configurationFile="$nd/log4j2.properties" \
        kafka.tools.StorageTool format -t "$cluster_id" -c "$nd/server.properties" "${format_args[@]}" \
        >"$nd/logs/format.log" 2>&1; then
      cat "$nd/logs/format.log" >&2
      log "storage format failed (logs kept in $nd/logs)"
      exit 1
    fi
  done
  echo "BOOTSTRAP=$bootstrap" >>"$dir/env.tmp"
  for i in $(seq "$nodes"); do
    launch "$i"
    echo "NODE${i}_PID=$(cat "$dir/node$i/pid")" >>"$dir/env.tmp"
  done
  echo "KAFKA_LOGS=$dir" >>"$dir/env.tmp"
  echo "KAFKA_LIB=$lib" >>"$dir/env.tmp"
  echo "TELEMETRY_LOG=$dir/telemetry.log" >>"$dir/env.tmp"
  [ ! -f "$tools/.complete" ] || echo "KAFKA_TOOLS=$tools" >>"$dir/env.tmp"
  local deadline=$((SECONDS + START_TIMEOUT)) addr n=0
  for addr in ${bootstrap//,/ }; do
    n=$((n + 1))
    until answers_api_versions "$addr" && grep -qs "Kafka Server started" "$dir/node$n/logs/server.log"; do
      if ! alive || [ $SECONDS -ge $deadline ]; then
        alive && log "no ApiVersions answer from $addr within ${START_TIMEOUT}s" || log "a broker process exited"
        stop
        tail -30 "$dir"/node*/logs/server.log "$dir"/node*/logs/stdout.log >&2 || true
        log "logs kept in $dir"
        exit 1
      fi
      sleep 0.5
    done
  done
  mv "$dir/env.tmp" "$dir/env"
  log "Kafka $version up in $((SECONDS))s ($nodes node(s)); env in $dir/env"
  cat "$dir/env"
}

# launch N: starts node N's process (its config and storage already made); PID in node N/pid.
launch() {
  local nd=$dir/node$1 cp="$lib/*:$telemetry" heap="-Xms256m -Xmx768m"
  [ "$nodes" = 3 ] && heap="-Xms128m -Xmx384m"
  # -XX:TieredStopAtLevel=1 and SerialGC: a quicker start and less CPU on a small shared machine.
  # The OIDC validator reads its JWKS only from URLs and files these properties allow (Kafka 4
  # allows none by default).
  local jwks=$dir/oauth/jwks.json
  # shellcheck disable=SC2086
  nohup "$java" $heap -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls="file://$jwks" -Dorg.apache.kafka.sasl.oauthbearer.allowed.files="$jwks" \
    -Dlog4j.configuration="file:$nd/log4j.properties" -Dlog4j2.configurationFile="$nd/log4j2.properties" \
    -Dkafka.logs.dir="$nd/logs" -cp "$cp" kafka.Kafka "$nd/server.properties" \
    >>"$nd/logs/stdout.log" 2>&1 </dev/null &
  echo $! >"$nd/pid"
}

# For tests that kill a broker under load: SIGKILL node N (no clean shutdown), start it again.
restart_node() {
  [ -n "$node" ] && [ -f "$dir/node$node/server.properties" ] || usage
  local pid addr
  pid=$(cat "$dir/node$node/pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  addr=$(sed -n "s/^NODE${node}_PLAINTEXT=//p" "$dir/env")
  [ -n "$addr" ] || addr=$(sed -n "s/^PLAINTEXT=//p" "$dir/env")
  launch "$node"
  sed -i "s/^NODE${node}_PID=.*/NODE${node}_PID=$(cat "$dir/node$node/pid")/" "$dir/env"
  local deadline=$((SECONDS + START_TIMEOUT))
  until answers_api_versions "$addr"; do
    if [ $SECONDS -ge $deadline ] || ! kill -0 "$(cat "$dir/node$node/pid")" 2>/dev/null; then
      tail -30 "$dir/node$node/logs/server.log" >&2 || true
      log "node $node did not come back within ${START_TIMEOUT}s"
      exit 1
    fi
    sleep 0.5
  done
  log "node $node restarted ($addr, pid $(cat "$dir/node$node/pid"))"
}

case $cmd in
  classpath) classpath; echo "$lib" ;;
  restart-node) restart_node ;;
  start) start ;;
  status)
    if alive; then cat "$dir/env"; else log "Kafka $version ($nodes node(s)) is not running"; exit 1; fi ;;
  stop) stop; log "stopped (logs in $dir)" ;;
  *) usage ;;
esac
