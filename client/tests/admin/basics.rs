//! Admin operations against the real broker.

use crate::common;

use common::{unique, Broker};
use kwire_client::ConfigEntry;
use kwire_client::{Admin, Client, ClientConfig, ConfigOp, ConfigResource, Error, NewTopic, Sasl, ScramChange, ScramMechanism};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_partitions_configs_cluster() {
    let Some(b) = Broker::from_env("topics_partitions_configs_cluster") else { return };
    let admin = Admin::new(b.client().await);
    let name = unique("kw-admin");

    let created = admin.create_topic(NewTopic::new(&name, 2).replication_factor(1).config("retention.ms", "3600000")).await.unwrap();
    assert_eq!((created.partitions, created.replication_factor), (2, 1));
    assert_ne!(created.id, kwire::Uuid::ZERO, "CreateTopics v7+ returns the topic id");
    // Again: a typed, non-retriable TOPIC_ALREADY_EXISTS.
    let err = admin.create_topic(NewTopic::new(&name, 2)).await.unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("TOPIC_ALREADY_EXISTS"), "{err}");
    assert!(!err.is_retriable());

    common::eventually("the new topic listed with 2 partitions", || async {
        admin.list_topics(false).await.unwrap().contains(&name)
            && admin.describe_topics(&[&name]).await.unwrap().remove(0).is_ok_and(|t| t.partitions.len() == 2)
    })
    .await;
    let t = admin.describe_topics(&[&name]).await.unwrap().remove(0).unwrap();
    assert_eq!(t.partitions.len(), 2);
    assert_eq!(t.id, created.id);
    assert!(t.partitions.iter().all(|p| p.leader == 1 && p.replicas == vec![1]));

    admin.create_partitions(&[(&name, 3)]).await.unwrap().remove(0).unwrap();
    common::eventually("3 partitions", || async { admin.describe_topics(&[&name]).await.unwrap().remove(0).unwrap().partitions.len() == 3 }).await;
    let err = admin.create_partitions(&[(&name, 2)]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("INVALID_PARTITIONS"), "{err}");

    let value = |entries: &[ConfigEntry], key: &str| entries.iter().find(|e| e.name == key).and_then(|e| e.value.clone());
    let configs = admin.describe_configs(ConfigResource::Topic, &name, None).await.unwrap();
    assert_eq!(value(&configs, "retention.ms").as_deref(), Some("3600000"));
    // Changes reach the broker through the metadata log: bounded waits for them to show.
    let settled = |expected: Vec<(&'static str, &'static str)>| {
        let (admin, name) = (admin.clone(), name.clone());
        async move {
            let keys: Vec<&str> = expected.iter().map(|(k, _)| *k).collect();
            for _ in 0..100 {
                let configs = admin.describe_configs(ConfigResource::Topic, &name, Some(&keys)).await.unwrap();
                if expected.iter().all(|(k, v)| value(&configs, k).as_deref() == Some(*v)) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            panic!("configs of {name} never became {expected:?}");
        }
    };
    admin
        .alter_configs(ConfigResource::Topic, &name, &[("retention.ms", ConfigOp::Set("7200000".into())), ("cleanup.policy", ConfigOp::Set("compact".into()))])
        .await
        .unwrap();
    settled(vec![("retention.ms", "7200000"), ("cleanup.policy", "compact")]).await;
    admin.alter_configs(ConfigResource::Topic, &name, &[("cleanup.policy", ConfigOp::Delete)]).await.unwrap();
    settled(vec![("cleanup.policy", "delete")]).await;
    let broker = admin.describe_configs(ConfigResource::Broker, "1", Some(&["num.partitions"])).await.unwrap();
    assert_eq!(value(&broker, "num.partitions").as_deref(), Some("1"));

    let cluster = admin.describe_cluster().await.unwrap();
    assert_eq!(cluster.brokers.len(), 1);
    assert_eq!(Some(cluster.cluster_id.as_str()), b.vars.get("KAFKA_CLUSTER_ID").map(String::as_str));

    admin.delete_topics(&[&name]).await.unwrap().remove(0).unwrap();
    let err = admin.delete_topics(&[&name]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("UNKNOWN_TOPIC_OR_PARTITION"), "{err}");
    let err = admin.describe_topics(&["kw-no-such-topic"]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("UNKNOWN_TOPIC_OR_PARTITION"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_scram_users_can_log_in() {
    let Some(b) = Broker::from_env("created_scram_users_can_log_in") else { return };
    let admin = Admin::new(b.client().await);
    let user = unique("kw-user");
    let results = admin
        .alter_scram_credentials(&[ScramChange::Upsert { user: user.clone(), mechanism: ScramMechanism::Sha256, password: "pw-256".into(), iterations: 4096 }])
        .await
        .unwrap();
    results.into_iter().for_each(|r| r.unwrap());
    admin
        .alter_scram_credentials(&[ScramChange::Upsert { user: user.clone(), mechanism: ScramMechanism::Sha512, password: "pw-512".into(), iterations: 8192 }])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    // Described back: both mechanisms with their iterations, never a secret.
    common::eventually("both credentials described", || async {
        admin.describe_scram_credentials(Some(&[&user])).await.unwrap().first().is_some_and(|(_, r)| r.as_ref().is_ok_and(|c| c.len() == 2))
    })
    .await;
    let (name, creds) = admin.describe_scram_credentials(Some(&[&user])).await.unwrap().remove(0);
    let mut creds = creds.unwrap();
    creds.sort_by_key(|c| c.iterations);
    assert_eq!(name, user);
    assert_eq!(
        creds,
        vec![
            kwire_client::ScramCredential { mechanism: Some(ScramMechanism::Sha256), iterations: 4096 },
            kwire_client::ScramCredential { mechanism: Some(ScramMechanism::Sha512), iterations: 8192 }
        ]
    );
    let sasl = b.var("SASL_PLAINTEXT");
    // Credentials propagate through the metadata log: bounded wait.
    let mut last = None;
    for _ in 0..50 {
        match Client::connect(ClientConfig::new(sasl).sasl(Sasl::scram_sha256(&user, "pw-256"))).await {
            Ok(_) => {
                last = None;
                break;
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(last.is_none(), "{last:?}");
    Client::connect(ClientConfig::new(sasl).sasl(Sasl::scram_sha512(&user, "pw-512"))).await.expect("SHA-512 credential");
    let err = Client::connect(ClientConfig::new(sasl).sasl(Sasl::scram_sha512(&user, "pw-256"))).await.err().expect("wrong password");
    assert!(matches!(err, Error::Authentication { .. }), "{err:?}");
    // Iterations out of Kafka's range: a typed broker error.
    let err = admin
        .alter_scram_credentials(&[ScramChange::Upsert { user: user.clone(), mechanism: ScramMechanism::Sha256, password: "x".into(), iterations: 10 }])
        .await
        .unwrap()
        .remove(0)
        .unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("UNACCEPTABLE_CREDENTIAL"), "{err}");
    admin.alter_scram_credentials(&[ScramChange::Delete { user: user.clone(), mechanism: ScramMechanism::Sha256 }]).await.unwrap().remove(0).unwrap();
}

/// Kafka's own `Admin` reading what kwire's wrote, and writing what kwire's reads: ACLs,
/// quotas, a group's offsets, the log start after DeleteRecords, features, the quorum.
const ADMIN_VIEW: &str = r#"
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.quota.*;

public class AdminView {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        String mode = args[1];
        try (Admin a = Admin.create(p)) {
            if (mode.equals("commit")) {
                // commit GROUP TOPIC P=OFFSET...
                Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
                for (int i = 4; i < args.length; i++) {
                    String[] kv = args[i].split("=");
                    m.put(new TopicPartition(args[3], Integer.parseInt(kv[0])), new OffsetAndMetadata(Long.parseLong(kv[1]), "java"));
                }
                a.alterConsumerGroupOffsets(args[2], m).all().get();
                return;
            }
            // dump GROUP TOPIC PARTITIONS USER
            String group = args[2], topic = args[3], user = args[5];
            int partitions = Integer.parseInt(args[4]);
            for (AclBinding b : a.describeAcls(AclBindingFilter.ANY).values().get()) {
                System.out.println("ACL " + b.pattern().resourceType() + " " + b.pattern().name() + " " + b.pattern().patternType() + " "
                    + b.entry().principal() + " " + b.entry().host() + " " + b.entry().operation() + " " + b.entry().permissionType());
            }
            ClientQuotaFilter qf = ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntity("user", user)));
            for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : a.describeClientQuotas(qf).entities().get().entrySet()) {
                for (Map.Entry<String, Double> v : new TreeMap<>(e.getValue()).entrySet()) {
                    System.out.println("QUOTA " + new TreeMap<>(e.getKey().entries()) + " " + v.getKey() + "=" + v.getValue());
                }
            }
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet()) {
                System.out.println("OFFSET " + e.getKey().topic() + " " + e.getKey().partition() + " " + e.getValue().offset() + " " + e.getValue().metadata());
            }
            Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
            for (int i = 0; i < partitions; i++) earliest.put(new TopicPartition(topic, i), OffsetSpec.earliest());
            for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : a.listOffsets(earliest).all().get().entrySet()) {
                System.out.println("EARLIEST " + e.getKey().partition() + " " + e.getValue().offset());
            }
            FeatureMetadata f = a.describeFeatures().featureMetadata().get();
            for (Map.Entry<String, FinalizedVersionRange> e : f.finalizedFeatures().entrySet()) {
                System.out.println("FINALIZED " + e.getKey() + " " + e.getValue().maxVersionLevel());
            }
            for (Map.Entry<String, SupportedVersionRange> e : f.supportedFeatures().entrySet()) {
                System.out.println("SUPPORTED " + e.getKey() + " " + e.getValue().minVersion() + " " + e.getValue().maxVersion());
            }
            QuorumInfo q = a.describeMetadataQuorum().quorumInfo().get();
            StringBuilder voters = new StringBuilder();
            q.voters().stream().map(QuorumInfo.ReplicaState::replicaId).sorted().forEach(v -> voters.append(v).append(','));
            System.out.println("QUORUM " + q.leaderId() + " " + voters);
        }
    }
}
"#;

