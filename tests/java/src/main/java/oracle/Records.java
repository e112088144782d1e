package oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import ${record.package}.CompressionType;
import ${record.package}.ControlRecordType;
import ${record.package}.EndTransactionMarker;
import ${record.package}.MemoryRecords;
import ${record.package}.MemoryRecordsBuilder;
import ${record.package}.Record;
import ${record.package}.RecordBatch;
import org.apache.kafka.common.record.TimestampType;

/**
 * Record batches: Java's {@code MemoryRecordsBuilder} writes blobs for kwire to read, and
 * Java's {@code MemoryRecords.readableRecords} reads kwire's. Both sides describe a blob in
 * the same JSON shape ({@link #describe}), which the Rust test compares.
 */
final class Records {
    private Records() {}

    static final byte[][] KEYS = {"k0".getBytes(), null, "k2".getBytes(), "".getBytes()};
    static final byte[][] VALUES = {"v0".getBytes(), "value-1".getBytes(), null, "v3".getBytes()};

    static MemoryRecords batch(byte magic, CompressionType codec, TimestampType ts, long baseOffset, long producerId,
                               short epoch, int baseSequence, boolean transactional, int leaderEpoch, int n) {
        ByteBuffer buf = ByteBuffer.allocate(4096);
        Compression c = Compression.of(codec).build();
        long logAppendTime = ts == TimestampType.LOG_APPEND_TIME ? 1_700_000_999_000L : RecordBatch.NO_TIMESTAMP;
        MemoryRecordsBuilder b = MemoryRecords.builder(buf, magic, c, ts, baseOffset, logAppendTime, producerId, epoch,
            baseSequence, transactional, leaderEpoch);
        for (int i = 0; i < n; i++) {
            Header[] headers = magic < 2 ? new Header[0] : new Header[] {
                // Duplicate keys and a null value: headers are a list, not a map.
                new RecordHeader("h", ("x" + i).getBytes()), new RecordHeader("h", (byte[]) null), new RecordHeader("é", new byte[] {1, 2}),
            };
            b.appendWithOffset(baseOffset + i, 1_700_000_000_000L + 10L * i, KEYS[i % 4], VALUES[i % 4], headers);
        }
        return b.build();
    }

    static void gen(Path out) throws Exception {
        List<Object[]> cases = new ArrayList<>();
        for (byte magic = 0; magic <= 2; magic++) {
            for (CompressionType codec : CompressionType.values()) {
                // zstd exists from magic 2 on; Java refuses it with older magics.
                if (codec == CompressionType.ZSTD && magic < 2) continue;
                cases.add(new Object[] {"magic " + magic + " " + codec.name, batch(magic, codec, magic == 0 ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME, 100, -1, (short) -1, -1, false, -1, 4)});
            }
            if (magic > 0) cases.add(new Object[] {"magic " + magic + " log append time", batch(magic, CompressionType.GZIP, TimestampType.LOG_APPEND_TIME, 7, -1, (short) -1, -1, false, -1, 3)});
        }
        cases.add(new Object[] {"idempotent", batch((byte) 2, CompressionType.LZ4, TimestampType.CREATE_TIME, 0, 42, (short) 3, 7, false, 5, 3)});
        cases.add(new Object[] {"transactional", batch((byte) 2, CompressionType.ZSTD, TimestampType.CREATE_TIME, 1000, 4242, (short) 1, 0, true, 9, 4)});
        MemoryRecords commit = MemoryRecords.withEndTransactionMarker(1004, 1_700_000_000_500L, 9, 4242, (short) 1, new EndTransactionMarker(ControlRecordType.COMMIT, 17));
        MemoryRecords abort = MemoryRecords.withEndTransactionMarker(2000, 1_700_000_000_600L, 9, 4243, (short) 2, new EndTransactionMarker(ControlRecordType.ABORT, 18));
        cases.add(new Object[] {"control commit", commit});
        cases.add(new Object[] {"control abort", abort});
        cases.add(new Object[] {"several batches", concat(
            batch((byte) 2, CompressionType.NONE, TimestampType.CREATE_TIME, 0, -1, (short) -1, -1, false, 0, 2),
            batch((byte) 2, CompressionType.SNAPPY, TimestampType.CREATE_TIME, 2, -1, (short) -1, -1, false, 0, 3),
            batch((byte) 2, CompressionType.ZSTD, TimestampType.CREATE_TIME, 1000, 4242, (short) 1, 0, true, 9, 2), commit)});
        cases.add(new Object[] {"mixed magics", concat(
            batch((byte) 0, CompressionType.NONE, TimestampType.NO_TIMESTAMP_TYPE, 0, -1, (short) -1, -1, false, -1, 2),
            batch((byte) 1, CompressionType.GZIP, TimestampType.CREATE_TIME, 2, -1, (short) -1, -1, false, -1, 2),
            batch((byte) 2, CompressionType.LZ4, TimestampType.CREATE_TIME, 4, -1, (short) -1, -1, false, -1, 2))});
        try (BufferedWriter w = Files.newBufferedWriter(out)) {
            for (Object[] c : cases) {
                MemoryRecords r = (MemoryRecords) c[1];
                ObjectNode line = Oracle.NODES.objectNode();
                line.put("case", (String) c[0]);
                line.put("hex", Oracle.HEX.formatHex(Oracle.recordsBytes(r)));
                line.set("batches", describe(r));
                byte[] bytes = Oracle.recordsBytes(r);
                // Rejections: the last byte flipped (inside the last batch's CRC), and the blob cut
                // one byte short (Java reads the whole batches before the cut and stops there).
                byte[] corrupt = bytes.clone();
                corrupt[corrupt.length - 1] ^= 0x5a;
                ObjectNode c1 = line.putObject("corrupt").put("hex", Oracle.HEX.formatHex(corrupt));
                try {
                    describe(MemoryRecords.readableRecords(ByteBuffer.wrap(corrupt)));
                    c1.put("javaRefuses", false);
                } catch (RuntimeException e) {
                    c1.put("javaRefuses", true);
                }
                byte[] cut = java.util.Arrays.copyOf(bytes, bytes.length - 1);
                MemoryRecords cr = MemoryRecords.readableRecords(ByteBuffer.wrap(cut));
                line.putObject("cut").put("hex", Oracle.HEX.formatHex(cut)).put("validBytes", cr.validBytes()).set("batches", describe(cr));
                w.write(Oracle.MAPPER.writeValueAsString(line));
                w.newLine();
            }
        }
    }

