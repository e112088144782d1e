//! kwire-fake driven by kwire-client over the in-memory transport, on tokio's paused clock: the
//! semantics a client relies on, each checked on the fake's log and journal.

use std::time::Duration;

use kwire::{ApiKey, ErrorCode};
use kwire_client::{
    AclBinding, AclOperation, AclPermission, Admin, Client, ClientConfig, Connector, Consumer, ConsumerConfig, NewTopic, OffsetReset, PatternType, Producer,
    ProducerConfig, ProducerRecord, ResourceType, Sasl, TopicPartition,
};
use kwire_fake::{Action, Cluster, ClusterConfig, Hook};

async fn client(cluster: &Cluster) -> Client {
    let config = ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).seed(1).request_timeout(Duration::from_secs(5));
    Client::connect(config).await.expect("connected")
}

fn producer(client: Client) -> Producer {
    Producer::new(client, ProducerConfig { enable_metrics_push: false, ..Default::default() }).expect("a producer")
}

#[tokio::test(start_paused = true)]
async fn a_lost_produce_response_is_retried_and_written_once() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(7));
    cluster.create_topic("orders", 3, 3).unwrap();
    cluster.hook(Hook::on(ApiKey::Produce).once().action(Action::DropResponse));
    let producer = producer(client(&cluster).await);
    let written = producer.send(ProducerRecord::new("orders", "hello").partition(0)).await.unwrap().await.unwrap();
    let log = cluster.records("orders", 0).unwrap();
    assert_eq!(log.len(), 1, "written once though sent twice");
    assert_eq!(log[0].record.offset, written.offset);
    let produces: Vec<_> = cluster.journal().into_iter().filter(|e| e.api == ApiKey::Produce).collect();
    assert_eq!(produces.len(), 2, "the first attempt and its retry");
    assert_eq!(produces[0].action.as_deref(), Some("DropResponse"));
}

#[tokio::test(start_paused = true)]
async fn a_refused_produce_is_retried_on_the_new_leader_after_a_move() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(3));
    cluster.create_topic("moves", 1, 3).unwrap();
    let producer = producer(client(&cluster).await);
    producer.send(ProducerRecord::new("moves", "a")).await.unwrap().await.unwrap();
    let (leader, epoch) = cluster.leader("moves", 0).unwrap();
    let to = (leader + 1) % 3;
    cluster.move_leader("moves", 0, to).unwrap();
    assert_eq!(cluster.leader("moves", 0).unwrap(), (to, epoch + 1));
    producer.send(ProducerRecord::new("moves", "b")).await.unwrap().await.unwrap();
    let values: Vec<_> = cluster.records("moves", 0).unwrap().into_iter().map(|r| r.record.value.unwrap()).collect();
    assert_eq!(values, ["a", "b"]);
    // The old leader refused the second record first, NOT_LEADER_OR_FOLLOWER.
    assert!(cluster.journal().iter().any(|e| e.api == ApiKey::Produce && e.broker == leader && e.errors.contains(&ErrorCode::NOT_LEADER_OR_FOLLOWER)));
}

#[tokio::test(start_paused = true)]
async fn log_append_time_topics_stamp_the_broker_time() {
    let cluster = Cluster::start(ClusterConfig::default().seed(1).clock_start_ms(1_000_000));
    cluster.create_topic("stamped", 1, 1).unwrap();
    cluster.set_topic_config("stamped", "message.timestamp.type", "LogAppendTime").unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let producer = producer(client(&cluster).await);
    let m = producer.send(ProducerRecord::new("stamped", "x").timestamp(5)).await.unwrap().await.unwrap();
    let logged = cluster.records("stamped", 0).unwrap();
    assert!(m.timestamp >= 1_010_000, "the append time, not the producer's 5: {}", m.timestamp);
    assert_eq!(logged[0].record.timestamp, m.timestamp);
}

