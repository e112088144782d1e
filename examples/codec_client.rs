//! A Kafka client written on kwire's connection codec alone (for a real client, use the
//! kwire-client crate: `client/examples/client.rs`): negotiates versions with
//! ApiVersions, optionally authenticates with SASL/PLAIN, fetches Metadata, produces a batch
//! and fetches it back, checking every record.
//!
//! ```sh
//! cargo run --example codec_client --features tokio -- --bootstrap 127.0.0.1:9092 [--sasl-plain USER:PASS] [--topic T] [--count N]
//! ```
// Records are nullable in Kafka 3.9.0's specs and not in 4.x's: `Option::from` builds on either.
#![allow(clippy::useless_conversion)]
// Messages gain fields in newer specs: `..Default::default()` keeps these literals building on every spec set.
#![allow(clippy::needless_update)]

use std::collections::BTreeMap;
use std::error::Error;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use kwire::codec::{ClientCodec, OutboundRequest};
use kwire::messages::{
    fetch_request::{FetchPartition, FetchTopic},
    metadata_request::MetadataRequestTopic,
    produce_request::{PartitionProduceData, TopicProduceData},
    *,
};
use kwire::runtime::records::{decode_all, Compression, DecodeOptions, Record, RecordBatchBuilder};
use kwire::{ApiKey, ByteString, Bytes, RequestKind, ResponseKind, Uuid, VersionRange};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const CLIENT_ID: &str = "kwire-example-client";
/// How long any one response may take.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

struct Client {
    conn: Framed<TcpStream, ClientCodec>,
    next_correlation_id: i32,
    /// The version to use per api: the newest both sides support.
    versions: BTreeMap<ApiKey, i16>,
}

/// The versions this client can use: what the build knows, but magic 2 records only.
fn our_versions(api: ApiKey) -> VersionRange {
    let ours = api.stable_versions();
    match api {
        ApiKey::Produce => ours.intersect(&VersionRange::new(3, i16::MAX)),
        ApiKey::Fetch => ours.intersect(&VersionRange::new(4, i16::MAX)),
        _ => ours,
    }
}

