package peers;

import java.nio.ByteBuffer;

import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.record.internal.MemoryRecords;

/**
 * Without JMH: every frame's digest, and kafka-clients' re-encode of what it decoded equal to the
 * frame byte for byte (W5: MemoryRecordsBuilder's batch from WORKLOADS.md's records). The JMH
 * benchmark runs the same checks in its setup; this is the cheap form for a test script.
 */
public final class Check {
    public static void main(String[] args) throws Exception {
        int failed = 0;
        for (Frames.Spec spec : Frames.Spec.values()) {
            try {
                check(spec);
                System.out.println("ok: " + spec + " " + spec.len + " bytes");
            } catch (Exception | AssertionError e) {
                failed++;
                System.out.println("FAILED: " + spec + ": " + e.getMessage());
            }
        }
        System.out.println((Frames.Spec.values().length - failed) + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static void check(Frames.Spec spec) throws Exception {
        ByteBuffer frame = Frames.load(spec);
        if (spec == Frames.Spec.W5) {
            long sum = Frames.readBatches(frame);
            if (sum == 0) throw new AssertionError("no records read");
            Frames.W5Records recs = new Frames.W5Records();
            if (recs.size() != spec.len) throw new AssertionError("computed size " + recs.size() + ", frame " + spec.len);
            same(spec, recs.build(ByteBuffer.allocate(spec.len)).buffer(), frame, "MemoryRecordsBuilder");
            return;
        }
        Message m = spec.decode(frame);
        ByteBuffer out = ByteBuffer.allocate(spec.len);
        Frames.encode(m, spec.version, out);
        out.flip();
        same(spec, out, frame, "encode");
        same(spec, MessageUtil.toByteBufferAccessor(m, spec.version).buffer(), frame, "MessageUtil.toByteBufferAccessor");
    }

    static void same(Frames.Spec spec, ByteBuffer got, ByteBuffer frame, String what) {
        if (!got.equals(frame.duplicate())) {
            int i = 0;
            while (i < Math.min(got.remaining(), frame.remaining()) && got.get(i) == frame.get(i)) i++;
            throw new AssertionError(what + ": " + got.remaining() + " bytes, frame " + frame.remaining()
                    + ", first difference at byte " + i);
        }
    }
}
