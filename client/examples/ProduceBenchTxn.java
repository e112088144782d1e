// Kafka's Java producer in transactions, for the transactional row of BENCHMARKS.md (beside
// `produce_bench --transactions N` and `produce_bench_librdkafka.py --transactions N`): the
// payload file's lines (from `produce_bench payloads`) as unkeyed records, in transactions of
// N records, each committed before the next begins; the same settings as the other clients
// (acks=all, idempotence, linger 5 ms, 64 KiB batches, lz4). Prints records/s from the first
// send to the last commit.
//
//   java -cp "$(scripts/kafka.sh classpath 4.4.0 | tail -1)/*" client/examples/ProduceBenchTxn.java \
//       BOOTSTRAP TOPIC payloads.txt N

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ProduceBenchTxn {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        List<String> lines = Files.readAllLines(Paths.get(args[2]));
        int perTransaction = Integer.parseInt(args[3]);
        byte[][] values = new byte[lines.size()][];
        for (int i = 0; i < values.length; i++) values[i] = lines.get(i).getBytes();
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        p.put("batch.size", "65536");
        p.put("compression.type", "lz4");
        p.put("transactional.id", "produce-bench-java-" + ProcessHandle.current().pid());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            long start = System.nanoTime();
            for (int i = 0; i < values.length; i++) {
                if (i % perTransaction == 0) {
                    if (i > 0) producer.commitTransaction();
                    producer.beginTransaction();
                }
                producer.send(new ProducerRecord<>(topic, values[i]));
            }
            producer.commitTransaction();
            double secs = (System.nanoTime() - start) / 1e9;
            System.out.printf("java %s: %d records in transactions of %d in %.2f s: %.0f records/s, %.1f MB/s%n",
                KafkaProducer.class.getPackage().getImplementationVersion(), values.length, perTransaction, secs,
                values.length / secs, values.length * 100 / 1e6 / secs);
        }
    }
}
