// Java's client (kafka-clients, the broker's own version) in the client benchmark of issue 27.
// The arguments, payloads, digest, CPU counters and result line are those of
// ../src/common.rs, in Java:
//
//   ClientBench produce BOOTSTRAP TOPIC COUNT SIZE none|lz4|zstd all|1 RATE
//   ClientBench consume BOOTSTRAP TOPIC COUNT SIZE PARTITIONS
//   ClientBench verify BOOTSTRAP PARTITIONS TOPIC...
//
// `verify` is the benchmark's fixed reader: each topic's partitions from the start to the end
// offsets it finds first, printing the count and digest of what the topic holds (not timed).

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ClientBench {
    static final int POOL_BYTES = 1 << 20;

    static final class Pool {
        final int size, slots;
        final byte[] bytes;
        final long[] hashes;

        Pool(int size) {
            String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            this.size = size;
            this.slots = Math.max(1, POOL_BYTES / size);
            bytes = new byte[slots * size];
            long x = 0x9E3779B97F4A7C15L;
            for (int i = 0; i < bytes.length; i++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
                bytes[i] = (byte) alphabet.charAt((int) (x >>> 58));
            }
            hashes = new long[slots];
            for (int s = 0; s < slots; s++) hashes[s] = hash(bytes, s * size, size);
        }

        int slot(long i) { return (int) Long.remainderUnsigned(i, slots); }
    }

    static long hash(byte[] v, int off, int len) {
        final long prime = 0x00000100000001B3L;
        long h = 0xCBF29CE484222325L ^ len;
        ByteBuffer b = ByteBuffer.wrap(v, off, len).order(ByteOrder.LITTLE_ENDIAN);
        int words = len / 8 * 8;
        for (int i = 0; i < words; i += 8) h = (h ^ b.getLong(off + i)) * prime;
        for (int i = words; i < len; i++) h = (h ^ (v[off + i] & 0xFFL)) * prime;
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        h *= 0xC4CEB9FE1A85EC53L;
        return h ^ (h >>> 33);
    }

    // user + system CPU seconds of a process from /proc/PID/stat (ticks of 1/100 s).
    static double cpuOf(String pid) {
        try {
            String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            return (Double.parseDouble(f[11]) + Double.parseDouble(f[12])) / 100.0;
        } catch (Exception e) {
            return 0;
        }
    }

    static double brokerCpu() {
        double sum = 0;
        String pids = System.getenv().getOrDefault("BENCH_BROKER_PIDS", "");
        for (String p : pids.split(",")) if (!p.isEmpty()) sum += cpuOf(p);
        return sum;
    }

    static final class Phase {
        final long start = System.nanoTime();
        final double cpu = cpuOf("self"), broker = brokerCpu();

        void report(String role, long count, long bytes, long digest, String extra) {
            System.out.printf("RESULT client=java role=%s count=%d bytes=%d digest=%016x secs=%.4f cpu=%.2f broker_cpu=%.2f%s%n",
                role, count, bytes, digest, (System.nanoTime() - start) / 1e9, cpuOf("self") - cpu, brokerCpu() - broker, extra);
        }
    }

    static void fail(String msg) {
        System.err.println("FAIL: " + msg);
        System.exit(1);
    }

    static long dueNs(long i, long rate) { return rate == 0 ? 0 : (long) (i * 1e9 / rate); }

    public static void main(String[] a) throws Exception {
        switch (a.length > 0 ? a[0] : "") {
            case "produce" -> {
                if (a.length < 8 || !(a[6].equals("all") || a[6].equals("1"))) fail("usage: produce BOOTSTRAP TOPIC COUNT SIZE none|lz4|zstd all|1 RATE");
                produce(a[1], a[2], Long.parseLong(a[3]), Integer.parseInt(a[4]), a[5], a[6].equals("all"), Long.parseLong(a[7]));
            }
            case "consume" -> consume(a[1], a[2], Long.parseLong(a[3]), Integer.parseInt(a[5]));
            case "verify" -> {
                for (int t = 3; t < a.length; t++) verify(a[1], a[t], Integer.parseInt(a[2]));
            }
            default -> fail("usage: produce|consume|verify ...");
        }
        System.exit(0);
    }

    static void produce(String bootstrap, String topic, long count, int size, String compression, boolean acksAll, long rate) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", acksAll ? "all" : "1");
        p.put("enable.idempotence", Boolean.toString(acksAll));
        p.put("linger.ms", "5");
        p.put("batch.size", Integer.toString(64 << 10));
        p.put("compression.type", compression);
        Pool pool = new Pool(size);
        AtomicLong acked = new AtomicLong(), digest = new AtomicLong(), failed = new AtomicLong();
        long[] latency = rate > 0 ? new long[(int) count] : null;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            // The topic's metadata before the clock starts.
            producer.partitionsFor(topic);
            Phase phase = new Phase();
            long start = System.nanoTime();
            for (long i = 0; i < count; i++) {
                if (rate > 0) {
                    long wait = dueNs(i, rate) - (System.nanoTime() - start);
                    if (wait > 0) LockSupport.parkNanos(wait);
                }
                final long n = i;
                final long h = pool.hashes[pool.slot(i)];
                int off = pool.slot(i) * size;
                // A byte[] per record: the serializer API takes whole arrays.
                byte[] value = Arrays.copyOfRange(pool.bytes, off, off + size);
                producer.send(new ProducerRecord<>(topic, value), (md, e) -> {
                    if (e != null) {
                        System.err.println("FAIL: delivery: " + e);
                        failed.incrementAndGet();
                        return;
                    }
                    if (latency != null) latency[(int) n] = Math.max(0, System.nanoTime() - start - dueNs(n, rate)) / 1000;
                    acked.incrementAndGet();
                    digest.addAndGet(h);
                });
            }
            producer.flush();
            if (acked.get() != count || failed.get() > 0) fail(acked.get() + " of " + count + " records acknowledged, " + failed.get() + " failed");
            String extra = "";
            if (latency != null) {
                Arrays.sort(latency);
                extra = String.format(" p50_us=%d p99_us=%d p999_us=%d", rank(latency, 0.5), rank(latency, 0.99), rank(latency, 0.999));
            }
            phase.report("produce", acked.get(), acked.get() * size, digest.get(), extra);
        }
    }

    // Nearest rank, as the Go program's.
    static long rank(long[] sorted, double p) {
        int k = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, k)];
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("max.poll.records", "10000");
        // Java's fetch defaults, spelled out.
        p.put("fetch.max.bytes", Integer.toString(50 << 20));
        p.put("max.partition.fetch.bytes", Integer.toString(1 << 20));
        p.put("fetch.max.wait.ms", "500");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < n; i++) tps.add(new TopicPartition(topic, i));
        return tps;
    }

    static void consume(String bootstrap, String topic, long count, int partitions) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap)) {
            consumer.assign(partitions(topic, partitions));
            Phase phase = new Phase();
            long n = 0, bytes = 0, digest = 0;
            while (n < count) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
                    if (n == count) break;
                    byte[] v = r.value() == null ? new byte[0] : r.value();
                    n++;
                    bytes += v.length;
                    digest += hash(v, 0, v.length);
                }
                if (System.nanoTime() - phase.start > 300_000_000_000L) fail("only " + n + " of " + count + " records in 300 s");
            }
            phase.report("consume", n, bytes, digest, "");
        }
    }

    static void verify(String bootstrap, String topic, int partitions) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap)) {
            List<TopicPartition> tps = partitions(topic, partitions);
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + 300_000_000_000L;
            long n = 0, bytes = 0, digest = 0;
            while (tps.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
                    if (r.offset() >= end.get(new TopicPartition(r.topic(), r.partition()))) continue;
                    byte[] v = r.value() == null ? new byte[0] : r.value();
                    n++;
                    bytes += v.length;
                    digest += hash(v, 0, v.length);
                }
                if (System.nanoTime() > deadline) fail("verify: only " + n + " records in 300 s");
            }
            System.out.printf("VERIFY topic=%s count=%d bytes=%d digest=%016x%n", topic, n, bytes, digest);
        }
    }
}
