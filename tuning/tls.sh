# shellcheck shell=bash
# The TLS mode of tuning/compare.sh (`compare.sh --tls`): one pinlog broker
# and one Kafka 4.4 broker, each with the same four listeners, and the
# same load generator over each:
#
#   PLAINTEXT  the baseline
#   SSL        TLS, an RSA 2048 certificate (what most Kafka shops run)
#   SSLEC      TLS, an EC P-256 certificate
#   SASL_SSL   TLS (RSA) and a SCRAM-SHA-512 login
#
#   T1  produce throughput, acks=1, flat out: pinlog PLAINTEXT, pinlog SSL,
#       Kafka SSL, Kafka PLAINTEXT
#   T2  consume catch-up over one data set (written over PLAINTEXT, read
#       with the page cache and pinlog's read cache warm): the same four
#   T3  connection storms: threads that connect, handshake, send
#       ApiVersions (and log in), and close, over and over; connections
#       per second, the time to a ready connection, and the broker's CPU
#       per connection, on every listener of both brokers
#   CPU every run's broker CPU seconds (user + system) per GB of record
#       values, and per 1,000 connections in T3
#   kTLS whether this kernel offers kernel TLS (the "tls" TCP upper layer),
#       which pinlog would need to send stored bytes without copying them
#       through rustls
#
# Sourced by compare.sh after its plumbing (say, measure, lg, lg_produce,
# admin, create_topic, KCP); writes $OUT. Rounds alternate between the
# brokers (pinlog, Kafka, pinlog, ...).

TLS_DIR="$WORK/tls"; mkdir -p "$TLS_DIR"
KEY_PASSWORD=bench-key-password
SCRAM_USER=bench
SCRAM_PASSWORD=bench-secret
STORM_THREADS=8
if [ "$MODE" = full ]; then STORM_SECS=10; STORM_WARM=2; else STORM_SECS=5; STORM_WARM=1; fi

# ---------------------------------------------------------------- certificates
# A CA and two broker certificates naming 127.0.0.1. pinlog reads a PEM
# keystore with the key encrypted (PKCS#8, PBES2) under ssl.key.password;
# Kafka gets the same key and certificate as a PKCS12 keystore, what Kafka
# shops run (its PEM keystore file needs an encrypted key, and the JDK 17
# here cannot decrypt PBES2).
say "TLS mode: a test CA and broker certificates (RSA 2048 and EC P-256) with openssl"
(
  cd "$TLS_DIR"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout ca.key -out ca.pem -subj "/CN=bench CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
  printf 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > broker.ext
  for kind in rsa ec; do
    if [ $kind = rsa ]; then newkey=(-newkey rsa:2048); else newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); fi
    openssl req "${newkey[@]}" -nodes -keyout "$kind.plain.key" -out "$kind.csr" -subj "/CN=broker-$kind"
    openssl x509 -req -in "$kind.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out "$kind.crt" -extfile broker.ext
    openssl pkcs8 -topk8 -v2 aes-256-cbc -in "$kind.plain.key" -out "$kind.key" -passout "pass:$KEY_PASSWORD"
    cat "$kind.key" "$kind.crt" > "$kind.pem"
    openssl pkcs12 -export -in "$kind.crt" -inkey "$kind.plain.key" -name broker -out "$kind.p12" \
      -passout "pass:$KEY_PASSWORD"
  done
) > "$LOGS/certificates.log" 2>&1 || die "openssl failed: $(tail -5 "$LOGS/certificates.log")"
for kind in ssl sslec; do
  printf 'security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n' "$TLS_DIR/ca.pem" > "$TLS_DIR/$kind.properties"
done
printf 'security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";\n' \
  "$TLS_DIR/ca.pem" "$SCRAM_USER" "$SCRAM_PASSWORD" > "$TLS_DIR/sasl_ssl.properties"
printf 'security.protocol=PLAINTEXT\n' > "$TLS_DIR/plaintext.properties"

# ---------------------------------------------------------------- brokers
LISTENERS=(plaintext ssl sslec sasl_ssl)
declare -A PLT KFT
for l in "${LISTENERS[@]}"; do PLT[$l]=$(free_port); KFT[$l]=$(free_port); done
KFT_CTRL=$(free_port)
listener_list() {  # listener_list ARRAY_NAME: NAME://127.0.0.1:PORT,...
  local -n ports=$1
  printf 'PLAINTEXT://127.0.0.1:%s,SSL://127.0.0.1:%s,SSLEC://127.0.0.1:%s,SASL_SSL://127.0.0.1:%s' \
    "${ports[plaintext]}" "${ports[ssl]}" "${ports[sslec]}" "${ports[sasl_ssl]}"
}