/// What kwire's admin writes, Kafka's own `Admin` reads back identically, and the reverse:
/// ACLs, client quotas, a group's committed offsets (both ways), the log start offsets after
/// DeleteRecords; features and the metadata quorum described alike. Then groups: a classic
/// consumer group listed and described with its members' partitions, its offsets deleted,
/// the group deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_admin_agrees_on_acls_quotas_offsets_records_features() {
    use kwire_client::{
        AclBinding, AclBindingFilter, AclOperation, AclPermission, OffsetAndMetadata, OffsetSpec, PatternType, Producer, ProducerConfig, ProducerRecord,
        QuotaAlteration, QuotaFilter, ResourceType, TopicPartition,
    };
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::Duration;

    let Some(b) = Broker::from_env("kafka_admin_agrees_on_acls_quotas_offsets_records_features") else { return };
    let admin = Admin::new(b.client().await);
    let (topic, group, user) = (unique("kw-adm"), unique("kw-adm-group"), unique("kw-adm-user"));
    admin.create_topic(NewTopic::new(&topic, 3).replication_factor(1)).await.unwrap();
    let producer = Producer::new(b.client().await, ProducerConfig::default()).unwrap();
    for i in 0..30 {
        producer.send(ProducerRecord::new(&topic, format!("v{i}")).partition(i % 3)).await.unwrap().await.unwrap();
    }
    producer.close().await.unwrap();

    // ACLs: literal and prefixed, allow and deny.
    let acls = vec![
        AclBinding::new(ResourceType::Topic, &topic, &format!("User:{user}"), AclOperation::Read, AclPermission::Allow),
        AclBinding {
            pattern_type: PatternType::Prefixed,
            host: "127.0.0.1".into(),
            ..AclBinding::new(ResourceType::Group, "kw-adm-", &format!("User:{user}"), AclOperation::Describe, AclPermission::Deny)
        },
    ];
    admin.create_acls(&acls).await.unwrap().into_iter().for_each(|r| r.unwrap());
    let mine = AclBindingFilter { principal: Some(format!("User:{user}")), ..AclBindingFilter::any() };
    common::eventually("the ACLs described", || async { admin.describe_acls(&mine).await.unwrap().len() == 2 }).await;
    let mut expected_acls = acls.clone();
    expected_acls.sort();
    assert_eq!(admin.describe_acls(&mine).await.unwrap(), expected_acls);
    // Quotas for the user.
    let entity: kwire_client::QuotaEntity = [("user".to_owned(), Some(user.clone()))].into();
    let ops = vec![("producer_byte_rate".to_owned(), Some(1048576.0)), ("consumer_byte_rate".to_owned(), Some(2097152.0))];
    admin.alter_client_quotas(&[QuotaAlteration { entity: entity.clone(), ops }]).await.unwrap().remove(0).unwrap();
    let filter = QuotaFilter { components: vec![("user".into(), Some(Some(user.clone())))], strict: true };
    common::eventually("the quotas described", || async { admin.describe_client_quotas(&filter).await.unwrap().len() == 1 }).await;
    let quotas = admin.describe_client_quotas(&filter).await.unwrap();
    assert_eq!(quotas, vec![(entity.clone(), [("consumer_byte_rate".to_owned(), 2097152.0), ("producer_byte_rate".to_owned(), 1048576.0)].into())]);
    // A group's offsets, set here; records before offset 4 of partition 1 deleted.
    let tp = |p| TopicPartition::new(topic.clone(), p);
    let offsets: BTreeMap<_, _> =
        [(tp(0), OffsetAndMetadata { metadata: Some("kw".into()), ..OffsetAndMetadata::new(3) }), (tp(2), OffsetAndMetadata::new(7))].into();
    admin.alter_group_offsets(&group, &offsets).await.unwrap();
    // No metadata is committed as the empty string (as Java's OffsetAndMetadata does).
    let read_back: BTreeMap<_, _> =
        offsets.iter().map(|(tp, o)| (tp.clone(), OffsetAndMetadata { metadata: Some(o.metadata.clone().unwrap_or_default()), ..o.clone() })).collect();
    assert_eq!(admin.list_group_offsets(&group, None).await.unwrap(), read_back);
    let deleted = admin.delete_records(&[(tp(1), 4)]).await.unwrap().remove(0).unwrap();
    assert_eq!(deleted.low_watermark, 4);
    let listed = admin.list_offsets(&[(tp(0), OffsetSpec::Earliest), (tp(1), OffsetSpec::Earliest), (tp(2), OffsetSpec::Latest)], false).await.unwrap();
    assert_eq!((listed[&tp(0)].offset, listed[&tp(1)].offset, listed[&tp(2)].offset), (0, 4, 10));
    // A partition given twice: its last spec.
    let listed = admin.list_offsets(&[(tp(1), OffsetSpec::Latest), (tp(1), OffsetSpec::Earliest)], false).await.unwrap();
    assert_eq!(listed[&tp(1)].offset, 4);

    let dir = std::env::temp_dir().join(unique("kw-admin-java"));
    let features = admin.describe_features().await.unwrap();
    let quorum = admin.describe_metadata_quorum().await.unwrap();
    let out = common::java(&b, &dir, "AdminView.java", ADMIN_VIEW, &[b.var("PLAINTEXT"), "dump", &group, &topic, "3", &user], Duration::from_secs(90)).await;
    let lines = |prefix: &str| -> BTreeSet<String> { out.lines().filter_map(|l| l.strip_prefix(prefix)).map(str::to_owned).collect() };
    let java_acls: BTreeSet<String> = lines("ACL ").into_iter().filter(|l| l.contains(&user)).collect();
    let ours: BTreeSet<String> = acls
        .iter()
        .map(|a| {
            let upper = |s: String| {
                s.chars().enumerate().fold(String::new(), |mut o, (i, c)| {
                    // Java prints enum names: TransactionalId -> TRANSACTIONAL_ID.
                    if c.is_uppercase() && i > 0 {
                        o.push('_')
                    }
                    o.push(c.to_ascii_uppercase());
                    o
                })
            };
            format!(
                "{} {} {} {} {} {} {}",
                upper(format!("{:?}", a.resource_type)),
                a.resource_name,
                upper(format!("{:?}", a.pattern_type)),
                a.principal,
                a.host,
                upper(format!("{:?}", a.operation)),
                upper(format!("{:?}", a.permission))
            )
        })
        .collect();
    assert_eq!(java_acls, ours, "{out}");
    assert_eq!(
        lines("QUOTA "),
        [format!("{{user={user}}} consumer_byte_rate=2097152.0"), format!("{{user={user}}} producer_byte_rate=1048576.0")].into(),
        "{out}"
    );
    assert_eq!(lines("OFFSET "), [format!("{topic} 0 3 kw"), format!("{topic} 2 7 ")].into(), "{out}");
    assert_eq!(lines("EARLIEST "), ["0 0".to_owned(), "1 4".to_owned(), "2 0".to_owned()].into(), "{out}");
    let finalized: BTreeSet<String> = features.features.iter().filter_map(|(k, f)| f.finalized.filter(|l| *l > 0).map(|l| format!("{k} {l}"))).collect();
    let java_finalized: BTreeSet<String> = lines("FINALIZED ").into_iter().filter(|l| !l.ends_with(" 0")).collect();
    assert_eq!(finalized, java_finalized, "{out}");
    let supported: BTreeSet<String> = features
        .features
        .iter()
        .filter(|(_, f)| f.max_supported > 0 || f.min_supported > 0)
        .map(|(k, f)| format!("{k} {} {}", f.min_supported, f.max_supported))
        .collect();
    assert_eq!(supported, lines("SUPPORTED "), "{out}");
    let voters: String = quorum.voters.iter().map(|v| v.replica_id).collect::<BTreeSet<_>>().iter().map(|v| format!("{v},")).collect();
    assert_eq!(lines("QUORUM "), [format!("{} {voters}", quorum.leader_id)].into(), "{out}");

    // Java commits; kwire reads.
    common::java(&b, &dir, "AdminView.java", ADMIN_VIEW, &[b.var("PLAINTEXT"), "commit", &group, &topic, "1=11", "2=12"], Duration::from_secs(90)).await;
    let after = admin.list_group_offsets(&group, Some(&[tp(1), tp(2)])).await.unwrap();
    assert_eq!(
        after,
        [
            (tp(1), OffsetAndMetadata { metadata: Some("java".into()), ..OffsetAndMetadata::new(11) }),
            (tp(2), OffsetAndMetadata { metadata: Some("java".into()), ..OffsetAndMetadata::new(12) })
        ]
        .into()
    );

    // Clean up: each deletion reported per item.
    let deleted = admin.delete_acls(std::slice::from_ref(&mine)).await.unwrap().remove(0).unwrap();
    assert_eq!(deleted, expected_acls);
    admin
        .alter_client_quotas(&[QuotaAlteration { entity, ops: vec![("producer_byte_rate".into(), None), ("consumer_byte_rate".into(), None)] }])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let gone = admin.delete_group_offsets(&group, &[tp(0)]).await.unwrap();
    assert!(gone[0].is_ok(), "{gone:?}");
    assert!(!admin.list_group_offsets(&group, None).await.unwrap().contains_key(&tp(0)));
    admin.delete_groups(&[&group]).await.unwrap().remove(0).unwrap();
    assert!(admin.list_group_offsets(&group, None).await.unwrap().is_empty());
    let err = admin.delete_groups(&[&group]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("GROUP_ID_NOT_FOUND"), "{err}");
}