impl Client {
    async fn connect(addr: &str) -> Result<Client> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut client = Client { conn: Framed::new(stream, ClientCodec::new()), next_correlation_id: 1, versions: BTreeMap::new() };
        client.negotiate().await?;
        Ok(client)
    }

    async fn send(&mut self, version: i16, body: RequestKind) -> Result<ResponseKind> {
        let api = body.api_key();
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let request = OutboundRequest::new(api, version, correlation_id, body).with_client_id(CLIENT_ID);
        self.conn.send(request).await?;
        let response = tokio::time::timeout(RESPONSE_TIMEOUT, self.conn.next())
            .await
            .map_err(|_| format!("no {} response within {RESPONSE_TIMEOUT:?}", api.name()))?
            .ok_or("connection closed by the broker")??;
        if response.header.correlation_id != correlation_id {
            return Err(format!("response to {} has correlation id {}", correlation_id, response.header.correlation_id).into());
        }
        Ok(response.body)
    }

    /// Sends `body` at the negotiated version of its api.
    async fn call(&mut self, body: RequestKind) -> Result<ResponseKind> {
        let api = body.api_key();
        let version = self.version(api)?;
        self.send(version, body).await
    }

    fn version(&self, api: ApiKey) -> Result<i16> {
        self.versions.get(&api).copied().ok_or_else(|| format!("no version of {} both sides support", api.name()).into())
    }

    /// ApiVersions at our newest version; a broker that does not know it answers
    /// UNSUPPORTED_VERSION at v0 with its own range, and we retry with the newest common one.
    async fn negotiate(&mut self) -> Result<()> {
        let mut version = our_versions(ApiKey::ApiVersions).hi;
        let request = || {
            RequestKind::from(ApiVersionsRequest {
                client_software_name: ByteString::from_static("kwire-example"),
                client_software_version: ByteString::from_static(env!("CARGO_PKG_VERSION")),
                ..Default::default()
            })
        };
        let mut response = self.send(version, request()).await?;
        if let ResponseKind::ApiVersions(r) = &response {
            if r.error_code == 35 {
                let theirs = r.api_keys.iter().find(|k| k.api_key == ApiKey::ApiVersions.key());
                let common = theirs.map(|k| VersionRange::new(k.min_version, k.max_version).intersect(&our_versions(ApiKey::ApiVersions)));
                version = common.filter(|c| !c.is_empty()).map(|c| c.hi).ok_or("no ApiVersions version both sides support")?;
                response = self.send(version, request()).await?;
            }
        }
        let ResponseKind::ApiVersions(r) = response else { return Err("ApiVersions answered with another api".into()) };
        if r.error_code != 0 {
            return Err(format!("ApiVersions v{version} failed with error {}", r.error_code).into());
        }
        for k in &r.api_keys {
            let Some(api) = ApiKey::from_i16(k.api_key) else { continue };
            let common = VersionRange::new(k.min_version, k.max_version).intersect(&our_versions(api));
            if !common.is_empty() {
                self.versions.insert(api, common.hi);
            }
        }
        Ok(())
    }

    async fn sasl_plain(&mut self, user: &str, pass: &str) -> Result<()> {
        let ResponseKind::SaslHandshake(r) =
            self.call(SaslHandshakeRequest { mechanism: ByteString::from_static("PLAIN"), ..Default::default() }.into()).await?
        else {
            return Err("unexpected response to SaslHandshake".into());
        };
        if r.error_code != 0 {
            return Err(format!("SaslHandshake failed with error {} (broker offers {:?})", r.error_code, r.mechanisms).into());
        }
        let token = Bytes::from(format!("\0{user}\0{pass}"));
        let ResponseKind::SaslAuthenticate(r) = self.call(SaslAuthenticateRequest { auth_bytes: token, ..Default::default() }.into()).await? else {
            return Err("unexpected response to SaslAuthenticate".into());
        };
        if r.error_code != 0 {
            return Err(format!("SASL/PLAIN failed with error {}: {}", r.error_code, r.error_message.as_deref().unwrap_or("")).into());
        }
        Ok(())
    }

    /// The topic's id and partition count, creating it through auto-creation if needed.
    async fn metadata(&mut self, topic: &str) -> Result<(Uuid, usize)> {
        // Bounded: a freshly auto-created topic may take a round to appear on a real broker.
        for _ in 0..10 {
            let request = MetadataRequest {
                topics: Some(vec![MetadataRequestTopic { name: Some(ByteString::from(topic.to_owned())), ..Default::default() }]),
                allow_auto_topic_creation: true,
                ..Default::default()
            };
            let ResponseKind::Metadata(r) = self.call(request.into()).await? else { return Err("unexpected response to Metadata".into()) };
            println!("metadata: {} broker(s), cluster id {:?}", r.brokers.len(), r.cluster_id.as_deref());
            if let Some(t) = r.topics.iter().find(|t| t.name.as_deref() == Some(topic)) {
                if t.error_code == 0 && !t.partitions.is_empty() {
                    return Ok((t.topic_id, t.partitions.len()));
                }
                // Waiting only helps while the error is retriable (say, a topic being created).
                let code = kwire::ErrorCode(t.error_code);
                if !code.is_ok() && !code.is_retriable() {
                    return Err(format!("Metadata for {topic}: {}", code.name().unwrap_or("unknown error")).into());
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(format!("topic {topic} did not appear in Metadata").into())
    }

    async fn produce(&mut self, topic: &str, topic_id: Uuid, records: Bytes) -> Result<i64> {
        // v13 (Kafka 4.1+) names the topic by id.
        let version = self.version(ApiKey::Produce)?;
        let request = ProduceRequest {
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: if version < 13 { ByteString::from(topic.to_owned()) } else { ByteString::new() },
                topic_id: if version >= 13 { topic_id } else { Uuid::ZERO },
                partition_data: vec![PartitionProduceData { index: 0, records: records.into(), ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseKind::Produce(r) = self.call(request.into()).await? else { return Err("unexpected response to Produce".into()) };
        let p = r.responses.first().and_then(|t| t.partition_responses.first()).ok_or("empty Produce response")?;
        if p.error_code != 0 {
            return Err(format!("Produce failed with error {}", p.error_code).into());
        }
        Ok(p.base_offset)
    }

    async fn fetch(&mut self, topic: &str, topic_id: Uuid, offset: i64) -> Result<Bytes> {
        let version = self.version(ApiKey::Fetch)?;
        let request = FetchRequest {
            replica_id: -1,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 50 << 20,
            topics: vec![FetchTopic {
                topic: if version < 13 { ByteString::from(topic.to_owned()) } else { ByteString::new() },
                topic_id: if version >= 13 { topic_id } else { Uuid::ZERO },
                partitions: vec![FetchPartition { partition: 0, fetch_offset: offset, partition_max_bytes: 10 << 20, ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseKind::Fetch(r) = self.call(request.into()).await? else { return Err("unexpected response to Fetch".into()) };
        let p = r.responses.first().and_then(|t| t.partitions.first()).ok_or("empty Fetch response")?;
        if p.error_code != 0 {
            return Err(format!("Fetch failed with error {}", p.error_code).into());
        }
        // `records` is nullable in the 3.9 specs and not in later ones: `From` covers both.
        Ok(Option::<Bytes>::from(p.records.clone()).unwrap_or_default())
    }
}

struct Args {
    bootstrap: String,
    sasl_plain: Option<(String, String)>,
    topic: String,
    count: usize,
}

fn parse_args() -> Result<Args> {
    let mut args = Args { bootstrap: "127.0.0.1:9092".into(), sasl_plain: None, topic: "kwire-example".into(), count: 100 };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--bootstrap" => args.bootstrap = value()?,
            "--topic" => args.topic = value()?,
            "--count" => args.count = value()?.parse()?,
            "--sasl-plain" => {
                let v = value()?;
                let (u, p) = v.split_once(':').ok_or("--sasl-plain takes USER:PASS")?;
                args.sasl_plain = Some((u.to_owned(), p.to_owned()));
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(args)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = parse_args()?;
    let mut client = Client::connect(&args.bootstrap).await?;
    let used: Vec<String> = client.versions.iter().map(|(api, v)| format!("{}={v}", api.name())).collect();
    println!("negotiated: {}", used.join(" "));
    if let Some((user, pass)) = &args.sasl_plain {
        client.sasl_plain(user, pass).await?;
        println!("authenticated as {user} with SASL/PLAIN");
    }
    let (topic_id, partitions) = client.metadata(&args.topic).await?;
    println!("topic {} has {partitions} partition(s)", args.topic);

    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    let mut builder = RecordBatchBuilder::new().compression(Compression::None);
    let mut sent = Vec::new();
    for i in 0..args.count {
        let key = Bytes::from(format!("key-{i}"));
        let value = Bytes::from(format!("value-{i}-{now}"));
        builder.append(Record::new(i as i64, now, Some(key.clone()), Some(value.clone())))?;
        sent.push((key, value));
    }
    let base_offset = client.produce(&args.topic, topic_id, builder.build()?).await?;
    println!("produced {} records at offset {base_offset}", sent.len());

    // Bounded: each round returns at least one batch or waits max_wait_ms.
    let mut received = Vec::new();
    let mut offset = base_offset;
    for _ in 0..100 {
        if received.len() >= sent.len() {
            break;
        }
        let records = client.fetch(&args.topic, topic_id, offset).await?;
        let (decoded, _partial) = decode_all(records, &DecodeOptions::default())?;
        let from = offset;
        for r in decoded.into_iter().filter(|r| r.offset >= from) {
            offset = r.offset + 1;
            received.push((r.key.unwrap_or_default(), r.value.unwrap_or_default()));
        }
    }
    received.truncate(sent.len());
    if received != sent {
        return Err(format!("fetched {} records that differ from the {} produced", received.len(), sent.len()).into());
    }
    println!("fetched {} records back, identical", received.len());
    Ok(())
}