PLT_DIR="$WORK/pinlog-tls"; mkdir -p "$PLT_DIR"
cat > "$PLT_DIR/pinlog.toml" <<TOML
"num.partitions" = $PARTS
"metrics.listen" = "127.0.0.1:$(free_port)"
"group.initial.rebalance.delay.ms" = 0
"listeners" = "$(listener_list PLT)"
"listener.security.protocol.map" = "PLAINTEXT:PLAINTEXT,SSL:SSL,SSLEC:SSL,SASL_SSL:SASL_SSL"
"inter.broker.listener.name" = "PLAINTEXT"
"ssl.keystore.location" = "$TLS_DIR/rsa.pem"
"ssl.key.password" = "$KEY_PASSWORD"
"listener.name.sslec.ssl.keystore.location" = "$TLS_DIR/ec.pem"
"ssl.truststore.location" = "$TLS_DIR/ca.pem"
"sasl.enabled.mechanisms" = "SCRAM-SHA-512"
TOML

KFT_DIR="$WORK/kafka-tls"; mkdir -p "$KFT_DIR"
cat > "$KFT_DIR/server.properties" <<KAFKA
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KFT_CTRL
listeners=$(listener_list KFT),CONTROLLER://127.0.0.1:$KFT_CTRL
advertised.listeners=$(listener_list KFT)
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SSLEC:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
ssl.keystore.type=PKCS12
ssl.keystore.location=$TLS_DIR/rsa.p12
ssl.keystore.password=$KEY_PASSWORD
ssl.key.password=$KEY_PASSWORD
listener.name.sslec.ssl.keystore.type=PKCS12
listener.name.sslec.ssl.keystore.location=$TLS_DIR/ec.p12
listener.name.sslec.ssl.keystore.password=$KEY_PASSWORD
listener.name.sslec.ssl.key.password=$KEY_PASSWORD
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_DIR/ca.pem
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
log.dirs=$KFT_DIR/data
num.partitions=$PARTS
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.segment.delete.delay.ms=1000
KAFKA

say "starting pinlog (2 shards) and Kafka $KAFKA_VERSION (KRaft, -Xmx$KAFKA_HEAP), each with listeners ${LISTENERS[*]}"
"$PINLOG_BIN" serve --data-dir "$PLT_DIR/data" --shards 2 --config "$PLT_DIR/pinlog.toml" \
  >> "$LOGS/pinlog-tls.log" 2>&1 &
PL_PID=$!; PIDS+=("$PL_PID")
KFT_CID=$(java -cp "$KCP" kafka.tools.StorageTool random-uuid 2>>"$LOGS/kafka-tls.log" | tail -1)
java -cp "$KCP" kafka.tools.StorageTool format -t "$KFT_CID" -c "$KFT_DIR/server.properties" \
  >> "$LOGS/kafka-tls.log" 2>&1 || die "kafka-storage format failed: $(tail -5 "$LOGS/kafka-tls.log")"
java "${KAFKA_JVM[@]}" -cp "$KCP" kafka.Kafka "$KFT_DIR/server.properties" >> "$LOGS/kafka-tls.log" 2>&1 &
KF_PID=$!; PIDS+=("$KF_PID")
wait_metadata "127.0.0.1:${PLT[plaintext]}" 30 || die "pinlog did not come up: $(tail -5 "$LOGS/pinlog-tls.log")"
wait_metadata "127.0.0.1:${KFT[plaintext]}" 90 || die "Kafka did not come up: $(tail -5 "$LOGS/kafka-tls.log")"
say "both up (pinlog pid $PL_PID, Kafka pid $KF_PID)"

# The SCRAM user, with Kafka's own tool on each broker's PLAINTEXT listener.
for b in pinlog kafka; do
  if [ $b = pinlog ]; then port=${PLT[plaintext]}; else port=${KFT[plaintext]}; fi
  timeout 120 java -Xmx256m -cp "$KCP" org.apache.kafka.tools.ConfigCommand --bootstrap-server "127.0.0.1:$port" \
    --alter --entity-type users --entity-name "$SCRAM_USER" \
    --add-config "SCRAM-SHA-512=[iterations=4096,password=$SCRAM_PASSWORD]" >> "$LOGS/admin.log" 2>&1 \
    || die "creating the SCRAM user on $b failed: $(tail -3 "$LOGS/admin.log")"
done
sleep 1

# What each broker's SSL listener negotiates with a default client
# (openssl s_client): protocol version and cipher suite.
for b in pinlog kafka; do
  if [ $b = pinlog ]; then port=${PLT[ssl]}; else port=${KFT[ssl]}; fi
  neg=$(timeout 10 openssl s_client -connect "127.0.0.1:$port" -CAfile "$TLS_DIR/ca.pem" </dev/null 2>/dev/null \
    | sed -n 's/^New, \(.*\)$/\1/p' | head -1)
  printf -v "NEGOTIATED_$b" '%s' "${neg:-unknown}"
done
say "negotiated with openssl s_client: pinlog $NEGOTIATED_pinlog; Kafka $NEGOTIATED_kafka"

# tls_target BROKER LISTENER: sets addr, pid and cfg (the client properties).
tls_target() {
  if [ "$1" = pinlog ]; then addr="127.0.0.1:${PLT[$2]}"; pid=$PL_PID; else addr="127.0.0.1:${KFT[$2]}"; pid=$KF_PID; fi
  cfg="$TLS_DIR/$2.properties"
}
# admin_addr BROKER: the broker's PLAINTEXT address, for the Admin client.
admin_addr() { if [ "$1" = pinlog ]; then echo "127.0.0.1:${PLT[plaintext]}"; else echo "127.0.0.1:${KFT[plaintext]}"; fi; }