/// A live consumer group, listed and described as Kafka describes it: its type, state,
/// members and their partitions; a member's offsets cannot be altered from outside while it
/// is live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_groups_are_listed_and_described() {
    use kwire_client::{Consumer, ConsumerConfig, GroupProtocol, OffsetAndMetadata, TopicPartition};
    use std::collections::BTreeSet;
    use std::time::Duration;

    let Some(b) = Broker::from_env("live_groups_are_listed_and_described") else { return };
    let admin = Admin::new(b.client().await);
    let topic = unique("kw-adm-live");
    admin.create_topic(NewTopic::new(&topic, 4).replication_factor(1)).await.unwrap();
    let mut protocols = vec![GroupProtocol::Classic];
    if common::kip848_supported(&b).await {
        protocols.push(GroupProtocol::Consumer);
    }
    for protocol in protocols {
        let group = unique("kw-adm-live-group");
        let config = ConsumerConfig { group_id: Some(group.clone()), group_protocol: protocol, ..ConsumerConfig::default() };
        let mut consumer = Consumer::new(b.client().await, config).unwrap();
        consumer.subscribe(&[&topic]).unwrap();
        for _ in 0..100 {
            consumer.poll(Duration::from_millis(100)).await.unwrap();
            if consumer.assignment().len() == 4 {
                break;
            }
        }
        assert_eq!(consumer.assignment().len(), 4, "{protocol:?}");
        let listed = admin.list_groups().await.unwrap();
        let g = listed.iter().find(|g| g.group_id == group).unwrap_or_else(|| panic!("{group} listed: {listed:?}"));
        assert_eq!(g.coordinator, 1);
        let d = admin.describe_groups(&[&group]).await.unwrap().remove(0).unwrap();
        let expected_type = if protocol == GroupProtocol::Classic { "classic" } else { "consumer" };
        assert_eq!((d.group_type.as_str(), d.state.as_str(), d.members.len()), (expected_type, "Stable", 1), "{d:?}");
        let held: BTreeSet<TopicPartition> = d.members[0].assignment.iter().cloned().collect();
        assert_eq!(held, consumer.assignment().iter().cloned().collect::<BTreeSet<_>>(), "{d:?}");
        if protocol == GroupProtocol::Classic {
            assert_eq!(d.protocol_type, "consumer");
            assert!(!d.assignor.is_empty(), "{d:?}");
        }
        // The group is live: the coordinator refuses offsets from outside its generation.
        let err = admin.alter_group_offsets(&group, &[(TopicPartition::new(topic.clone(), 0), OffsetAndMetadata::new(1))].into()).await.unwrap_err();
        assert!(err.code().is_some(), "{err:?}");
        let err = admin.delete_groups(&[&group]).await.unwrap().remove(0).unwrap_err();
        assert_eq!(err.code().and_then(|c| c.name()), Some("NON_EMPTY_GROUP"), "{err}");
        consumer.close().await.unwrap();
        common::eventually("the group empty", || async { admin.describe_groups(&[&group]).await.unwrap().remove(0).unwrap().members.is_empty() }).await;
        admin.delete_groups(&[&group]).await.unwrap().remove(0).unwrap();
    }
}