    static MemoryRecords concat(MemoryRecords... parts) throws Exception {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (MemoryRecords p : parts) o.write(Oracle.recordsBytes(p));
        return MemoryRecords.readableRecords(ByteBuffer.wrap(o.toByteArray()));
    }

    static String b64(ByteBuffer b) {
        if (b == null) return null;
        byte[] a = new byte[b.remaining()];
        b.duplicate().get(a);
        return Base64.getEncoder().encodeToString(a);
    }

    /** The JSON shape both sides describe a blob in; every batch passes ensureValid() first. */
    static ArrayNode describe(MemoryRecords records) {
        ArrayNode out = Oracle.NODES.arrayNode();
        for (RecordBatch b : records.batches()) {
            b.ensureValid();
            ObjectNode o = out.addObject();
            o.put("magic", b.magic());
            o.put("baseOffset", b.baseOffset());
            o.put("lastOffset", b.lastOffset());
            o.put("compression", b.compressionType().name);
            o.put("timestampType", b.timestampType().name);
            if (b.magic() >= 2) {
                o.put("maxTimestamp", b.maxTimestamp());
                o.put("producerId", b.producerId());
                o.put("producerEpoch", b.producerEpoch());
                o.put("baseSequence", b.baseSequence());
                o.put("partitionLeaderEpoch", b.partitionLeaderEpoch());
                o.put("transactional", b.isTransactional());
                o.put("control", b.isControlBatch());
                o.put("crc", b.checksum());
            }
            ArrayNode rs = o.putArray("records");
            for (Record r : b) {
                ObjectNode j = rs.addObject();
                j.put("offset", r.offset());
                j.put("timestamp", r.timestamp());
                j.put("key", b64(r.key()));
                j.put("value", b64(r.value()));
                ArrayNode hs = j.putArray("headers");
                for (Header h : r.headers()) {
                    hs.addObject().put("key", h.key()).put("value", h.value() == null ? null : Base64.getEncoder().encodeToString(h.value()));
                }
            }
        }
        return out;
    }

    /** Reads kwire's blobs: lines {"case","hex"}; answers {"case","batches","validBytes","sizeInBytes"} or {"case","javaError"}. */
    static void check(Path in, Path out) throws Exception {
        try (BufferedReader rd = Files.newBufferedReader(in); BufferedWriter w = Files.newBufferedWriter(out)) {
            String text;
            while ((text = rd.readLine()) != null) {
                if (text.isBlank()) continue;
                JsonNode line = Oracle.MAPPER.readTree(text);
                ObjectNode res = Oracle.NODES.objectNode();
                res.put("case", line.get("case").asText());
                try {
                    MemoryRecords r = MemoryRecords.readableRecords(ByteBuffer.wrap(Oracle.HEX.parseHex(line.get("hex").asText())));
                    res.set("batches", describe(r));
                    res.put("validBytes", r.validBytes()).put("sizeInBytes", r.sizeInBytes());
                } catch (Exception e) {
                    res.put("javaError", Oracle.describe(e));
                }
                w.write(Oracle.MAPPER.writeValueAsString(res));
                w.newLine();
            }
        }
    }
}
