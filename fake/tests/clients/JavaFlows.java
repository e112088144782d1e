// Java's kafka-clients against kwire-fake: Admin, an idempotent producer, a transactional one
// (a committed and an aborted transaction), read_committed consumers in a classic group and,
// where the broker speaks KIP-848, a consumer group of the new protocol. Prints a line per
// check and "OK" at the end; any surprise throws.
//
//   java -cp 'kafka-clients lib/*' JavaFlows.java BOOTSTRAP KIP848(true|false)

import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaFlows {
    static final int RECORDS = 2000;
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        boolean kip848 = Boolean.parseBoolean(args[1]);

        Properties a = new Properties();
        a.put("bootstrap.servers", bootstrap);
        a.put("client.id", "java-admin");
        try (Admin admin = Admin.create(a)) {
            admin.createTopics(List.of(new NewTopic("java-events", 3, (short) 1), new NewTopic("java-txn", 2, (short) 1))).all().get();
            Set<String> names = admin.listTopics().names().get();
            check(names.containsAll(List.of("java-events", "java-txn")), "topics listed: " + names);
            int brokers = admin.describeCluster().nodes().get().size();
            check(brokers >= 1, "brokers described: " + brokers);
            int partitions = admin.describeTopics(List.of("java-events")).allTopicNames().get().get("java-events").partitions().size();
            check(partitions == 3, "partitions described: " + partitions);
            System.out.println("admin: topics created and described");
        }

        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "java-idempotent");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < RECORDS; i++) sent.add(producer.send(new ProducerRecord<>("java-events", "k" + (i % 97), "v" + i)));
            producer.flush();
            for (var f : sent) f.get();
            System.out.println("idempotent producer: " + RECORDS + " acknowledged");
        }

        Properties t = new Properties();
        t.putAll(p);
        t.put("client.id", "java-transactional");
        t.put("transactional.id", "java-flows-txn");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(t)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 100; i++) producer.send(new ProducerRecord<>("java-txn", "k" + i, "committed-" + i));
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 50; i++) producer.send(new ProducerRecord<>("java-txn", "k" + i, "aborted-" + i));
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            for (int i = 100; i < 120; i++) producer.send(new ProducerRecord<>("java-txn", "k" + i, "committed-" + i));
            producer.commitTransaction();
            System.out.println("transactional producer: 2 commits, 1 abort");
        }

        Map<String, Integer> events = consume("java-classic", "classic", "java-events", RECORDS);
        check(events.size() == RECORDS, "classic group read every record once: " + events.size());
        Map<String, Integer> txn = consume("java-classic-txn", "classic", "java-txn", 120);
        check(txn.keySet().stream().allMatch(v -> v.startsWith("committed-")) && txn.size() == 120, "read_committed saw the committed records only: " + txn.size());
        System.out.println("classic consumer: " + events.size() + " records, " + txn.size() + " committed transactional records");

        // Committed offsets survive: the group's next consumer finds nothing new.
        Map<String, Integer> again = consume("java-classic", "classic", "java-events", 0);
        check(again.isEmpty(), "the group resumed from its committed offsets: " + again.size());

        if (kip848) {
            Map<String, Integer> next = consume("java-kip848", "consumer", "java-events", RECORDS);
            check(next.size() == RECORDS, "KIP-848 group read every record once: " + next.size());
            System.out.println("KIP-848 consumer: " + next.size() + " records");
        }
        System.out.println("OK");
    }

    // Reads `topic` in group `group` until `expected` distinct values came (or, for 0, for a
    // few seconds), commits, and returns value -> times seen; a value seen twice throws.
    static Map<String, Integer> consume(String group, String protocol, String topic, int expected) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("client.id", "java-" + protocol);
        c.put("group.id", group);
        c.put("group.protocol", protocol);
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("isolation.level", "read_committed");
        Map<String, Integer> seen = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + (expected == 0 ? 5_000 : 90_000);
            while (System.currentTimeMillis() < deadline && (expected == 0 || seen.size() < expected)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    if (seen.merge(r.value(), 1, Integer::sum) > 1) throw new IllegalStateException(group + " read " + r.value() + " twice");
                }
                consumer.commitSync();
            }
            consumer.commitSync();
        }
        return seen;
    }

    static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException("failed: " + what);
    }
}