/// The cluster's other descriptions on one broker: its log directory holds the topic's
/// replicas; no reassignment runs; a preferred-leader election is not needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_dirs_reassignments_elections() {
    use kwire_client::TopicPartition;

    let Some(b) = Broker::from_env("log_dirs_reassignments_elections") else { return };
    let admin = Admin::new(b.client().await);
    let topic = unique("kw-adm-dirs");
    admin.create_topic(NewTopic::new(&topic, 2).replication_factor(1)).await.unwrap();
    common::eventually("the replicas in a log dir", || async {
        let dirs = admin.describe_log_dirs(&[]).await.unwrap();
        dirs.iter().flat_map(|d| &d.replicas).filter(|r| r.partition.topic == topic).count() == 2
    })
    .await;
    let dirs = admin.describe_log_dirs(&[1]).await.unwrap();
    assert!(dirs.iter().all(|d| d.broker == 1 && !d.path.is_empty() && d.total_bytes > 0), "{dirs:?}");
    let tps = [TopicPartition::new(topic.clone(), 0), TopicPartition::new(topic.clone(), 1)];
    assert!(admin.list_partition_reassignments(Some(&tps)).await.unwrap().is_empty());
    // Reassigning onto the replica it already has: accepted, and over at once.
    let r = admin.alter_partition_reassignments(&[(tps[0].clone(), Some(vec![1]))]).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    let elected = admin.elect_leaders(false, Some(&tps)).await.unwrap();
    assert_eq!(elected.len(), 2, "{elected:?}");
    assert!(elected.values().all(Result::is_ok), "{elected:?}");
    let err = admin.alter_partition_reassignments(&[(TopicPartition::new(topic.clone(), 9), Some(vec![1]))]).await.unwrap().remove(0).unwrap_err();
    assert!(err.code().is_some(), "{err:?}");
}