#[tokio::test(start_paused = true)]
async fn admin_creates_and_refuses_topics_as_kafka_does() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(2));
    let admin = Admin::new(client(&cluster).await);
    admin.create_topic(NewTopic::new("made", 4)).await.unwrap();
    assert_eq!(cluster.offsets("made", 3).unwrap(), (0, 0, 0));
    let again = admin.create_topic(NewTopic::new("made", 4)).await.unwrap_err();
    assert_eq!(again.code(), Some(ErrorCode::TOPIC_ALREADY_EXISTS));
    let bad = admin.create_topic(NewTopic::new("no/slash", 1)).await.unwrap_err();
    assert_eq!(bad.code(), Some(ErrorCode::INVALID_TOPIC_EXCEPTION));
}

#[tokio::test(start_paused = true)]
async fn a_stopped_broker_hands_its_partitions_over() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(9));
    cluster.create_topic("failover", 3, 3).unwrap();
    let producer = producer(client(&cluster).await);
    for i in 0..30 {
        producer.send(ProducerRecord::new("failover", format!("v{i}")).partition(i % 3)).await.unwrap();
    }
    producer.flush().await.unwrap();
    let (leader, _) = cluster.leader("failover", 0).unwrap();
    cluster.stop_broker(leader).unwrap();
    assert_ne!(cluster.leader("failover", 0).unwrap().0, leader);
    for i in 30..60 {
        producer.send(ProducerRecord::new("failover", format!("v{i}")).partition(i % 3)).await.unwrap();
    }
    producer.flush().await.unwrap();
    let total: usize = (0..3).map(|p| cluster.records("failover", p).unwrap().len()).sum();
    assert_eq!(total, 60);
}

/// The authorizer judges each principal's produce, fetch, create and delete: nothing without an
/// ACL (TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not), each operation once an ACL
/// allows it, and a super user anything.
#[tokio::test(start_paused = true)]
async fn acls_decide_what_each_principal_may_do() {
    let cluster = Cluster::start(ClusterConfig::default().seed(3).sasl_plain("admin", "a").sasl_plain("alice", "b").acl_authorizer(&["User:admin"]));
    let as_user = |user: &str, password: &str| {
        ClientConfig::new(&cluster.bootstrap())
            .connector(Connector::new(cluster.connector()))
            .sasl(Sasl::plain(user, password))
            .seed(1)
            .request_timeout(Duration::from_secs(5))
    };
    let admin = Admin::new(Client::connect(as_user("admin", "a")).await.unwrap());
    admin.create_topic(NewTopic::new("guarded", 1)).await.expect("a super user creates");
    let alice = Client::connect(as_user("alice", "b")).await.unwrap();
    let refused = |e: kwire_client::Error| assert!(e.to_string().contains("TOPIC_AUTHORIZATION_FAILED"), "{e}");

    refused(Admin::new(alice.clone()).create_topic(NewTopic::new("alices", 1)).await.unwrap_err());
    for deleted in Admin::new(alice.clone()).delete_topics(&["guarded", "no-such-topic"]).await.unwrap() {
        refused(deleted.unwrap_err());
    }
    assert!(cluster.records("guarded", 0).is_ok(), "not deleted");

    let allow = |resource: ResourceType, name: &str, operation: AclOperation| {
        let mut b = AclBinding::new(resource, name, "User:alice", operation, AclPermission::Allow);
        if name.ends_with('-') {
            b.pattern_type = PatternType::Prefixed;
        }
        b
    };
    // WRITE and DESCRIBE on the topic: alice produces (a bare produce, no metadata of hers
    // needed beyond it); CREATE on the prefix alices-: she creates there.
    let acls = [allow(ResourceType::Topic, "guarded", AclOperation::Write), allow(ResourceType::Topic, "alices-", AclOperation::Create)];
    for created in admin.create_acls(&acls).await.unwrap() {
        created.unwrap();
    }
    let written = producer(alice.clone()).send(ProducerRecord::new("guarded", "by alice").partition(0)).await.unwrap().await.expect("WRITE allows it");
    assert_eq!(written.offset, 0);
    Admin::new(alice.clone()).create_topic(NewTopic::new("alices-own", 1)).await.expect("CREATE on the prefix allows it");

    // No READ yet: her fetch is refused; with it, she reads what she wrote.
    let read = |alice: Client| async move {
        let mut consumer = Consumer::new(alice, ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, ..Default::default() }).unwrap();
        consumer.assign([TopicPartition::new("guarded", 0)]).unwrap();
        consumer.poll(Duration::from_secs(2)).await.map(|records| records.len())
    };
    refused(read(alice.clone()).await.unwrap_err());
    admin.create_acls(&[allow(ResourceType::Topic, "guarded", AclOperation::Read)]).await.unwrap().remove(0).unwrap();
    assert_eq!(read(alice).await.expect("READ allows it"), 1);
    let fetch_errors: Vec<ErrorCode> = cluster.journal().iter().filter(|e| e.api == ApiKey::Fetch).flat_map(|e| e.errors.clone()).collect();
    assert!(fetch_errors.contains(&ErrorCode::TOPIC_AUTHORIZATION_FAILED), "{fetch_errors:?}");
}

