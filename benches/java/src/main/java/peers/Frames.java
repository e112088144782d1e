package peers;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.BiFunction;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.DefaultRecord;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * The benchmark frames W1-W5 of WORKLOADS.md as written by {@code bench_counts dump DIR}: loading
 * them (length and FNV-1a 64 checked), decoding them with kafka-clients' generated classes, and
 * W5's records for {@link MemoryRecordsBuilder}.
 */
public final class Frames {
    private Frames() {}

    /** One workload: its file, length, digest, version and the generated class's decoder. */
    public enum Spec {
        W1(456_160, 0xe9b80e55ae2f48e0L, 12, MetadataResponseData::new),
        W2(1_639_339, 0x77a546b9c2d579a0L, 9, ProduceRequestData::new),
        W3(6_557_642, 0x4f882f929bc6e0c7L, 12, FetchResponseData::new),
        W4a(26, 0xe29dcd9f20225244L, 3, ApiVersionsRequestData::new),
        W4b(428, 0xdbbd8f41a26a08a4L, 3, ApiVersionsResponseData::new),
        W5(138_933, 0x5545403253dc18a5L, 2, null);

        public final int len;
        public final long fnv1a64;
        public final short version;
        final BiFunction<Readable, Short, Message> decoder;

        Spec(int len, long fnv1a64, int version, BiFunction<Readable, Short, Message> decoder) {
            this.len = len;
            this.fnv1a64 = fnv1a64;
            this.version = (short) version;
            this.decoder = decoder;
        }

        /** Decodes the frame with the generated class (not used in timed loops: they call the constructor directly). */
        public Message decode(ByteBuffer frame) {
            return decoder.apply(new ByteBufferAccessor(frame.duplicate()), version);
        }
    }

    /** $KWIRE_FRAMES, or target/peers/frames (benches/peers.sh runs from the repository root). */
    public static Path dir() {
        String dir = System.getenv("KWIRE_FRAMES");
        return Path.of(dir != null ? dir : "target/peers/frames");
    }

    static long fnv1a64(byte[] data) {
        long h = 0xcbf29ce484222325L;
        for (byte b : data) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        return h;
    }

    /** The frame of {@code spec} as a read-only heap buffer, after its length and digest are checked. */
    public static ByteBuffer load(Spec spec) throws IOException {
        byte[] frame = Files.readAllBytes(dir().resolve(spec.name() + ".bin"));
        long digest = fnv1a64(frame);
        if (frame.length != spec.len || digest != spec.fnv1a64) {
            throw new IllegalStateException(String.format("%s: %d bytes with fnv1a64 %016x, expected %d bytes with %016x",
                    spec, frame.length, digest, spec.len, spec.fnv1a64));
        }
        return ByteBuffer.wrap(frame).asReadOnlyBuffer();
    }

    /** Encode as a client does: sizes into a fresh cache (which write needs), then write into {@code out}. */
    public static void encode(Message m, short version, ByteBuffer out) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        m.size(cache, version);
        m.write(new ByteBufferAccessor(out), cache, version);
    }

    // W5, as in WORKLOADS.md.
    static final long BASE_TIMESTAMP = 1_700_000_000_000L;
    static final int RECORDS = 1000;

    /** W5's records, built from WORKLOADS.md (SplitMix64 seed 5), not read from the frame. */
    public static final class W5Records {
        public final byte[][] keys = new byte[RECORDS][];
        public final byte[][] values = new byte[RECORDS][];
        public final Header[][] headers = new Header[RECORDS][];

        public W5Records() {
            long state = 5;
            for (int i = 0; i < RECORDS; i++) {
                keys[i] = String.format("key-%06d", i).getBytes(StandardCharsets.UTF_8);
                ByteBuffer v = ByteBuffer.allocate(104).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                for (int d = 0; d < 13; d++) {
                    state += 0x9E3779B97F4A7C15L;
                    long z = state;
                    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
                    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
                    v.putLong(z ^ (z >>> 31));
                }
                values[i] = Arrays.copyOf(v.array(), 100);
                byte[] trace = ByteBuffer.allocate(8).putLong(i).array();
                headers[i] = new Header[] {new RecordHeader("trace-id", trace)};
            }
        }

        /** The batch through MemoryRecordsBuilder into {@code out} (cleared first); returns the built records. */
        public MemoryRecords build(ByteBuffer out) {
            out.clear();
            MemoryRecordsBuilder b = new MemoryRecordsBuilder(out, RecordBatch.MAGIC_VALUE_V2, Compression.NONE,
                    TimestampType.CREATE_TIME, 0L, RecordBatch.NO_TIMESTAMP, RecordBatch.NO_PRODUCER_ID,
                    RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, false, false, 0, out.capacity());
            for (int i = 0; i < RECORDS; i++) {
                b.appendWithOffset(i, BASE_TIMESTAMP + i, keys[i], values[i], headers[i]);
            }
            return b.build();
        }

        /** The exact batch size, as a producer would compute it before allocating. */
        public int size() {
            int n = DefaultRecordBatch.RECORD_BATCH_OVERHEAD;
            for (int i = 0; i < RECORDS; i++) {
                n += DefaultRecord.sizeInBytes(i, i, keys[i].length, values[i].length, headers[i]);
            }
            return n;
        }
    }

    /** W5's decode: every batch (CRC checked, as kwire's decode does), every record's fields touched. */
    public static long readBatches(ByteBuffer frame) {
        long sum = 0;
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(frame.duplicate()).batches()) {
            batch.ensureValid();
            for (Record r : batch) {
                sum += r.offset() + r.timestamp() + r.keySize() + r.valueSize();
                ByteBuffer k = r.key(), v = r.value();
                sum += k.remaining() + v.remaining();
                for (Header h : r.headers()) {
                    sum += h.key().length() + h.value().length;
                }
            }
        }
        return sum;
    }
}