/// A transaction left hanging, seen and ended the operators' way: listed and described at its
/// coordinator with its partition, its producer described at the partition (the open
/// transaction holding the last stable offset back), aborted there with a marker (the last
/// stable offset moves up), and its transactional id fenced (the producer's next commit fails).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_transactions_listed_described_aborted_fenced() {
    use kwire_client::{OffsetSpec, Producer, ProducerConfig, ProducerRecord, TopicPartition, TransactionFilter};
    use std::time::Duration;

    let Some(b) = Broker::from_env("hanging_transactions_listed_described_aborted_fenced") else { return };
    let admin = Admin::new(b.client().await);
    let (topic, id) = (unique("kw-adm-txn"), unique("kw-adm-txn-id"));
    admin.create_topic(NewTopic::new(&topic, 1).replication_factor(1)).await.unwrap();
    let tp = TopicPartition::new(topic.clone(), 0);
    let config = ProducerConfig { transactional_id: Some(id.clone()), transaction_timeout: Duration::from_secs(60), ..Default::default() };
    let producer = Producer::new(b.client().await, config).unwrap();
    producer.init_transactions().await.unwrap();
    producer.begin_transaction().await.unwrap();
    for i in 0..5 {
        producer.send(ProducerRecord::new(&topic, format!("open-{i}")).partition(0)).await.unwrap().await.unwrap();
    }

    let listed = admin.list_transactions(&TransactionFilter::default()).await.unwrap();
    let mine = listed.iter().find(|t| t.transactional_id == id).unwrap_or_else(|| panic!("{id} listed: {listed:?}"));
    assert_eq!((mine.state.as_str(), mine.coordinator), ("Ongoing", 1));
    let ongoing = TransactionFilter { states: vec!["Ongoing".into()], ..Default::default() };
    assert!(admin.list_transactions(&ongoing).await.unwrap().iter().any(|t| t.transactional_id == id));
    let d = admin.describe_transactions(&[&id]).await.unwrap().remove(0).unwrap();
    assert_eq!((d.state.as_str(), d.producer_id, d.timeout_ms, d.partitions.clone()), ("Ongoing", mine.producer_id, 60_000, vec![tp.clone()]), "{d:?}");
    assert!(d.start_time_ms.is_some());
    let producers = admin.describe_producers(std::slice::from_ref(&tp)).await.unwrap().remove(&tp).unwrap().unwrap();
    let p = *producers.iter().find(|p| p.producer_id == mine.producer_id).unwrap_or_else(|| panic!("{producers:?}"));
    assert_eq!(p.current_transaction_start_offset, Some(0), "{p:?}");
    let lso = |admin: Admin, tp: TopicPartition| async move { admin.list_offsets(&[(tp.clone(), OffsetSpec::Latest)], true).await.unwrap()[&tp].offset };
    assert_eq!(lso(admin.clone(), tp.clone()).await, 0, "the open transaction holds the last stable offset");
    assert_eq!(admin.list_offsets(&[(tp.clone(), OffsetSpec::Latest)], false).await.unwrap()[&tp].offset, 5);

    admin.abort_transaction(&tp, &p).await.unwrap();
    assert_eq!(lso(admin.clone(), tp.clone()).await, 6, "the abort marker ends the transaction at the partition");
    let after = admin.describe_producers(std::slice::from_ref(&tp)).await.unwrap().remove(&tp).unwrap().unwrap();
    assert!(after.iter().all(|p| p.current_transaction_start_offset.is_none()), "{after:?}");

    let (fenced_id, fenced_epoch) = admin.fence_producers(&[&id]).await.unwrap().remove(0).unwrap();
    assert_eq!(fenced_id, mine.producer_id);
    assert!(fenced_epoch > d.producer_epoch, "{fenced_epoch} after {}", d.producer_epoch);
    let err = producer.commit_transaction().await.expect_err("a fenced producer cannot commit");
    println!("after fenceProducers: {err}");
    assert!(err.code().is_some(), "{err:?}");
    let err = admin.describe_transactions(&["kw-no-such-txn"]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("TRANSACTIONAL_ID_NOT_FOUND"), "{err}");
}

