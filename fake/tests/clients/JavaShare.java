// Java's share consumer (KIP-932, kafka-clients 4.x) against kwire-fake: two consumers of one
// share group read a topic between them, every record acknowledged by exactly one of them.
// Prints "OK" at the end; any surprise throws.
//
//   java -cp 'kafka-clients lib/*' JavaShare.java BOOTSTRAP

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaShare {
    static final int RECORDS = 1000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties a = new Properties();
        a.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(a)) {
            admin.createTopics(List.of(new NewTopic("java-share", 2, (short) 1))).all().get();
            // A share group starts at the log's end unless told otherwise, as Kafka's does.
            var group = new org.apache.kafka.common.config.ConfigResource(org.apache.kafka.common.config.ConfigResource.Type.GROUP, "java-share-group");
            var earliest = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(group, List.of(earliest))).all().get();
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < RECORDS; i++) producer.send(new ProducerRecord<>("java-share", "k" + i, "v" + i));
            producer.flush();
        }
        ConcurrentHashMap<String, Integer> seen = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        List<Future<Integer>> members = new ArrayList<>();
        for (int m = 0; m < 2; m++) {
            final int member = m;
            members.add(pool.submit(() -> {
                Properties c = new Properties();
                c.put("bootstrap.servers", bootstrap);
                c.put("group.id", "java-share-group");
                c.put("client.id", "java-share-" + member);
                c.put("key.deserializer", StringDeserializer.class.getName());
                c.put("value.deserializer", StringDeserializer.class.getName());
                int mine = 0;
                try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(c)) {
                    consumer.subscribe(List.of("java-share"));
                    long deadline = System.currentTimeMillis() + 90_000;
                    while (System.currentTimeMillis() < deadline && seen.size() < RECORDS) {
                        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                            seen.merge(r.value(), 1, Integer::sum);
                            mine++;
                        }
                        consumer.commitSync();
                    }
                }
                return mine;
            }));
        }
        int total = 0;
        for (Future<Integer> f : members) total += f.get(120, TimeUnit.SECONDS);
        pool.shutdown();
        if (seen.size() != RECORDS) throw new IllegalStateException("the share group read " + seen.size() + " of " + RECORDS);
        long twice = seen.values().stream().filter(n -> n > 1).count();
        if (twice > 0) throw new IllegalStateException(twice + " records delivered twice though every one was acknowledged");
        System.out.println("share consumers: " + total + " records between two members");
        System.out.println("OK");
    }
}