/// A share consumer needs READ on its group and on the topic, as a consumer does: with
/// DESCRIBE on the topic it joins and is assigned the partition, but its ShareFetch is refused
/// there (TOPIC_AUTHORIZATION_FAILED) until READ is granted, and then it gets the records.
#[tokio::test(start_paused = true)]
async fn share_fetches_need_read_on_the_topic() {
    use kwire_client::{ShareConsumer, ShareConsumerConfig};
    let cluster = Cluster::start(ClusterConfig::default().seed(5).sasl_plain("admin", "a").sasl_plain("alice", "b").acl_authorizer(&["User:admin"]));
    let as_user = |user: &str, password: &str| {
        ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).sasl(Sasl::plain(user, password)).seed(2)
    };
    let admin = Client::connect(as_user("admin", "a")).await.unwrap();
    Admin::new(admin.clone()).create_topic(NewTopic::new("shared", 1)).await.unwrap();
    let p = producer(admin.clone());
    for i in 0..3 {
        p.send(ProducerRecord::new("shared", format!("r{i}")).partition(0)).await.unwrap().await.unwrap();
    }
    cluster.set_group_config("workers", "share.auto.offset.reset", "earliest").unwrap();
    let allow = |resource: ResourceType, name: &str, operation: AclOperation| AclBinding::new(resource, name, "User:alice", operation, AclPermission::Allow);
    let acls = [allow(ResourceType::Group, "workers", AclOperation::Read), allow(ResourceType::Topic, "shared", AclOperation::Describe)];
    for created in Admin::new(admin.clone()).create_acls(&acls).await.unwrap() {
        created.unwrap();
    }
    let mut consumer = ShareConsumer::new(Client::connect(as_user("alice", "b")).await.unwrap(), ShareConsumerConfig::new("workers")).unwrap();
    consumer.subscribe(&["shared"]).unwrap();
    let refused =
        |cluster: &Cluster| cluster.journal().iter().filter(|e| e.api == ApiKey::ShareFetch).any(|e| e.errors.contains(&ErrorCode::TOPIC_AUTHORIZATION_FAILED));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !refused(&cluster) {
        assert!(tokio::time::Instant::now() < deadline, "no refused ShareFetch");
        let got = consumer.poll(Duration::from_millis(500)).await.map(|r| r.len()).unwrap_or(0);
        assert_eq!(got, 0, "records without READ on the topic");
    }
    Admin::new(admin).create_acls(&[allow(ResourceType::Topic, "shared", AclOperation::Read)]).await.unwrap().remove(0).unwrap();
    let mut got = 0;
    while got < 3 {
        assert!(tokio::time::Instant::now() < deadline, "{got} records after READ");
        got += consumer.poll(Duration::from_millis(500)).await.map(|r| r.len()).unwrap_or(0);
    }
}