/// Delegation tokens over SASL (the broker issues none over an unauthenticated connection):
/// created for the connection's principal with a renewer, described with the same id and HMAC,
/// renewed, expired (then gone from the description); refused over PLAINTEXT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegation_tokens_created_described_renewed_expired() {
    let Some(b) = Broker::from_env("delegation_tokens_created_described_renewed_expired") else { return };
    let sasl = Client::connect(ClientConfig::new(b.var("SASL_PLAINTEXT")).sasl(Sasl::plain("alice", "alice-secret"))).await.unwrap();
    let admin = Admin::new(sasl);
    let token = admin.create_delegation_token(None, &["User:admin"], 3_600_000).await.unwrap();
    assert_eq!((token.owner.as_str(), token.requester.as_str()), ("User:alice", "User:alice"), "{token:?}");
    assert!(!token.token_id.is_empty() && !token.hmac.is_empty());
    assert!(token.issue_timestamp_ms <= token.expiry_timestamp_ms && token.expiry_timestamp_ms <= token.max_timestamp_ms, "{token:?}");
    assert_eq!(token.max_timestamp_ms - token.issue_timestamp_ms, 3_600_000);
    common::eventually("the token described", || async {
        admin.describe_delegation_tokens(Some(&["User:alice"])).await.unwrap().iter().any(|t| t.token_id == token.token_id)
    })
    .await;
    let described = admin.describe_delegation_tokens(Some(&["User:alice"])).await.unwrap().into_iter().find(|t| t.token_id == token.token_id).unwrap();
    assert_eq!(described, token);
    let renewed = admin.renew_delegation_token(&token.hmac, 600_000).await.unwrap();
    assert!(renewed >= token.issue_timestamp_ms + 600_000 && renewed <= token.max_timestamp_ms, "{renewed}");
    admin.expire_delegation_token(&token.hmac, -1).await.unwrap();
    common::eventually("the token gone", || async {
        !admin.describe_delegation_tokens(Some(&["User:alice"])).await.unwrap().iter().any(|t| t.token_id == token.token_id)
    })
    .await;
    let err = admin.renew_delegation_token(&token.hmac, 600_000).await.unwrap_err();
    assert!(err.code().is_some(), "{err:?}");
    let plaintext = Admin::new(b.client().await);
    let err = plaintext.create_delegation_token(None, &[], -1).await.unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"), "{err}");
}

