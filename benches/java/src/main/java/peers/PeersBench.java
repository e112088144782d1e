package peers;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * kafka-clients' generated classes on the frames W1-W5 (BENCHMARKS.md). Method names are
 * {@code <workload>_<operation>}; benches/peers.py reads them from JMH's JSON.
 *
 * <p>decode: the generated constructor over a ByteBufferAccessor of a duplicate of the frame.
 * encode: a fresh ObjectSerializationCache, the size pass (write needs the cache it fills), then
 * write into a reused buffer; encode_size: the size pass alone. encode_sized:
 * MessageUtil.toByteBufferAccessor (size, allocate exactly, write). Setup checks every frame's
 * digest and that the re-encode equals the frame (Check), and fails otherwise.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class PeersBench {
    ByteBuffer w1;
    MetadataResponseData w1Msg;
    ByteBuffer w1Out;
    ByteBuffer w2;
    ProduceRequestData w2Msg;
    ByteBuffer w2Out;
    ByteBuffer w3;
    FetchResponseData w3Msg;
    ByteBuffer w3Out;
    ByteBuffer w4a;
    ApiVersionsRequestData w4aMsg;
    ByteBuffer w4aOut;
    ByteBuffer w4b;
    ApiVersionsResponseData w4bMsg;
    ByteBuffer w4bOut;
    ByteBuffer w5;
    Frames.W5Records w5Records;
    ByteBuffer w5Out;

    @Setup(Level.Trial)
    public void setup() throws Exception {
        for (Frames.Spec spec : Frames.Spec.values()) {
            Check.check(spec);
        }
        w1 = Frames.load(Frames.Spec.W1);
        w1Msg = (MetadataResponseData) Frames.Spec.W1.decode(w1);
        w1Out = ByteBuffer.allocate(w1.remaining());
        w2 = Frames.load(Frames.Spec.W2);
        w2Msg = (ProduceRequestData) Frames.Spec.W2.decode(w2);
        w2Out = ByteBuffer.allocate(w2.remaining());
        w3 = Frames.load(Frames.Spec.W3);
        w3Msg = (FetchResponseData) Frames.Spec.W3.decode(w3);
        w3Out = ByteBuffer.allocate(w3.remaining());
        w4a = Frames.load(Frames.Spec.W4a);
        w4aMsg = (ApiVersionsRequestData) Frames.Spec.W4a.decode(w4a);
        w4aOut = ByteBuffer.allocate(w4a.remaining());
        w4b = Frames.load(Frames.Spec.W4b);
        w4bMsg = (ApiVersionsResponseData) Frames.Spec.W4b.decode(w4b);
        w4bOut = ByteBuffer.allocate(w4b.remaining());
        w5 = Frames.load(Frames.Spec.W5);
        w5Records = new Frames.W5Records();
        w5Out = ByteBuffer.allocate(w5.remaining());
    }

    @Benchmark
    public MetadataResponseData W1_decode() {
        return new MetadataResponseData(new ByteBufferAccessor(w1.duplicate()), (short) 12);
    }

    @Benchmark
    public ByteBuffer W1_encode() {
        w1Out.clear();
        Frames.encode(w1Msg, (short) 12, w1Out);
        return w1Out;
    }

    @Benchmark
    public int W1_encode_size() {
        return w1Msg.size(new ObjectSerializationCache(), (short) 12);
    }

    @Benchmark
    public ByteBufferAccessor W1_encode_sized() {
        return MessageUtil.toByteBufferAccessor(w1Msg, (short) 12);
    }

    @Benchmark
    public ProduceRequestData W2_decode() {
        return new ProduceRequestData(new ByteBufferAccessor(w2.duplicate()), (short) 9);
    }

    @Benchmark
    public ByteBuffer W2_encode() {
        w2Out.clear();
        Frames.encode(w2Msg, (short) 9, w2Out);
        return w2Out;
    }

    @Benchmark
    public int W2_encode_size() {
        return w2Msg.size(new ObjectSerializationCache(), (short) 9);
    }

    @Benchmark
    public ByteBufferAccessor W2_encode_sized() {
        return MessageUtil.toByteBufferAccessor(w2Msg, (short) 9);
    }

    @Benchmark
    public FetchResponseData W3_decode() {
        return new FetchResponseData(new ByteBufferAccessor(w3.duplicate()), (short) 12);
    }

    @Benchmark
    public ByteBuffer W3_encode() {
        w3Out.clear();
        Frames.encode(w3Msg, (short) 12, w3Out);
        return w3Out;
    }

    @Benchmark
    public int W3_encode_size() {
        return w3Msg.size(new ObjectSerializationCache(), (short) 12);
    }

    @Benchmark
    public ByteBufferAccessor W3_encode_sized() {
        return MessageUtil.toByteBufferAccessor(w3Msg, (short) 12);
    }

    @Benchmark
    public ApiVersionsRequestData W4a_decode() {
        return new ApiVersionsRequestData(new ByteBufferAccessor(w4a.duplicate()), (short) 3);
    }

    @Benchmark
    public ByteBuffer W4a_encode() {
        w4aOut.clear();
        Frames.encode(w4aMsg, (short) 3, w4aOut);
        return w4aOut;
    }

    @Benchmark
    public int W4a_encode_size() {
        return w4aMsg.size(new ObjectSerializationCache(), (short) 3);
    }

    @Benchmark
    public ByteBufferAccessor W4a_encode_sized() {
        return MessageUtil.toByteBufferAccessor(w4aMsg, (short) 3);
    }

    @Benchmark
    public ApiVersionsResponseData W4b_decode() {
        return new ApiVersionsResponseData(new ByteBufferAccessor(w4b.duplicate()), (short) 3);
    }

    @Benchmark
    public ByteBuffer W4b_encode() {
        w4bOut.clear();
        Frames.encode(w4bMsg, (short) 3, w4bOut);
        return w4bOut;
    }

    @Benchmark
    public int W4b_encode_size() {
        return w4bMsg.size(new ObjectSerializationCache(), (short) 3);
    }

    @Benchmark
    public ByteBufferAccessor W4b_encode_sized() {
        return MessageUtil.toByteBufferAccessor(w4bMsg, (short) 3);
    }

    @Benchmark
    public long W5_decode() {
        return Frames.readBatches(w5);
    }

    @Benchmark
    public MemoryRecords W5_encode() {
        return w5Records.build(w5Out);
    }

    @Benchmark
    public MemoryRecords W5_encode_sized() {
        return w5Records.build(ByteBuffer.allocate(w5Records.size()));
    }
}
