import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A member of a share group (KIP-932) for the groups tests, with Kafka's
 * own KafkaShareConsumer, speaking GroupConsumer's event format: one line
 * per event, {@code name key=value ...}.
 *
 * <pre>
 * ShareConsumer BOOTSTRAP GROUP TOPIC NAME STOP_FILE MAX_SECONDS [NAME=VALUE...]
 * </pre>
 *
 * Events: {@code start}, {@code polled n=COUNT} after every poll,
 * {@code rec p o k v dc} per record delivered (dc: its delivery count),
 * {@code ack p o type} per explicit acknowledgement, {@code committed} after
 * each commitSync, {@code error}, {@code stopping}, {@code closed}.
 *
 * Settings beyond the consumer's own:
 * <ul>
 * <li>{@code pinlog.release.first=N}: explicit mode; a record whose value's
 * sequence number is a multiple of N is released at its first delivery
 * (and accepted at the next);</li>
 * <li>{@code pinlog.release.always=N}: explicit mode; released at every
 * delivery (the delivery limit archives it);</li>
 * <li>{@code pinlog.reject=N}: explicit mode; rejected;</li>
 * <li>{@code pinlog.explicit=true}: explicit mode, accepting everything
 * (each poll's acknowledgements committed with commitSync);</li>
 * <li>{@code pinlog.sleep.ms=MS}: sleep that long after a poll that
 * returned records, before acknowledging them (a slow or stuck worker);</li>
 * <li>every other record is accepted (explicitly in explicit mode,
 * implicitly by the next poll otherwise).</li>
 * </ul>
 * Stops (close(), which acknowledges what is pending) when STOP_FILE appears.
 */
public class ShareConsumer {
    public static void main(String[] args) throws Exception {
        if (args.length < 6) {
            die("usage: ShareConsumer BOOTSTRAP GROUP TOPIC NAME STOP_FILE MAX_SECONDS [NAME=VALUE...]");
        }
        String bootstrap = args[0], group = args[1], topic = args[2], name = args[3];
        Path stop = Path.of(args[4]);
        long deadline = System.nanoTime() + Duration.ofSeconds(Long.parseLong(args[5])).toNanos();
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        long releaseFirst = 0, releaseAlways = 0, reject = 0;
        boolean explicitOnly = false;
        long sleepMs = 0;
        for (int i = 6; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv.length != 2) {
                die("not NAME=VALUE: " + args[i]);
            }
            switch (kv[0]) {
                case "pinlog.release.first" -> releaseFirst = Long.parseLong(kv[1]);
                case "pinlog.release.always" -> releaseAlways = Long.parseLong(kv[1]);
                case "pinlog.reject" -> reject = Long.parseLong(kv[1]);
                case "pinlog.explicit" -> explicitOnly = Boolean.parseBoolean(kv[1]);
                case "pinlog.sleep.ms" -> sleepMs = Long.parseLong(kv[1]);
                default -> props.put(kv[0], kv[1]);
            }
        }
        boolean explicit = explicitOnly || releaseFirst > 0 || releaseAlways > 0 || reject > 0;
        if (explicit) {
            props.put("share.acknowledgement.mode", "explicit");
        }
        GroupConsumer.emit("start", "name", name, "lib", "java-share", "group", group,
                "pid", Long.toString(ProcessHandle.current().pid()));
        long consumed = 0;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            String reason = "stop file";
            while (!Files.exists(stop)) {
                if (System.nanoTime() > deadline) {
                    GroupConsumer.emit("fatal", "error", "deadline; consumed " + consumed + " records");
                    System.exit(3);
                }
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (KafkaException e) {
                    GroupConsumer.emit("error", "name", e.getClass().getSimpleName(),
                            "detail", String.valueOf(e.getMessage()));
                    reason = "error";
                    break;
                }
                GroupConsumer.emit("polled", "n", Integer.toString(records.count()));
                for (ConsumerRecord<String, String> r : records) {
                    GroupConsumer.emit("rec", "p", Integer.toString(r.partition()),
                            "o", Long.toString(r.offset()), "k", r.key(), "v", r.value(),
                            "dc", r.deliveryCount().map(String::valueOf).orElse("-1"));
                    consumed++;
                }
                if (sleepMs > 0 && !records.isEmpty()) {
                    Thread.sleep(sleepMs);
                }
                for (ConsumerRecord<String, String> r : records) {
                    Optional<Short> dc = r.deliveryCount();
                    if (!explicit) {
                        continue;
                    }
                    long seq = seqOf(r.value());
                    AcknowledgeType type = AcknowledgeType.ACCEPT;
                    if (reject > 0 && seq % reject == 0) {
                        type = AcknowledgeType.REJECT;
                    } else if (releaseAlways > 0 && seq % releaseAlways == 0) {
                        type = AcknowledgeType.RELEASE;
                    } else if (releaseFirst > 0 && seq % releaseFirst == 0 && dc.orElse((short) 1) == 1) {
                        type = AcknowledgeType.RELEASE;
                    }
                    consumer.acknowledge(r, type);
                    GroupConsumer.emit("ack", "p", Integer.toString(r.partition()),
                            "o", Long.toString(r.offset()), "type", type.name());
                }
                if (explicit && !records.isEmpty()) {
                    try {
                        // commitSync reports each partition's outcome rather
                        // than throwing: only a clean map is a commit.
                        Map<TopicIdPartition, Optional<KafkaException>> outcome = consumer.commitSync();
                        List<String> failed = outcome.entrySet().stream()
                                .filter(e -> e.getValue().isPresent())
                                .map(e -> e.getKey().partition() + ":"
                                        + e.getValue().get().getClass().getSimpleName())
                                .toList();
                        if (failed.isEmpty()) {
                            GroupConsumer.emit("committed", "n", Integer.toString(records.count()));
                        } else {
                            GroupConsumer.emit("commit_failed", "partitions", String.join(",", failed));
                        }
                    } catch (KafkaException e) {
                        GroupConsumer.emit("commit_failed", "name", e.getClass().getSimpleName(),
                                "detail", String.valueOf(e.getMessage()));
                    }
                }
            }
            GroupConsumer.emit("stopping", "reason", reason, "consumed", Long.toString(consumed));
        }
        GroupConsumer.emit("closed", "consumed", Long.toString(consumed));
    }

    /** The sequence number in a value {@code TOPIC/NNNNNNN/KEY}; -1 if none. */
    static long seqOf(String value) {
        String[] parts = value == null ? new String[0] : value.split("/");
        try {
            return parts.length >= 2 ? Long.parseLong(parts[parts.length - 2]) : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static void die(String msg) {
        System.err.println("ERROR: " + msg);
        System.exit(1);
    }
}