/// A delegation token logs in: SCRAM with the token id, its HMAC and the `tokenauth`
/// extension, on SCRAM-SHA-256 and SCRAM-SHA-512; once the token expires it no longer does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegation_tokens_log_in_until_expired() {
    use kwire_client::{ConnectOptions, Connection};

    let Some(b) = Broker::from_env("delegation_tokens_log_in_until_expired") else { return };
    let sasl_addr = b.var("SASL_PLAINTEXT");
    let admin = Admin::new(Client::connect(ClientConfig::new(sasl_addr).sasl(Sasl::plain("alice", "alice-secret"))).await.unwrap());
    let token = admin.create_delegation_token(None, &[], -1).await.unwrap();
    let login = |mechanism: ScramMechanism| {
        let options = ConnectOptions { sasl: Some(Sasl::delegation_token(mechanism, &token)), ..Default::default() };
        async move { Connection::connect(sasl_addr, &options).await }
    };
    // The token reaches the broker's SCRAM credential cache through the metadata log.
    common::eventually("a token login", || async { login(ScramMechanism::Sha256).await.is_ok() }).await;
    for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
        let conn = login(mechanism).await.unwrap_or_else(|e| panic!("{mechanism:?}: {e}"));
        conn.request(kwire::messages::MetadataRequest::default()).await.expect("Metadata as the token's owner");
    }
    // A wrong HMAC is refused.
    let forged = kwire_client::DelegationToken { hmac: kwire::Bytes::from_static(b"forged"), ..token.clone() };
    let options = ConnectOptions { sasl: Some(Sasl::delegation_token(ScramMechanism::Sha256, &forged)), ..Default::default() };
    let err = Connection::connect(sasl_addr, &options).await.expect_err("a forged token");
    assert!(matches!(err, Error::Authentication { .. }), "{err:?}");
    admin.expire_delegation_token(&token.hmac, -1).await.unwrap();
    common::eventually("the expired token refused", || async { matches!(login(ScramMechanism::Sha256).await, Err(Error::Authentication { .. })) }).await;
}
