//! Records produced here, read back by Kafka's own Java consumer (kafka-clients on the
//! broker's classpath, a single-file program run at test time): every codec, keys, values,
//! headers, timestamps, offsets.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{unique, Broker};
use kwire::runtime::records::Compression;
use kwire::Bytes;
use kwire_client::{Admin, NewTopic, Producer, ProducerConfig, ProducerRecord};

const JAVA: &str = r#"
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ReadBack {
    static String hex(byte[] b) {
        if (b == null) return "null";
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("check.crcs", "true");
        int partitions = Integer.parseInt(args[2]), want = Integer.parseInt(args[3]);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(args[1], i));
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 60000;
            Set<String> seen = new HashSet<>();
            while (seen.size() < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    // A record fetched twice (a retried fetch) is printed once.
                    if (!seen.add(r.partition() + " " + r.offset())) continue;
                    StringBuilder h = new StringBuilder();
                    for (Header x : r.headers()) h.append(x.key()).append('=').append(hex(x.value())).append(';');
                    System.out.println(r.partition() + " " + r.offset() + " " + r.timestamp() + " " + hex(r.key()) + " " + hex(r.value()) + " " + h);
                }
            }
        }
    }
}
"#;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javas_consumer_reads_what_we_produce_with_every_codec() {
    let Some(b) = Broker::from_env("javas_consumer_reads_what_we_produce_with_every_codec") else { return };
    let Some(lib) = b.vars.get("KAFKA_LIB").cloned() else { panic!("no KAFKA_LIB in the env file") };
    let client = b.client().await;
    let name = unique("kw-java");
    let codecs = [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];
    Admin::new(client.clone()).create_topic(NewTopic::new(&name, codecs.len() as i32)).await.unwrap();
    let mut expected = BTreeSet::new();
    for (partition, compression) in codecs.into_iter().enumerate() {
        let config = ProducerConfig { compression, batch_size: 4000, ..Default::default() };
        let producer = Producer::new(client.clone(), config).unwrap();
        let mut ds = Vec::new();
        for i in 0..100 {
            let key = Bytes::from(format!("{compression:?}-{i}"));
            let value = Bytes::from(format!("{}-{}", "payload".repeat(i % 20), i));
            let ts = common::recent_ts() + i as i64;
            let record = ProducerRecord::new(&name, value.clone())
                .key(key.clone())
                .partition(partition as i32)
                .timestamp(ts)
                .header("codec", Some(Bytes::from(format!("{compression:?}"))));
            ds.push((key, value, ts, producer.send(record).await.unwrap()));
        }
        for (key, value, ts, d) in ds {
            let m = d.await.unwrap();
            expected.insert(format!("{partition} {} {ts} {} {} codec={};", m.offset, hex(&key), hex(&value), hex(format!("{compression:?}").as_bytes())));
        }
        producer.close().await.unwrap();
    }
    let dir = std::env::temp_dir().join(unique("kw-java-consumer"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ReadBack.java"), JAVA).unwrap();
    let java = tokio::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{lib}/*"))
        .arg("-Dlog4j2.level=warn")
        .arg(dir.join("ReadBack.java"))
        .args([b.var("PLAINTEXT"), &name, &codecs.len().to_string(), &expected.len().to_string()])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), java).await.expect("java in time").expect("java runs");
    assert!(out.status.success(), "java failed: {}", String::from_utf8_lossy(&out.stderr));
    let got: BTreeSet<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
    let missing: Vec<_> = expected.difference(&got).take(5).collect();
    let extra: Vec<_> = got.difference(&expected).take(5).collect();
    assert_eq!(
        got.len(),
        expected.len(),
        "Java read {} of {} records; missing {missing:?}, unexpected {extra:?}; stderr {}",
        got.len(),
        expected.len(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(got, expected);
    println!("Java's KafkaConsumer read {} records of 5 codecs back identically", got.len());
    let _ = std::fs::remove_dir_all(&dir);
}