# The (broker, listener) pairs of T1 and T2, in the order they run.
THROUGHPUT_RUNS=("pinlog plaintext" "pinlog ssl" "kafka ssl" "kafka plaintext")

# ---------------------------------------------------------------- T1
say "T1: produce, acks=1, ${RECORD} B records, $PARTS partitions, ${P1_SECS}s (+${P1_WARM}s warmup), $P1_ROUNDS round(s): ${THROUGHPUT_RUNS[*]}"
say "  warm-up round (not in the results): ${P1_JIT_SECS}s on each broker over SSL"
for b in pinlog kafka; do
  tls_target $b ssl
  create_topic "$(admin_addr $b)" t1-warm "$PARTS" || die "could not create t1-warm on $b"
  lg_produce "t1warm.$b" "$pid" "$addr" t1-warm "$P1_JIT_SECS" 0 --command-config "$cfg"
  admin delete "$(admin_addr $b)" t1-warm >/dev/null || say "  (delete of t1-warm on $b failed)"
done
for r in $(seq 1 "$P1_ROUNDS"); do
  for run in "${THROUGHPUT_RUNS[@]}"; do
    read -r b l <<< "$run"
    tls_target "$b" "$l"
    topic="t1-$l-r$r"
    create_topic "$(admin_addr "$b")" "$topic" "$PARTS" || die "could not create $topic on $b"
    lg_produce "t1.$b-$l.$r" "$pid" "$addr" "$topic" "$P1_SECS" "$P1_WARM" --command-config "$cfg"
    admin delete "$(admin_addr "$b")" "$topic" >/dev/null || say "  (delete of $topic on $b failed)"
  done
done

# ---------------------------------------------------------------- T2
T2_BYTES=$P3_BYTES; T2_RECORDS=$((T2_BYTES / RECORD))
say "T2: consume catch-up: topic t2 with $T2_RECORDS records ($((T2_BYTES / 1048576)) MiB) on each broker, written over PLAINTEXT"
for b in pinlog kafka; do
  tls_target "$b" plaintext
  create_topic "$addr" t2 "$PARTS" || die "could not create t2 on $b"
  lg "t2fill.$b" "$pid" 600 produce --bootstrap "$addr" --topic t2 --partitions "$PARTS" \
    --record-size "$RECORD" --key-space none --batch-bytes "$LG_BATCH" --linger-ms "$LG_LINGER" \
    --acks 1 --compression none --producers "$LG_CONNS" --records "$T2_RECORDS"
done
say "  one untimed catch-up per broker first (caches warm, JIT)"
for b in pinlog kafka; do
  tls_target "$b" ssl
  lg "t2warm.$b" "$pid" 300 consume --bootstrap "$addr" --topic t2 --from earliest --connections "$LG_CONNS" --command-config "$cfg"
done
for r in $(seq 1 "$P3_ROUNDS"); do
  for run in "${THROUGHPUT_RUNS[@]}"; do
    read -r b l <<< "$run"
    tls_target "$b" "$l"
    lg "t2.$b-$l.$r" "$pid" 300 consume --bootstrap "$addr" --topic t2 --from earliest \
      --connections "$LG_CONNS" --command-config "$cfg"
  done
done

# ---------------------------------------------------------------- T3
say "T3: connection storms, $STORM_THREADS threads, ${STORM_SECS}s (+${STORM_WARM}s warmup) per listener and broker"
for r in $(seq 1 "$P3_ROUNDS"); do
  for l in "${LISTENERS[@]}"; do
    for b in pinlog kafka; do
      tls_target "$b" "$l"
      lg "t3.$b-$l.$r" "$pid" $((STORM_SECS + STORM_WARM + 120)) connect --bootstrap "$addr" \
        --threads "$STORM_THREADS" --duration "$STORM_SECS" --warmup "$STORM_WARM" --command-config "$cfg"
    done
  done
done

# ---------------------------------------------------------------- kTLS
# Kernel TLS needs the "tls" TCP upper layer protocol: listed once its
# module is loaded; setting it on a connected socket loads it when the
# kernel has it as a module.
KTLS_ULPS=$(cat /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null || echo "?")
KTLS_PROBE=$(python3 - <<'PY' 2>&1
import socket
TCP_ULP = 31
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.create_connection(srv.getsockname())
try:
    c.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b"tls")
    print("available: setsockopt(TCP_ULP, \"tls\") succeeded")
except OSError as e:
    print(f"not available: setsockopt(TCP_ULP, \"tls\") failed with {e.strerror} (errno {e.errno})")
PY
)
say "kTLS: tcp_available_ulp lists: $KTLS_ULPS; probe: $KTLS_PROBE"

# ---------------------------------------------------------------- report
write_report tls_report.py P1_SECS P1_WARM P1_ROUNDS P3_ROUNDS T2_BYTES KAFKA_VERSION KAFKA_HEAP \
  STORM_THREADS STORM_SECS STORM_WARM KTLS_ULPS KTLS_PROBE NEGOTIATED_pinlog NEGOTIATED_kafka
