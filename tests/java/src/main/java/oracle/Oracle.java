package oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BinaryNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.jar.JarFile;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidMetadataException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;
import ${record.package}.BaseRecords;
import ${record.package}.MemoryRecords;
import ${record.package}.SimpleRecord;
import org.apache.kafka.common.compress.Compression;

/**
 * Apache Kafka's generated message classes as an oracle for kwire. Commands (all write JSON
 * lines):
 *
 * <ul>
 *   <li>{@code gen DIR SEEDS}: Java-built values of every message, version and seed
 *       ({@code DIR/java-vectors.jsonl}), Java's tables ({@code DIR/java-tables.json}) and record
 *       batches ({@code DIR/java-records.jsonl}).
 *   <li>{@code check IN OUT}: reads kwire's vectors (bytes and JSON) with Java.
 *   <li>{@code records-check IN OUT}: reads kwire's record blobs with Java.
 * </ul>
 *
 * <p>Messages are found by reflection in the kafka-clients jar, so every message is covered
 * without a hand-kept list; which fields a version has comes from each class's {@code SCHEMAS}.
 */
public final class Oracle {
    static final ObjectMapper MAPPER = new ObjectMapper();
    static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "version" -> System.out.println(kafkaVersion());
            case "gen" -> {
                Path dir = Path.of(args[1]);
                Files.createDirectories(dir);
                int seeds = Integer.parseInt(args[2]);
                gen(dir.resolve("java-vectors.jsonl"), seeds);
                Tables.write(dir.resolve("java-tables.json"));
                Records.gen(dir.resolve("java-records.jsonl"));
            }
            case "check" -> check(Path.of(args[1]), Path.of(args[2]));
            case "records-check" -> Records.check(Path.of(args[1]), Path.of(args[2]));
            default -> throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }

    /** One message class and the versions Java knows for it. */
    record Target(String name, Class<?> cls, String kind, int apiKey, short lowest, short highest) {}

    /** Every message class in the jar: api requests and responses, headers, data messages. */
    static List<Target> targets() throws Exception {
        List<Target> out = new ArrayList<>();
        Map<Class<?>, Boolean> api = new LinkedHashMap<>();
        for (ApiMessageType t : ApiMessageType.values()) {
            short lo = t.lowestSupportedVersion();
            short hi = t.highestSupportedVersion(true);
            Class<?> rq, rs;
            try {
                rq = t.newRequest().getClass();
                rs = t.newResponse().getClass();
            } catch (org.apache.kafka.common.errors.UnsupportedVersionException e) {
                // Kept in the enum with no versions left (4.x removed some apis): nothing to check.
                if (lo <= hi) throw e;
                continue;
            }
            out.add(new Target(specName(rq), rq, "request", t.apiKey(), lo, hi));
            out.add(new Target(specName(rs), rs, "response", t.apiKey(), lo, hi));
            api.put(rq, true);
            api.put(rs, true);
        }
        String jar = ApiMessageType.class.getProtectionDomain().getCodeSource().getLocation().getPath();
        List<String> names = new ArrayList<>();
        try (JarFile jf = new JarFile(jar)) {
            jf.stream().map(e -> e.getName())
                .filter(n -> n.matches("org/apache/kafka/common/message/[A-Za-z0-9]+\\.class"))
                .forEach(names::add);
        }
        names.sort(null);
        for (String n : names) {
            Class<?> c = Class.forName(n.replace('/', '.').replace(".class", ""));
            if (!Message.class.isAssignableFrom(c) || api.containsKey(c) || Modifier.isAbstract(c.getModifiers())) continue;
            Message m = (Message) c.getConstructor().newInstance();
            String kind = c.getSimpleName().endsWith("HeaderData") ? "header" : "data";
            out.add(new Target(specName(c), c, kind, -1, m.lowestSupportedVersion(), m.highestSupportedVersion()));
        }
        return out;
    }

    /** The spec's name: Java adds "Data" to requests, responses and headers. */
    static String specName(Class<?> c) {
        String s = c.getSimpleName();
        if (s.endsWith("RequestData") || s.endsWith("ResponseData") || s.endsWith("HeaderData")) {
            return s.substring(0, s.length() - 4);
        }
        return s;
    }

    // ---- direction (a): Java builds the values ----

    static void gen(Path out, int seeds) throws Exception {
        try (BufferedWriter w = Files.newBufferedWriter(out)) {
            for (Target t : targets()) {
                for (short v = t.lowest; v <= t.highest; v++) {
                    for (int seed = 0; seed < seeds; seed++) {
                        ObjectNode line = NODES.objectNode();
                        line.put("name", t.name).put("kind", t.kind).put("apiKey", t.apiKey).put("version", v).put("seed", seed);
                        try {
                            genOne(t, v, seed, line);
                        } catch (Throwable e) {
                            line.put("javaError", describe(e));
                        }
                        w.write(MAPPER.writeValueAsString(line));
                        w.newLine();
                    }
                }
            }
        }
    }

    static void genOne(Target t, short v, int seed, ObjectNode line) throws Exception {
        Random r = new Random(((long) t.name.hashCode() << 20) ^ (v * 7919L) ^ seed);
        // Seed 0 sets every field (no nulls, every tagged field); later seeds vary. Structs and
        // records are tried null too, as the schemas do not say where they may be; when Java
        // refuses such a value, the same seed is built again without those nulls.
        Message m = new Gen(r, seed != 0, seed != 0).build(t.cls, v);
        byte[] bytes;
        try {
            bytes = write(m, v);
        } catch (RuntimeException e) {
            r = new Random(((long) t.name.hashCode() << 20) ^ (v * 7919L) ^ seed);
            m = new Gen(r, seed != 0, false).build(t.cls, v);
            bytes = write(m, v);
        }
        // Java reads its own bytes back to the same value and bytes (sanity of the generator).
        Message back = read(t.cls, bytes, v);
        if (!back.equals(m)) throw new IllegalStateException("Java's own read differs from the value it wrote");
        line.put("hex", HEX.formatHex(bytes));
        line.set("json", json(m, v));
        ArrayNode cuts = line.putArray("truncated");
        for (int cut : cuts(bytes.length)) {
            ObjectNode c = cuts.addObject();
            c.put("len", cut);
            c.put("javaRefuses", refuses(t.cls, java.util.Arrays.copyOf(bytes, cut), v));
        }
        // The same value written at other versions: Java refuses a non-default value in a field
        // the version lacks unless the field is ignorable (then drops it), and nulls the version
        // does not allow. kwire gets the value from this version's JSON.
        ArrayNode cross = line.putArray("crossVersions");
        java.util.TreeSet<Short> to = new java.util.TreeSet<>(List.of((short) (v - 1), (short) (v + 1), t.lowest, t.highest));
        for (short w : to) {
            if (w == v || w < t.lowest || w > t.highest) continue;
            ObjectNode c = cross.addObject().put("to", w);
            try {
                c.put("hex", HEX.formatHex(write(m, w)));
            } catch (RuntimeException e) {
                c.put("javaRefuses", describe(e));
            }
        }
        if (seed == 0) {
            line.set("nulls", nullRejections(t, m, v));
            line.set("badTags", badTags(t, m, v));
        }
    }

    /** Prefix lengths to try: empty, one byte, half, all but one. */
    static int[] cuts(int len) {
        return java.util.stream.IntStream.of(0, 1, len / 2, len - 1).filter(c -> c >= 0 && c < len).distinct().toArray();
    }

    /**
     * Rejections: for each top-level field that is not nullable at this version, the JSON with
     * that field null, and whether Java refuses to write the value with it null and to read that
     * JSON.
     */
    static ArrayNode nullRejections(Target t, Message m, short v) throws Exception {
        ArrayNode out = NODES.arrayNode();
        for (BoundField bf : schema(t.cls, v).fields()) {
            if (bf.def instanceof Field.TaggedFieldsSection || bf.def.type.isNullable()) continue;
            java.lang.reflect.Field jf = javaField(t.cls, bf.def.name);
            if (jf.getType().isPrimitive()) continue;
            Message copy = read(t.cls, write(m, v), v);
            jf.set(copy, null);
            ObjectNode json = (ObjectNode) json(m, v);
            json.putNull(jf.getName());
            ObjectNode c = out.addObject();
            c.put("field", jf.getName());
            c.set("json", json);
            c.put("javaWriteRefuses", refusesWrite(copy, v));
            c.put("javaJsonRefuses", refusesJsonRead(t.cls, json, v));
        }
        return out;
    }

    /** Every tag a class knows, at any version. */
    static java.util.Set<Integer> knownTags(Class<?> cls) throws Exception {
        java.util.Set<Integer> out = new java.util.TreeSet<>();
        for (Schema s : (Schema[]) cls.getField("SCHEMAS").get(null)) {
            if (s == null) continue;
            for (BoundField bf : s.fields()) {
                if (bf.def instanceof Field.TaggedFieldsSection) out.addAll(taggedFields((TaggedFields) bf.def.type).keySet());
            }
        }
        return out;
    }

    /**
     * Rejections: a top-level tag the class knows at other versions but not at this one, sent as
     * a raw tagged field, and whether Java refuses to read it.
     */
    static ArrayNode badTags(Target t, Message m, short v) throws Exception {
        ArrayNode out = NODES.arrayNode();
        Schema s = schema(t.cls, v);
        Field section = null;
        for (BoundField bf : s.fields()) if (bf.def instanceof Field.TaggedFieldsSection) section = bf.def;
        if (section == null) return out;
        java.util.Set<Integer> here = taggedFields((TaggedFields) section.type).keySet();
        for (int tag : knownTags(t.cls)) {
            if (here.contains(tag)) continue;
            Message copy = read(t.cls, write(m, v), v);
            copy.unknownTaggedFields().clear();
            copy.unknownTaggedFields().add(new RawTaggedField(tag, new byte[] {1}));
            byte[] bytes = write(copy, v);
            out.addObject().put("tag", tag).put("hex", HEX.formatHex(bytes)).put("javaRefuses", refuses(t.cls, bytes, v));
        }
        return out;
    }

    static boolean refusesWrite(Message m, short v) {
        try {
            write(m, v);
            return false;
        } catch (RuntimeException e) {
            return true;
        }
    }

    /**
     * Java refuses this JSON: its converter's read throws, or writing what it read does (the
     * converter reads a null into a field that is not nullable at the version; the write refuses).
     */
    static boolean refusesJsonRead(Class<?> cls, JsonNode json, short v) {
        try {
            write(jsonRead(cls, json, v), v);
            return false;
        } catch (Exception e) {
            return true;
        }
    }

    static boolean refuses(Class<?> cls, byte[] bytes, short v) {
        try {
            read(cls, bytes, v);
            return false;
        } catch (Exception e) {
            return true;
        }
    }

    /** Builds values with a non-default value in every field present at the version. */
    static final class Gen {
        final Random r;
        final boolean vary;
        final boolean guessNulls;

        Gen(Random r, boolean vary, boolean guessNulls) {
            this.r = r;
            this.vary = vary;
            this.guessNulls = guessNulls;
        }

        Message build(Class<?> cls, short v) throws Exception {
            Message m = (Message) cls.getConstructor().newInstance();
            for (BoundField bf : schema(cls, v).fields()) {
                if (bf.def instanceof Field.TaggedFieldsSection) {
                    TreeMap<Integer, Field> tagged = new TreeMap<>(taggedFields((TaggedFields) bf.def.type));
                    for (Field f : tagged.values()) {
                        // Leave some tagged fields at their default: they must then be left out.
                        if (vary && r.nextInt(4) == 0) continue;
                        set(m, f, v);
                    }
                    if (!vary || r.nextBoolean()) {
                        // Above every tag the class knows at any version: Java refuses a known tag
                        // at a version without it (see badTags).
                        int tag = knownTags(cls).stream().mapToInt(Integer::intValue).max().orElse(-1) + 1 + r.nextInt(3);
                        for (int i = 0, n = 1 + r.nextInt(2); i < n; i++) {
                            m.unknownTaggedFields().add(new RawTaggedField(tag, bytes(0, 4)));
                            tag += 1 + r.nextInt(40);
                        }
                    }
                } else {
                    set(m, bf.def, v);
                }
            }
            return m;
        }

        void set(Message m, Field def, short v) throws Exception {
            java.lang.reflect.Field jf = javaField(m.getClass(), def.name);
            Object cur = jf.get(m);
            jf.set(m, value(jf.getType(), jf.getGenericType(), def.type, cur, v));
        }

        Object value(Class<?> c, java.lang.reflect.Type generic, Type st, Object cur, short v) throws Exception {
            // Records types report nullable even where the field is not, and struct types never
            // do: those are only guessed null (see genOne).
            boolean guessed = BaseRecords.class.isAssignableFrom(c) || (Message.class.isAssignableFrom(c) && !isKeyedCollection(c));
            if (!c.isPrimitive() && (guessed ? guessNulls : st.isNullable()) && vary && r.nextInt(5) == 0) return null;
            if (c == byte.class || c == Byte.class) {
                byte x;
                do x = (byte) edge(r.nextInt(), Byte.MIN_VALUE, Byte.MAX_VALUE); while (cur != null && x == (Byte) cur);
                return x;
            }
            if (c == short.class || c == Short.class) {
                short x;
                do x = (short) edge(r.nextInt(), Short.MIN_VALUE, Short.MAX_VALUE); while (cur != null && x == (Short) cur);
                return x;
            }
            if (c == int.class || c == Integer.class) {
                int x;
                do x = (int) (st == Type.UINT16 ? edge(r.nextInt(65536), 0, 65535) : edge(r.nextInt(), Integer.MIN_VALUE, Integer.MAX_VALUE));
                while (cur != null && x == (Integer) cur);
                return x;
            }
            if (c == long.class || c == Long.class) {
                long x;
                do x = st == Type.UNSIGNED_INT32 ? edge(r.nextLong() & 0xffffffffL, 0, 0xffffffffL) : edge(r.nextLong(), Long.MIN_VALUE, Long.MAX_VALUE);
                while (cur != null && x == (Long) cur);
                return x;
            }
            if (c == double.class || c == Double.class) {
                double x;
                double[] edges = {Double.MAX_VALUE, Double.MIN_VALUE, -0.0, 1e-7, 123456789.123, -1.5e300};
                do x = vary && r.nextInt(4) == 0 ? edges[r.nextInt(edges.length)] : r.nextInt(1_000_000) / 8.0 - 50_000.0;
                while (cur != null && x == (Double) cur);
                return x;
            }
            if (c == boolean.class || c == Boolean.class) return cur == null ? r.nextBoolean() : !(Boolean) cur;
            if (c == String.class) {
                String s;
                do s = string(); while (s.equals(cur));
                return s;
            }
            if (c == Uuid.class) return new Uuid(r.nextLong(), r.nextLong() | 1);
            if (c == byte[].class) return someBytes();
            if (c == ByteBuffer.class) return ByteBuffer.wrap(someBytes());
            if (BaseRecords.class.isAssignableFrom(c)) return records();
            if (isKeyedCollection(c)) {
                @SuppressWarnings("unchecked")
                Collection<Object> coll = (Collection<Object>) c.getConstructor().newInstance();
                Class<?> elem = (Class<?>) ((ParameterizedType) c.getGenericSuperclass()).getActualTypeArguments()[0];
                for (int i = 0, n = count(); i < n; i++) coll.add(build(elem, v));
                return coll;
            }
            if (List.class.isAssignableFrom(c)) {
                Class<?> elem = (Class<?>) ((ParameterizedType) generic).getActualTypeArguments()[0];
                Type est = st.arrayElementType().orElseThrow();
                List<Object> list = new ArrayList<>();
                boolean structs = Message.class.isAssignableFrom(elem);
                // Now and then a long array of plain values: a two-byte compact length.
                int n = !structs && vary && r.nextInt(15) == 0 ? 130 : count();
                for (int i = 0; i < n; i++) {
                    list.add(structs ? build(elem, v) : value(elem, elem, est, null, v));
                }
                return list;
            }
            if (Message.class.isAssignableFrom(c)) return build(c, v);
            throw new IllegalStateException("no generator for " + c);
        }

        /** Now and then (varying seeds) the type's extremes, 0 or -1 instead of {@code x}. */
        long edge(long x, long min, long max) {
            if (!vary || r.nextInt(5) != 0) return x;
            long[] e = {min, max, 0, -1, 1};
            long y = e[r.nextInt(e.length)];
            return y < min || y > max ? x : y;
        }

        /** Bytes: mostly short, sometimes empty, or long enough for a two-byte length varint. */
        byte[] someBytes() {
            if (vary && r.nextInt(8) == 0) return new byte[0];
            if (vary && r.nextInt(12) == 0) return bytes(128, 300);
            return bytes(1, 12);
        }

        /** Arrays of 0, 1 and several elements. */
        int count() {
            return vary ? r.nextInt(4) : 2;
        }

        String string() {
            if (vary && r.nextInt(10) == 0) return "";
            // Past 127 bytes a compact length takes two varint bytes.
            int n = vary && r.nextInt(15) == 0 ? 130 + r.nextInt(40) : 1 + r.nextInt(10);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < n; i++) {
                // Mostly ASCII; now and then a multi-byte character (lengths count UTF-8 bytes).
                int k = r.nextInt(16);
                sb.append(k == 0 ? "é" : k == 1 ? "✓" : k == 2 ? "😀" : String.valueOf((char) ('a' + r.nextInt(26))));
            }
            return sb.toString();
        }

        byte[] bytes(int lo, int hi) {
            byte[] b = new byte[lo + r.nextInt(hi - lo + 1)];
            r.nextBytes(b);
            return b;
        }

        MemoryRecords records() {
            SimpleRecord[] rs = new SimpleRecord[1 + r.nextInt(2)];
            for (int i = 0; i < rs.length; i++) rs[i] = new SimpleRecord(1_700_000_000_000L + i, bytes(0, 3), bytes(0, 6));
            return MemoryRecords.withRecords(Compression.NONE, rs);
        }
    }

    // ---- reflection over the generated classes ----

    /** The kafka-clients version, from the properties file in its jar (AppInfoParser moves between releases). */
    static String kafkaVersion() throws Exception {
        java.util.Properties p = new java.util.Properties();
        try (var in = ApiMessageType.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            p.load(in);
        }
        return p.getProperty("version");
    }

    /** A generated mapKey collection: an ImplicitLinkedHashMultiCollection (its package moves between releases). */
    static boolean isKeyedCollection(Class<?> c) {
        for (Class<?> s = c; s != null; s = s.getSuperclass()) {
            if (s.getSimpleName().equals("ImplicitLinkedHashMultiCollection")) return true;
        }
        return false;
    }

    static Schema schema(Class<?> cls, short v) throws Exception {
        Schema[] all = (Schema[]) cls.getField("SCHEMAS").get(null);
        if (v >= all.length || all[v] == null) throw new IllegalStateException(cls.getSimpleName() + " has no schema at v" + v);
        return all[v];
    }

    @SuppressWarnings("unchecked")
    static Map<Integer, Field> taggedFields(TaggedFields t) throws Exception {
        java.lang.reflect.Field f = TaggedFields.class.getDeclaredField("fields");
        f.setAccessible(true);
        return (Map<Integer, Field>) f.get(t);
    }

    /** The Java field for a schema field: the schema uses snake_case, the class camelCase. */
    static java.lang.reflect.Field javaField(Class<?> cls, String schemaName) {
        String want = schemaName.replace("_", "").toLowerCase();
        for (java.lang.reflect.Field f : cls.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers())) continue;
            if (f.getName().toLowerCase().equals(want)) {
                f.setAccessible(true);
                return f;
            }
        }
        throw new IllegalStateException(cls.getName() + " has no field for " + schemaName);
    }

    static byte[] write(Message m, short v) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = m.size(cache, v);
        ByteBuffer buf = ByteBuffer.allocate(size);
        m.write(new ByteBufferAccessor(buf), cache, v);
        if (buf.hasRemaining()) throw new IllegalStateException("size() said " + size + " but write wrote " + buf.position());
        return buf.array();
    }

    /** Reads a whole message; every byte must be used. */
    static Message read(Class<?> cls, byte[] bytes, short v) throws Exception {
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        Message m;
        try {
            m = (Message) cls.getConstructor(Readable.class, short.class).newInstance(new ByteBufferAccessor(buf), v);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ex ? ex : e;
        }
        if (buf.hasRemaining()) throw new IllegalStateException(buf.remaining() + " bytes left after reading");
        return m;
    }

    static Class<?> converter(Class<?> cls) throws ClassNotFoundException {
        return Class.forName(cls.getName() + "JsonConverter");
    }

    /**
     * Java's JSON (the generated converter's {@code write}) with kwire's two documented
     * additions put in where Java leaves them out, after checking Java did leave them out: the
     * base64 of {@code records} fields (Java writes an empty binary) and
     * {@code _unknownTaggedFields} (Java drops them).
     */
    static JsonNode json(Message m, short v) throws Exception {
        Method w = converter(m.getClass()).getMethod("write", m.getClass(), short.class);
        JsonNode node;
        try {
            node = (JsonNode) w.invoke(null, m, v);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ex ? ex : e;
        }
        addKwireExtensions(m, node, v);
        return node;
    }

    static void addKwireExtensions(Message m, JsonNode node, short v) throws Exception {
        if (!(node instanceof ObjectNode o)) return;
        if (o.has("_unknownTaggedFields")) throw new IllegalStateException("Java's JSON has _unknownTaggedFields");
        if (!m.unknownTaggedFields().isEmpty()) {
            ArrayNode a = o.putArray("_unknownTaggedFields");
            for (RawTaggedField f : m.unknownTaggedFields()) {
                a.addObject().put("tag", f.tag()).put("data", Base64.getEncoder().encodeToString(f.data()));
            }
        }
        for (java.lang.reflect.Field f : m.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) || f.getName().startsWith("_")) continue;
            JsonNode child = o.get(f.getName());
            if (child == null) continue;
            f.setAccessible(true);
            Object val = f.get(m);
            if (val instanceof BaseRecords rec) {
                if (!(child instanceof BinaryNode b) || b.binaryValue().length != 0) {
                    throw new IllegalStateException("Java's JSON for records " + f.getName() + " is " + child + ", not an empty binary");
                }
                o.set(f.getName(), new TextNode(Base64.getEncoder().encodeToString(recordsBytes(rec))));
            } else if (val instanceof Message sub) {
                addKwireExtensions(sub, child, v);
            } else if (val instanceof Collection<?> coll && child instanceof ArrayNode arr) {
                int i = 0;
                for (Object e : coll) {
                    if (e instanceof Message sub) addKwireExtensions(sub, arr.get(i), v);
                    i++;
                }
            }
        }
    }

    static byte[] recordsBytes(BaseRecords rec) {
        ByteBuffer b = ((MemoryRecords) rec).buffer().duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    static Message jsonRead(Class<?> cls, JsonNode json, short v) throws Exception {
        Method rd = converter(cls).getMethod("read", JsonNode.class, short.class);
        try {
            return (Message) rd.invoke(null, json, v);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ex ? ex : e;
        }
    }

    /** Removes unknown tagged fields everywhere in a value (Java's JSON cannot carry them). */
    static void stripUnknownTags(Message m) throws Exception {
        m.unknownTaggedFields().clear();
        for (java.lang.reflect.Field f : m.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) || f.getName().startsWith("_")) continue;
            f.setAccessible(true);
            Object val = f.get(m);
            if (val instanceof Message sub) stripUnknownTags(sub);
            else if (val instanceof Collection<?> coll) {
                for (Object e : coll) if (e instanceof Message sub) stripUnknownTags(sub);
            }
        }
    }

    static String describe(Throwable e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    // ---- direction (b): kwire builds the values ----

    static void check(Path in, Path out) throws Exception {
        Map<String, Target> byName = new LinkedHashMap<>();
        for (Target t : targets()) byName.put(t.name, t);
        try (BufferedReader rd = Files.newBufferedReader(in); BufferedWriter w = Files.newBufferedWriter(out)) {
            String text;
            while ((text = rd.readLine()) != null) {
                if (text.isBlank()) continue;
                JsonNode line = MAPPER.readTree(text);
                ObjectNode res = NODES.objectNode();
                res.put("id", line.get("id").asInt());
                Target t = byName.get(line.get("name").asText());
                short v = (short) line.get("version").asInt();
                if (t == null) {
                    res.put("javaError", "Java has no message " + line.get("name").asText());
                } else {
                    checkOne(t, v, line, res);
                }
                w.write(MAPPER.writeValueAsString(res));
                w.newLine();
            }
        }
    }

    static void checkOne(Target t, short v, JsonNode line, ObjectNode res) {
        byte[] bytes = HEX.parseHex(line.get("hex").asText());
        try {
            Message m = read(t.cls, bytes, v);
            res.put("rewriteEqual", java.util.Arrays.equals(write(m, v), bytes));
            res.set("json", json(m, v));
            try {
                Message fromJson = jsonRead(t.cls, line.get("json"), v);
                Message plain = read(t.cls, bytes, v);
                stripUnknownTags(plain);
                res.put("jsonReadEqual", fromJson.equals(plain));
            } catch (Exception e) {
                res.put("jsonReadError", describe(e));
            }
        } catch (Exception e) {
            res.put("readError", describe(e));
        }
        ArrayNode cross = res.putArray("crossVersions");
        for (JsonNode c : line.withArray("crossVersions")) {
            short to = (short) c.get("to").asInt();
            ObjectNode o = cross.addObject().put("to", to);
            try {
                o.put("hex", HEX.formatHex(write(read(t.cls, bytes, v), to)));
            } catch (Exception e) {
                o.put("javaRefuses", describe(e));
            }
        }
        ArrayNode cuts = res.putArray("truncated");
        for (JsonNode c : line.withArray("truncated")) {
            int len = c.asInt();
            cuts.addObject().put("len", len).put("javaRefuses", refuses(t.cls, java.util.Arrays.copyOf(bytes, len), v));
        }
    }

    // ---- tables ----

    static final class Tables {
        static void write(Path out) throws Exception {
            ObjectNode root = NODES.objectNode();
            root.put("kafkaClients", kafkaVersion());
            ArrayNode errors = root.putArray("errors");
            for (Errors e : Errors.values()) {
                errors.addObject()
                    .put("code", e.code())
                    .put("name", e.name())
                    .put("retriable", e.exception() instanceof RetriableException)
                    .put("invalidMetadata", e.exception() instanceof InvalidMetadataException)
                    .put("message", e.message());
            }
            ArrayNode apis = root.putArray("apis");
            for (ApiKeys k : ApiKeys.values()) {
                ObjectNode a = apis.addObject();
                a.put("key", k.id).put("name", k.name);
                a.put("lowest", k.oldestVersion()).put("highest", k.latestVersion(true));
                a.put("latestVersionUnstable", k.messageType.latestVersionUnstable());
                a.put("lowestDeprecated", k.messageType.lowestDeprecatedVersion());
                a.put("highestDeprecated", k.messageType.highestDeprecatedVersion());
                ArrayNode ls = a.putArray("listeners");
                k.messageType.listeners().forEach(l -> ls.add(l.name()));
                ArrayNode rq = a.putArray("requestHeaderVersions");
                ArrayNode rs = a.putArray("responseHeaderVersions");
                for (short v = k.oldestVersion(); v <= k.latestVersion(true); v++) {
                    rq.add(k.requestHeaderVersion(v));
                    rs.add(k.responseHeaderVersion(v));
                }
            }
            Files.writeString(out, MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(root), StandardCharsets.UTF_8);
        }
    }
}
