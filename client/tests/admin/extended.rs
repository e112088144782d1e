//! Admin operations against the real broker, beyond `admin.rs`: share and streams groups,
//! group filters and lag, topics by id and by page, validate-only, config synonyms and
//! documentation, replica log dirs, config resources, unregistering a broker. Each checks
//! the typed error where the broker (3.9) lacks the api.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{unique, Broker};
use kwire::ApiKey;
use kwire_client::{
    Admin, ConfigOp, ConfigResource, Error, GroupFilter, NewTopic, OffsetAndMetadata, PartitionLag, Producer, ProducerConfig, ProducerRecord, Route,
    ShareConsumer, ShareConsumerConfig, TopicCursor, TopicPartition,
};

/// Kafka's own `Admin` (4.x) describing what kwire's describes: a share group and its
/// offsets, a streams group; one line per fact, to compare.
const JAVA_VIEW: &str = r#"
import java.util.*;
import org.apache.kafka.clients.admin.*;

public class OpsView {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        try (Admin a = Admin.create(p)) {
            String mode = args[1], id = args[2];
            if (mode.equals("share")) {
                ShareGroupDescription d = a.describeShareGroups(List.of(id)).describedGroups().get(id).get();
                System.out.println("STATE " + d.groupState() + " " + d.members().size());
                for (Map.Entry<org.apache.kafka.common.TopicPartition, SharePartitionOffsetInfo> e
                        : a.listShareGroupOffsets(Map.of(id, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(id).get().entrySet()) {
                    System.out.println("OFFSET " + e.getKey().topic() + " " + e.getKey().partition() + " " + e.getValue().startOffset() + " " + e.getValue().lag().orElse(-1L));
                }
            } else {
                StreamsGroupDescription d = a.describeStreamsGroups(List.of(id)).describedGroups().get(id).get();
                System.out.println("STATE " + d.groupState() + " " + d.groupEpoch() + " " + d.topologyEpoch() + " " + d.assignorName().orElse("-"));
                for (StreamsGroupMemberDescription m : d.members()) {
                    for (StreamsGroupMemberAssignment.TaskIds t : m.assignment().activeTasks()) {
                        System.out.println("ACTIVE " + m.memberId() + " " + m.processId() + " " + t.subtopologyId() + " " + t.partitions());
                    }
                }
            }
        }
    }
}
"#;

/// Kafka's own `Admin` describing a broker config with synonyms and documentation.
const JAVA_CONFIG: &str = r#"
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.config.ConfigResource;

public class ConfigView {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        try (Admin a = Admin.create(p)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.BROKER, args[1]);
            Config c = a.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true)).all().get().get(r);
            ConfigEntry e = c.get(args[2]);
            System.out.println("TYPE " + e.type() + " " + (e.documentation() != null));
            for (ConfigEntry.ConfigSynonym s : e.synonyms()) System.out.println("SYN " + s.name() + " " + s.value() + " " + s.source());
        }
    }
}
"#;

fn code(e: &Error) -> Option<&'static str> {
    e.code().and_then(|c| c.name())
}

async fn produce(admin: &Admin, topic: &str, per_partition: &[usize]) {
    let p = Producer::new(admin.client().clone(), ProducerConfig::default()).unwrap();
    for (part, n) in per_partition.iter().enumerate() {
        for i in 0..*n {
            p.send(ProducerRecord::new(topic, format!("v-{part}-{i}")).partition(part as i32)).await.unwrap().await.unwrap();
        }
    }
    p.close().await.unwrap();
}

/// A share group read by one of ours: listed by type, described with its member's
/// partitions, its start offsets listed (at the end once every record is acknowledged),
/// reset by AlterShareGroupOffsets and deleted by DeleteShareGroupOffsets once the group is
/// empty; an unknown group is GROUP_ID_NOT_FOUND. On 3.9: UnsupportedVersion, typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_groups_listed_described_and_offsets() {
    let Some(b) = Broker::from_env("share_groups_listed_described_and_offsets") else { return };
    let admin = Admin::new(b.client().await);
    if !b.version().starts_with('4') {
        let e = admin.describe_share_groups(&["kw-any"]).await.unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { api: ApiKey::ShareGroupDescribe, .. }), "{e:?}");
        let e = admin.list_share_group_offsets("kw-any", None).await.unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { api: ApiKey::DescribeShareGroupOffsets, .. }), "{e:?}");
        let e = admin.alter_share_group_offsets("kw-any", &BTreeMap::new()).await.unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { api: ApiKey::AlterShareGroupOffsets, .. }), "{e:?}");
        let e = admin.delete_share_group_offsets("kw-any", &["t"]).await.unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { api: ApiKey::DeleteShareGroupOffsets, .. }), "{e:?}");
        return;
    }
    let (topic, group) = (unique("kw-ops-share"), unique("kw-ops-share-group"));
    admin.create_topic(NewTopic::new(&topic, 2)).await.unwrap();
    admin.alter_configs(ConfigResource::Group, &group, &[("share.auto.offset.reset", ConfigOp::Set("earliest".into()))]).await.unwrap();
    produce(&admin, &topic, &[5, 3]).await;

    let mut c = ShareConsumer::new(admin.client().clone(), ShareConsumerConfig::new(&group)).unwrap();
    c.subscribe(&[&topic]).unwrap();
    let mut got = 0;
    for _ in 0..60 {
        got += c.poll(Duration::from_millis(500)).await.unwrap().len();
        if got >= 8 {
            break;
        }
    }
    assert_eq!(got, 8);
    let listed = admin.list_groups_filtered(&GroupFilter::types(&["share"])).await.unwrap();
    let g = listed.iter().find(|g| g.group_id == group).unwrap_or_else(|| panic!("{group} not listed: {listed:?}"));
    assert_eq!(g.group_type, "share");
    assert!(listed.iter().all(|g| g.group_type == "share"), "{listed:?}");
    assert!(admin.list_groups_filtered(&GroupFilter::types(&["consumer"])).await.unwrap().iter().all(|g| g.group_id != group));

    let d = admin.describe_share_groups(&[&group, "kw-ops-no-such-share-group"]).await.unwrap();
    let live = d[0].as_ref().unwrap();
    assert_eq!((live.state.as_str(), live.members.len()), ("Stable", 1), "{live:?}");
    let mut held: Vec<TopicPartition> = live.members[0].assignment.clone();
    held.sort();
    assert_eq!(held, vec![TopicPartition::new(topic.clone(), 0), TopicPartition::new(topic.clone(), 1)]);
    assert!(live.group_epoch >= 1 && live.coordinator == 1, "{live:?}");
    let e = d[1].as_ref().unwrap_err();
    assert_eq!(code(e), Some("GROUP_ID_NOT_FOUND"), "{e:?}");

    // Closing acknowledges what was delivered: nothing left to deliver (the lag, v1 on 4.2+).
    // The start offset itself moves when the broker next persists the partition's state.
    c.close().await.unwrap();
    let tp = |p| TopicPartition::new(topic.clone(), p);
    common::eventually("no lag left", || async {
        let o = admin.list_share_group_offsets(&group, None).await.unwrap();
        o.len() == 2 && o.values().all(|r| r.as_ref().is_ok_and(|o| o.lag == Some(0)))
    })
    .await;
    common::eventually("the group empty", || async { admin.describe_share_groups(&[&group]).await.unwrap().remove(0).unwrap().members.is_empty() }).await;
    // Kafka's Admin sees the same group and offsets.
    let ours = admin.describe_share_groups(&[&group]).await.unwrap().remove(0).unwrap();
    let offsets = admin.list_share_group_offsets(&group, None).await.unwrap();
    let java = common::java(
        &b,
        &std::env::temp_dir().join(unique("kw-ops-java")),
        "OpsView.java",
        JAVA_VIEW,
        &[b.var("PLAINTEXT"), "share", &group],
        Duration::from_secs(90),
    )
    .await;
    let mut expected = vec![format!("STATE {} {}", ours.state, ours.members.len())];
    expected.extend(offsets.iter().map(|(tp, o)| {
        let o = o.as_ref().unwrap();
        format!("OFFSET {} {} {} {}", tp.topic, tp.partition, o.start_offset, o.lag.unwrap_or(-1))
    }));
    let mut got: Vec<String> = java.lines().map(str::to_owned).collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected, "{java}");
    let o = admin.list_share_group_offsets(&group, Some(&[tp(0)])).await.unwrap();
    assert_eq!(o.len(), 1, "{o:?}");
    let p0 = o[&tp(0)].as_ref().unwrap();
    assert!((0..=5).contains(&p0.start_offset) && p0.leader_epoch >= 0, "{p0:?}");

    let altered = admin.alter_share_group_offsets(&group, &[(tp(0), 1)].into()).await.unwrap();
    altered[&tp(0)].as_ref().unwrap();
    common::eventually("p0 back at 1", || async {
        admin.list_share_group_offsets(&group, Some(&[tp(0)])).await.unwrap().get(&tp(0)).is_some_and(|r| r.as_ref().is_ok_and(|o| o.start_offset == 1))
    })
    .await;
    // A member reads from the new start: the 4 records after offset 1.
    let mut c = ShareConsumer::new(admin.client().clone(), ShareConsumerConfig::new(&group)).unwrap();
    c.subscribe(&[&topic]).unwrap();
    let mut again = Vec::new();
    for _ in 0..40 {
        again.extend(c.poll(Duration::from_millis(500)).await.unwrap().into_iter().map(|r| (r.record.partition, r.record.offset)));
        if again.len() >= 4 {
            break;
        }
    }
    again.sort();
    assert_eq!(again, vec![(0, 1), (0, 2), (0, 3), (0, 4)]);
    // Not while a member is live.
    let e = admin.delete_share_group_offsets(&group, &[&topic]).await.unwrap_err();
    assert_eq!(code(&e), Some("NON_EMPTY_GROUP"), "{e:?}");
    c.close().await.unwrap();
    common::eventually("the group empty again", || async { admin.describe_share_groups(&[&group]).await.unwrap().remove(0).unwrap().members.is_empty() }).await;
    admin.delete_share_group_offsets(&group, &[&topic]).await.unwrap().remove(0).unwrap();
    common::eventually("the group's offsets gone", || async { admin.list_share_group_offsets(&group, None).await.unwrap().is_empty() }).await;
    admin.delete_groups(&[&group]).await.unwrap().remove(0).unwrap();
}

/// A streams group (KIP-1071): Kafka 4.4 has the streams protocol on without a config. A
/// member joins by StreamsGroupHeartbeat (what a Kafka Streams client sends), is listed by
/// type and described with its topology and tasks, and leaves; an unknown group is
/// GROUP_ID_NOT_FOUND. On 3.9: UnsupportedVersion, typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_groups_listed_and_described() {
    use kwire::messages::{
        streams_group_heartbeat_request::{Subtopology, Topology},
        StreamsGroupHeartbeatRequest,
    };

    let Some(b) = Broker::from_env("streams_groups_listed_and_described") else { return };
    let admin = Admin::new(b.client().await);
    if !b.version().starts_with('4') {
        let e = admin.describe_streams_groups(&["kw-any"]).await.unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { api: ApiKey::StreamsGroupDescribe, .. }), "{e:?}");
        return;
    }
    let (topic, group, member) = (unique("kw-ops-streams"), unique("kw-ops-streams-group"), unique("kw-ops-member"));
    admin.create_topic(NewTopic::new(&topic, 2)).await.unwrap();
    let heartbeat = |epoch: i32, join: bool| StreamsGroupHeartbeatRequest {
        group_id: group.clone().into(),
        member_id: member.clone().into(),
        member_epoch: epoch,
        rebalance_timeout_ms: if join { 30_000 } else { -1 },
        topology: join.then(|| Topology {
            epoch: 0,
            subtopologies: vec![Subtopology { subtopology_id: "0".into(), source_topics: vec![topic.clone().into()], ..Default::default() }],
            ..Default::default()
        }),
        active_tasks: join.then(Vec::new),
        standby_tasks: join.then(Vec::new),
        warmup_tasks: join.then(Vec::new),
        process_id: join.then(|| "kw-process".into()),
        client_tags: join.then(Vec::new),
        task_offsets: join.then(Vec::new),
        task_end_offsets: join.then(Vec::new),
        ..Default::default()
    };
    // One broker: it coordinates every group.
    let r = admin.client().send(Route::Any, heartbeat(0, true)).await.unwrap();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert!(r.member_epoch >= 1, "{r:?}");

    let listed = admin.list_groups_filtered(&GroupFilter::types(&["streams"])).await.unwrap();
    assert!(listed.iter().any(|g| g.group_id == group && g.group_type == "streams"), "{listed:?}");
    common::eventually("the member assigned both tasks", || async {
        admin
            .describe_streams_groups(&[&group])
            .await
            .unwrap()
            .remove(0)
            .is_ok_and(|d| d.members.first().is_some_and(|m| m.active_tasks.get("0").is_some_and(|p| p.len() == 2)))
            || {
                // The assignment reaches the member by its heartbeats.
                let _ = admin.client().send(Route::Any, heartbeat(r.member_epoch, false)).await;
                false
            }
    })
    .await;
    let d = admin.describe_streams_groups(&[&group, "kw-ops-no-such-streams-group"]).await.unwrap();
    let g = d[0].as_ref().unwrap();
    assert_eq!(g.subtopologies.len(), 1, "{g:?}");
    assert_eq!((g.subtopologies[0].id.as_str(), g.subtopologies[0].source_topics.clone()), ("0", vec![topic.clone()]));
    assert_eq!(g.topology_epoch, 0);
    let m = &g.members[0];
    assert_eq!((m.member_id.as_str(), m.process_id.as_str()), (member.as_str(), "kw-process"));
    assert_eq!(m.active_tasks.get("0"), Some(&vec![0, 1]), "{m:?}");
    let java = common::java(
        &b,
        &std::env::temp_dir().join(unique("kw-ops-java")),
        "OpsView.java",
        JAVA_VIEW,
        &[b.var("PLAINTEXT"), "streams", &group],
        Duration::from_secs(90),
    )
    .await;
    let state = java.lines().find_map(|l| l.strip_prefix("STATE ")).unwrap_or_default().to_owned();
    assert_eq!(state, format!("{} {} {} {}", g.state, g.group_epoch, g.topology_epoch, g.assignor.as_deref().unwrap_or("-")), "{java}");
    assert_eq!(java.lines().filter(|l| l.starts_with("ACTIVE ")).collect::<Vec<_>>(), vec![format!("ACTIVE {member} kw-process 0 [0, 1]")], "{java}");
    assert_eq!(code(d[1].as_ref().unwrap_err()), Some("GROUP_ID_NOT_FOUND"), "{:?}", d[1]);
    // Described as a consumer group it is not one: the classic fallback says so.
    assert!(admin.describe_groups(&[&group]).await.unwrap().remove(0).is_err_and(|e| e.code().is_some()));

    let r = admin.client().send(Route::Any, heartbeat(-1, false)).await.unwrap();
    assert_eq!(r.error_code, 0, "{r:?}");
    common::eventually("the streams group empty", || async {
        admin.describe_streams_groups(&[&group]).await.unwrap().remove(0).is_ok_and(|d| d.members.is_empty())
    })
    .await;
    // Its offsets are a consumer group's (Java's alter/list/deleteStreamsGroupOffsets are
    // OffsetCommit, OffsetFetch, OffsetDelete); deleteStreamsGroups is DeleteGroups.
    let tp0 = TopicPartition::new(topic.clone(), 0);
    admin.alter_group_offsets(&group, &[(tp0.clone(), OffsetAndMetadata::new(0))].into()).await.unwrap();
    assert_eq!(admin.list_group_offsets(&group, None).await.unwrap().get(&tp0).map(|o| o.offset), Some(0));
    admin.delete_group_offsets(&group, std::slice::from_ref(&tp0)).await.unwrap().remove(0).unwrap();
    assert!(admin.list_group_offsets(&group, None).await.unwrap().is_empty());
    admin.delete_groups(&[&group]).await.unwrap().remove(0).unwrap();
    let e = admin.describe_streams_groups(&[&group]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(code(&e), Some("GROUP_ID_NOT_FOUND"), "{e:?}");
}

/// A consumer group's lag per partition: committed offsets against the log ends the
/// producer left (10, 4 and 0 records); a group in no state but Empty is listed by state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_group_lag_and_state_filter() {
    let Some(b) = Broker::from_env("consumer_group_lag_and_state_filter") else { return };
    let admin = Admin::new(b.client().await);
    let (topic, group) = (unique("kw-ops-lag"), unique("kw-ops-lag-group"));
    admin.create_topic(NewTopic::new(&topic, 3)).await.unwrap();
    produce(&admin, &topic, &[10, 4, 0]).await;
    let tp = |p| TopicPartition::new(topic.clone(), p);
    admin
        .alter_group_offsets(&group, &[(tp(0), OffsetAndMetadata::new(3)), (tp(1), OffsetAndMetadata::new(4)), (tp(2), OffsetAndMetadata::new(0))].into())
        .await
        .unwrap();
    let lag = admin.consumer_group_lag(&group, false).await.unwrap();
    assert_eq!(
        lag,
        [
            (tp(0), PartitionLag { committed: 3, log_end: 10, lag: 7 }),
            (tp(1), PartitionLag { committed: 4, log_end: 4, lag: 0 }),
            (tp(2), PartitionLag { committed: 0, log_end: 0, lag: 0 }),
        ]
        .into()
    );
    assert_eq!(admin.consumer_group_lag(&group, true).await.unwrap(), lag, "no transactions: the last stable offsets are the ends");
    assert!(admin.consumer_group_lag("kw-ops-no-such-group", false).await.unwrap().is_empty());

    let empty = admin.list_groups_filtered(&GroupFilter::states(&["Empty"])).await.unwrap();
    assert!(empty.iter().any(|g| g.group_id == group), "{empty:?}");
    assert!(empty.iter().all(|g| g.state == "Empty"), "{empty:?}");
    let stable = admin.list_groups_filtered(&GroupFilter::states(&["Stable"])).await.unwrap();
    assert!(stable.iter().all(|g| g.group_id != group), "{stable:?}");
    admin.delete_groups(&[&group]).await.unwrap().remove(0).unwrap();
}

/// Topics: created with replica assignments, validated without being created, described by
/// DescribeTopicPartitions pages with a cursor, deleted by id; configs validated without
/// being changed, described with synonyms and documentation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_by_id_and_by_page_validate_only_config_synonyms() {
    let Some(b) = Broker::from_env("topics_by_id_and_by_page_validate_only_config_synonyms") else { return };
    let admin = Admin::new(b.client().await);
    let prefix = unique("kw-ops-page");
    let names = [format!("{prefix}-a"), format!("{prefix}-b"), format!("{prefix}-c")];
    let a = admin.create_topic(NewTopic::with_assignments(&names[0], [(0, vec![1]), (1, vec![1]), (2, vec![1])])).await.unwrap();
    assert_eq!((a.partitions, a.replication_factor), (3, 1));
    let bb = admin.create_topic(NewTopic::new(&names[1], 1)).await.unwrap();
    let c = admin.create_topic(NewTopic::new(&names[2], 2)).await.unwrap();

    // Validate-only: the would-be topic, not created; an invalid one, its error.
    let v = admin
        .validate_create_topics(&[NewTopic::new(format!("{prefix}-v"), 4), NewTopic::new(format!("{prefix}-w"), 1).config("retention.ms", "soon")])
        .await
        .unwrap();
    assert_eq!(v[0].as_ref().map(|t| t.partitions).ok(), Some(4), "{v:?}");
    assert_eq!(code(v[1].as_ref().unwrap_err()), Some("INVALID_CONFIG"), "{v:?}");
    assert_eq!(code(&admin.describe_topics(&[&format!("{prefix}-v")]).await.unwrap().remove(0).unwrap_err()), Some("UNKNOWN_TOPIC_OR_PARTITION"));

    // Pages of at most 2 partitions: a0 a1 | a2 b0 | c0 c1 (once every broker's metadata has
    // the three topics).
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    common::eventually("the three topics in the metadata", || async { admin.describe_topics_paged(&refs, 100).await.unwrap().iter().all(Result::is_ok) }).await;
    let mut pages = Vec::new();
    let mut cursor: Option<TopicCursor> = None;
    loop {
        let page = admin.describe_topic_partitions(&refs, cursor.as_ref(), 2).await.unwrap();
        let seen: Vec<(String, Vec<i32>)> = page
            .topics
            .iter()
            .map(|t| {
                let t = t.as_ref().unwrap();
                (t.name.clone(), t.partitions.iter().map(|p| p.info.index).collect())
            })
            .collect();
        pages.push(seen);
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let n = |i: usize| names[i].clone();
    assert_eq!(pages, vec![vec![(n(0), vec![0, 1])], vec![(n(0), vec![2]), (n(1), vec![0])], vec![(n(2), vec![0, 1])]], "{pages:?}");
    let all = admin.describe_topics_paged(&refs, 2).await.unwrap();
    let all: Vec<_> = all.into_iter().map(Result::unwrap).collect();
    assert_eq!(all.iter().map(|t| (t.name.clone(), t.id, t.partitions.len())).collect::<Vec<_>>(), vec![(n(0), a.id, 3), (n(1), bb.id, 1), (n(2), c.id, 2)]);
    assert!(all.iter().flat_map(|t| &t.partitions).all(|p| p.info.leader == 1 && p.info.replicas == vec![1] && p.info.isr == vec![1]));
    // Agrees with Metadata.
    let meta = admin.describe_topics(&refs).await.unwrap();
    for (paged, m) in all.iter().zip(meta) {
        let m = m.unwrap();
        assert_eq!(paged.partitions.iter().map(|p| p.info.clone()).collect::<Vec<_>>(), m.partitions);
    }
    let unknown = admin.describe_topic_partitions(&["kw-ops-no-such-topic"], None, 10).await.unwrap();
    assert_eq!(code(unknown.topics[0].as_ref().unwrap_err()), Some("UNKNOWN_TOPIC_OR_PARTITION"));

    // Configs: validated, not changed; then described with synonyms and documentation.
    let e = admin.validate_alter_configs(ConfigResource::Topic, &names[0], &[("retention.ms", ConfigOp::Set("soon".into()))]).await.unwrap_err();
    assert_eq!(code(&e), Some("INVALID_CONFIG"), "{e:?}");
    admin.validate_alter_configs(ConfigResource::Topic, &names[0], &[("retention.ms", ConfigOp::Set("60000".into()))]).await.unwrap();
    admin.alter_configs(ConfigResource::Topic, &names[0], &[("segment.ms", ConfigOp::Set("600000".into()))]).await.unwrap();
    common::eventually("segment.ms set", || async {
        admin
            .describe_configs(ConfigResource::Topic, &names[0], Some(&["segment.ms"]))
            .await
            .unwrap()
            .first()
            .is_some_and(|e| e.value.as_deref() == Some("600000"))
    })
    .await;
    let plain = admin.describe_configs(ConfigResource::Topic, &names[0], Some(&["retention.ms"])).await.unwrap();
    assert_eq!(plain[0].value.as_deref(), Some("604800000"), "validate-only changed nothing: {plain:?}");
    assert!(plain[0].synonyms.is_empty() && plain[0].documentation.is_none());
    // A broker config from server.properties: the static value, then the default under it.
    let broker = admin.describe_configs_with(ConfigResource::Broker, "1", Some(&["num.partitions"]), true, false).await.unwrap();
    let syn: Vec<_> = broker[0].synonyms.iter().map(|s| (s.name.as_str(), s.value.as_deref(), s.source)).collect();
    assert_eq!(syn, vec![("num.partitions", Some("1"), 4), ("num.partitions", Some("1"), 5)], "{broker:?}");
    assert!(broker[0].documentation.is_none() && broker[0].config_type == 3, "INT, no documentation asked: {broker:?}");
    let java = common::java(
        &b,
        &std::env::temp_dir().join(unique("kw-ops-java")),
        "ConfigView.java",
        JAVA_CONFIG,
        &[b.var("PLAINTEXT"), "1", "num.partitions"],
        Duration::from_secs(90),
    )
    .await;
    assert_eq!(
        java.lines().collect::<Vec<_>>(),
        vec!["TYPE INT true", "SYN num.partitions 1 STATIC_BROKER_CONFIG", "SYN num.partitions 1 DEFAULT_CONFIG"],
        "{java}"
    );
    let full = admin.describe_configs_with(ConfigResource::Topic, &names[0], Some(&["segment.ms", "retention.ms"]), true, true).await.unwrap();
    let seg = full.iter().find(|e| e.name == "segment.ms").unwrap();
    // The topic's override (the broker's log.roll.* are not set, so not synonyms).
    let syn: Vec<_> = seg.synonyms.iter().map(|s| (s.name.as_str(), s.value.as_deref(), s.source)).collect();
    assert_eq!(syn, vec![("segment.ms", Some("600000"), 1)], "{seg:?}");
    assert_eq!(seg.config_type, 5, "LONG");
    assert!(seg.documentation.as_deref().is_some_and(|d| d.contains("roll")), "{seg:?}");
    let ret = full.iter().find(|e| e.name == "retention.ms").unwrap();
    assert_eq!(ret.source, 5, "{ret:?}");
    assert!(ret.synonyms.iter().all(|s| s.name != "retention.ms"), "no topic override: {ret:?}");

    // More partitions: validated only (none made), then on replicas chosen here; an
    // assignment naming a broker that does not exist refused.
    use kwire_client::NewPartitions;
    let more = NewPartitions { assignments: Some(vec![vec![1], vec![1]]), ..NewPartitions::increase_to(&names[1], 3) };
    admin.create_partitions_with(std::slice::from_ref(&more), true).await.unwrap().remove(0).unwrap();
    assert_eq!(admin.describe_topics(&[&names[1]]).await.unwrap().remove(0).unwrap().partitions.len(), 1, "validate-only made none");
    let bad = NewPartitions { assignments: Some(vec![vec![7], vec![7]]), ..more.clone() };
    let e = admin.create_partitions_with(&[bad], false).await.unwrap().remove(0).unwrap_err();
    assert_eq!(code(&e), Some("INVALID_REPLICA_ASSIGNMENT"), "{e:?}");
    admin.create_partitions_with(&[more], false).await.unwrap().remove(0).unwrap();
    common::eventually("3 partitions on broker 1", || async {
        admin
            .describe_topics(&[&names[1]])
            .await
            .unwrap()
            .remove(0)
            .is_ok_and(|t| t.partitions.len() == 3 && t.partitions.iter().all(|p| p.replicas == vec![1]))
    })
    .await;

    // Deleted by id; again, unknown.
    let ids = [a.id, bb.id, c.id];
    for r in admin.delete_topics_by_id(&ids).await.unwrap() {
        r.unwrap();
    }
    common::eventually("the topics gone", || async { admin.describe_topics(&refs).await.unwrap().iter().all(Result::is_err) }).await;
    let again = admin.delete_topics_by_id(&ids[..1]).await.unwrap();
    assert_eq!(code(again[0].as_ref().unwrap_err()), Some("UNKNOWN_TOPIC_ID"), "{again:?}");
}

/// Replica log dirs, config resources, unregistering a broker: a replica moved to the dir
/// it is in (a no-op), to a dir the broker does not have (LOG_DIR_NOT_FOUND), a partition
/// the broker does not have, a broker that is not there; a client-metrics subscription listed (and on 4.x, topics and groups
/// too, by type); an unknown broker id and an unknown controller id refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_log_dirs_config_resources_unregister() {
    let Some(b) = Broker::from_env("replica_log_dirs_config_resources_unregister") else { return };
    let admin = Admin::new(b.client().await);
    let topic = unique("kw-ops-dirs");
    admin.create_topic(NewTopic::new(&topic, 1)).await.unwrap();
    let tp = TopicPartition::new(topic.clone(), 0);
    let replica_dir =
        || async { admin.describe_log_dirs(&[1]).await.unwrap().into_iter().find(|d| d.replicas.iter().any(|r| r.partition == tp)).map(|d| d.path) };
    common::eventually("the new replica in a log dir", || async { replica_dir().await.is_some() }).await;
    let dir = replica_dir().await.unwrap_or_default();
    let r = admin.alter_replica_log_dirs(&[(tp.clone(), 1, &dir), (tp.clone(), 1, "/kw-no-such-dir")]).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    assert!(matches!(r[1], Err(Error::Config(_))), "{r:?}");
    let r = admin.alter_replica_log_dirs(&[(tp.clone(), 1, "/kw-no-such-dir")]).await.unwrap();
    assert_eq!(code(r[0].as_ref().unwrap_err()), Some("LOG_DIR_NOT_FOUND"), "{r:?}");
    let absent = TopicPartition::new(topic.clone(), 5);
    let r = admin.alter_replica_log_dirs(&[(absent, 1, &dir)]).await.unwrap();
    assert_eq!(code(r[0].as_ref().unwrap_err()), Some("UNKNOWN_TOPIC_OR_PARTITION"), "{r:?}");
    let r = admin.alter_replica_log_dirs(&[(tp.clone(), 7, &dir)]).await.unwrap();
    assert!(matches!(r[0], Err(Error::UnknownBroker(7))), "{r:?}");
    let where_ = admin.describe_replica_log_dirs(&[(tp.clone(), 1), (TopicPartition::new(topic.clone(), 5), 1), (tp.clone(), 7)]).await.unwrap();
    assert_eq!(where_[0].as_ref().unwrap(), &kwire_client::ReplicaLogDirInfo { current_dir: Some(dir.clone()), ..Default::default() }, "{where_:?}");
    assert_eq!(where_[1].as_ref().unwrap(), &kwire_client::ReplicaLogDirInfo::default(), "{where_:?}");
    assert!(matches!(where_[2], Err(Error::UnknownBroker(7))), "{where_:?}");

    // A client-metrics subscription (KIP-714, 3.7+).
    let sub = unique("kw-ops-metrics");
    admin
        .alter_configs(
            ConfigResource::ClientMetrics,
            &sub,
            &[("metrics", ConfigOp::Set("org.apache.kafka.producer.".into())), ("interval.ms", ConfigOp::Set("60000".into()))],
        )
        .await
        .unwrap();
    common::eventually("the subscription listed", || async { admin.list_client_metrics_resources().await.unwrap().contains(&sub) }).await;
    if b.version().starts_with('4') {
        let all = admin.list_config_resources(&[]).await.unwrap();
        assert!(all.contains(&(ConfigResource::ClientMetrics, sub.clone())), "{all:?}");
        assert!(all.contains(&(ConfigResource::Topic, topic.clone())), "{all:?}");
        assert!(all.contains(&(ConfigResource::Broker, "1".into())), "{all:?}");
        let topics = admin.list_config_resources(&[ConfigResource::Topic]).await.unwrap();
        assert!(topics.iter().all(|(t, _)| *t == ConfigResource::Topic) && topics.contains(&(ConfigResource::Topic, topic.clone())), "{topics:?}");
    } else {
        let e = admin.list_config_resources(&[ConfigResource::Topic]).await.unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { api: ApiKey::ListConfigResources, .. }), "{e:?}");
    }
    admin.alter_configs(ConfigResource::ClientMetrics, &sub, &[("metrics", ConfigOp::Delete), ("interval.ms", ConfigOp::Delete)]).await.unwrap();

    // Never registered: a typed, non-retriable refusal from the controller.
    let e = admin.unregister_broker(4242).await.unwrap_err();
    assert_eq!(code(&e), Some("BROKER_ID_NOT_REGISTERED"), "{e:?}");
    assert!(!e.is_retriable());
    assert_eq!(admin.describe_cluster().await.unwrap().brokers.len(), 1);
    match admin.unregister_controller(4242).await {
        Err(e) if b.version().starts_with('4') => assert_eq!(code(&e), Some("CONTROLLER_ID_NOT_REGISTERED"), "{e:?}"),
        Err(e) => assert!(matches!(e, Error::UnsupportedVersion { api: ApiKey::UnregisterController, .. }), "{e:?}"),
        Ok(()) => panic!("controller 4242 unregistered"),
    }
    admin.delete_topics(&[&topic]).await.unwrap().remove(0).unwrap();
}

/// A static member of a classic group removed from outside (Java's
/// `removeMembersFromConsumerGroup`): the group is left empty; an unknown instance id is
/// UNKNOWN_MEMBER_ID in its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_members_removed() {
    use kwire_client::{Consumer, ConsumerConfig, GroupProtocol};

    let Some(b) = Broker::from_env("static_members_removed") else { return };
    let admin = Admin::new(b.client().await);
    let (topic, group, instance) = (unique("kw-ops-static"), unique("kw-ops-static-group"), unique("kw-ops-instance"));
    admin.create_topic(NewTopic::new(&topic, 2)).await.unwrap();
    let config = ConsumerConfig {
        group_id: Some(group.clone()),
        group_instance_id: Some(instance.clone()),
        group_protocol: GroupProtocol::Classic,
        ..ConsumerConfig::default()
    };
    let mut consumer = Consumer::new(b.client().await, config).unwrap();
    consumer.subscribe(&[&topic]).unwrap();
    for _ in 0..100 {
        consumer.poll(Duration::from_millis(100)).await.unwrap();
        if consumer.assignment().len() == 2 {
            break;
        }
    }
    let d = admin.describe_groups(&[&group]).await.unwrap().remove(0).unwrap();
    assert_eq!(d.members.iter().map(|m| m.instance_id.clone()).collect::<Vec<_>>(), vec![Some(instance.clone())], "{d:?}");
    let r = admin.remove_group_members(&group, &[&instance, "kw-ops-no-such-instance"]).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    assert_eq!(code(r[1].as_ref().unwrap_err()), Some("UNKNOWN_MEMBER_ID"), "{r:?}");
    let d = admin.describe_groups(&[&group]).await.unwrap().remove(0).unwrap();
    assert!(d.members.is_empty(), "{d:?}");
    drop(consumer);
}

/// KIP-853 on the test brokers' static quorum (`controller.quorum.voters`): adding or
/// removing a controller is refused (UNSUPPORTED_VERSION, "the kraft.version feature is 0"),
/// and the quorum is as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raft_voters_on_a_static_quorum_are_refused() {
    let Some(b) = Broker::from_env("raft_voters_on_a_static_quorum_are_refused") else { return };
    let admin = Admin::new(b.client().await);
    let before = admin.describe_metadata_quorum().await.unwrap();
    let dir = kwire::Uuid(*b"kwire-test-dir-1");
    let add = admin.add_raft_voter(2, dir, &[("CONTROLLER", "127.0.0.1", 1)]).await;
    let remove = admin.remove_raft_voter(1, dir).await;
    for (what, r) in [("add", add), ("remove", remove)] {
        match r {
            Err(Error::Broker { code, message: Some(m), .. }) => {
                assert_eq!(code.name(), Some("UNSUPPORTED_VERSION"), "{what}");
                assert!(m.contains("kraft.version feature is 0"), "{what}: {m}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    let after = admin.describe_metadata_quorum().await.unwrap();
    let ids = |q: &kwire_client::QuorumDescription| q.voters.iter().map(|v| v.replica_id).collect::<Vec<_>>();
    assert_eq!(ids(&after), ids(&before));
}

/// A principal without ACLs (alice over SASL/PLAIN; the broker runs StandardAuthorizer with
/// no allow-everyone): the new group operations fail with `Error::Authorization` naming the
/// group, the topic operations naming the topic (by id when the broker withholds its name),
/// moving replicas naming the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_the_group_or_topic() {
    use kwire_client::{Client, ClientConfig, Resource, Sasl};

    let Some(b) = Broker::from_env("refusals_name_the_group_or_topic") else { return };
    let admin = Admin::new(b.client().await);
    let topic = unique("kw-ops-acl");
    let created = admin.create_topic(NewTopic::new(&topic, 1)).await.unwrap();
    let alice = Admin::new(Client::connect(ClientConfig::new(b.var("SASL_PLAINTEXT")).sasl(Sasl::plain("alice", "alice-secret"))).await.unwrap());
    let group = unique("kw-ops-acl-group");
    let on_group = |e: &Error| matches!(e, Error::Authorization { resource: Resource::Group(g), .. } if *g == group);
    let e = alice.consumer_group_lag(&group, false).await.unwrap_err();
    assert!(on_group(&e), "{e:?}");
    if b.version().starts_with('4') {
        let e = alice.describe_share_groups(&[&group]).await.unwrap().remove(0).unwrap_err();
        assert!(on_group(&e), "{e:?}");
        let e = alice.list_share_group_offsets(&group, None).await.unwrap_err();
        assert!(on_group(&e), "{e:?}");
        let e = alice.describe_streams_groups(&[&group]).await.unwrap().remove(0).unwrap_err();
        assert!(on_group(&e), "{e:?}");
    }
    let on_topic = |e: &Error| matches!(e, Error::Authorization { resource: Resource::Topic(t), .. } if *t == topic);
    let page = alice.describe_topic_partitions(&[&topic], None, 10).await.unwrap();
    let e = page.topics[0].as_ref().unwrap_err();
    assert!(on_topic(e), "{e:?}");
    // Unnamed by the broker: named by its id as Kafka prints ids (base64url).
    let e = alice.delete_topics_by_id(&[created.id]).await.unwrap().remove(0).unwrap_err();
    let id = {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(created.id.as_bytes())
    };
    assert!(matches!(&e, Error::Authorization { resource: Resource::Topic(t), .. } if *t == id), "{e:?}");
    // Moving replicas between dirs is the cluster's to allow (ALTER on CLUSTER).
    let e = alice.alter_replica_log_dirs(&[(TopicPartition::new(topic.clone(), 0), 1, "/kw-no-such-dir")]).await.unwrap().remove(0).unwrap_err();
    assert!(matches!(e, Error::Authorization { resource: Resource::Cluster, .. }), "{e:?}");
    admin.delete_topics(&[&topic]).await.unwrap().remove(0).unwrap();
}

/// The names one run of [`authorizer_probes`] works on.
struct AclNames {
    /// A topic alice may READ (and so DESCRIBE).
    readable: String,
    /// A topic she has no ACL on.
    hidden: String,
    group: String,
    transactional_id: String,
}

/// A request built for the version its connection uses.
type Probe = Box<dyn Fn(i16) -> kwire::RequestKind>;

/// Requests alice sends, each answered with error codes the authorizer decides, with the label
/// they are reported under; `ids`: the two topics' ids (OffsetCommit and OffsetFetch v10 name
/// topics by id). Ignorable fields of every version are set; the version sent picks.
fn authorizer_probes(n: &AclNames, ids: [kwire::Uuid; 2]) -> Vec<(&'static str, Probe)> {
    use kwire::messages::*;
    let s = |v: &str| kwire::ByteString::from(v.to_owned());
    let both = [n.readable.as_str(), n.hidden.as_str()];
    let named = [(n.readable.clone(), ids[0]), (n.hidden.clone(), ids[1])];
    let commit = OffsetCommitRequest {
        group_id: s(&n.group),
        generation_id_or_member_epoch: -1,
        topics: named
            .iter()
            .map(|(t, id)| offset_commit_request::OffsetCommitRequestTopic {
                name: s(t),
                topic_id: *id,
                partitions: vec![offset_commit_request::OffsetCommitRequestPartition { committed_offset: 0, committed_leader_epoch: -1, ..Default::default() }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    // One group at the top up to v7, a list of groups from v8.
    let group = n.group.clone();
    let offset_fetch = move |v: i16| -> kwire::RequestKind {
        let s = |v: &str| kwire::ByteString::from(v.to_owned());
        if v < 8 {
            let topics = named.iter().map(|(t, _)| offset_fetch_request::OffsetFetchRequestTopic {
                name: s(t),
                partition_indexes: kwire::smallvec![0],
                ..Default::default()
            });
            return OffsetFetchRequest { group_id: s(&group), topics: Some(topics.collect()), ..Default::default() }.into();
        }
        let topics = named.iter().map(|(t, id)| offset_fetch_request::OffsetFetchRequestTopics {
            name: s(t),
            topic_id: *id,
            partition_indexes: kwire::smallvec![0],
            ..Default::default()
        });
        let groups =
            vec![offset_fetch_request::OffsetFetchRequestGroup { group_id: s(&group), member_epoch: -1, topics: Some(topics.collect()), ..Default::default() }];
        OffsetFetchRequest { groups, ..Default::default() }.into()
    };
    let list_offsets = ListOffsetsRequest {
        replica_id: -1,
        topics: both
            .iter()
            .map(|t| list_offsets_request::ListOffsetsTopic {
                name: s(t),
                partitions: vec![list_offsets_request::ListOffsetsPartition {
                    timestamp: -1,
                    current_leader_epoch: -1,
                    max_num_offsets: 1,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let join = JoinGroupRequest {
        group_id: s(&n.group),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: s("consumer"),
        protocols: vec![join_group_request::JoinGroupRequestProtocol { name: s("range"), ..Default::default() }],
        ..Default::default()
    };
    // One key up to v3, a list of keys from v4.
    let find = |key_type: i8, key: &str| -> Probe {
        let key = s(key);
        Box::new(move |v| {
            let r = FindCoordinatorRequest { key_type, ..Default::default() };
            if v < 4 { FindCoordinatorRequest { key: key.clone(), ..r } } else { FindCoordinatorRequest { coordinator_keys: vec![key.clone()], ..r } }.into()
        })
    };
    let config = |resource_type: i8, name: &str| describe_configs_request::DescribeConfigsResource {
        resource_type,
        resource_name: s(name),
        configuration_keys: None,
        ..Default::default()
    };
    let alter = |resource_type: i8, name: &str| incremental_alter_configs_request::AlterConfigsResource {
        resource_type,
        resource_name: s(name),
        configs: vec![incremental_alter_configs_request::AlterableConfig {
            name: s("retention.ms"),
            config_operation: 0,
            value: Some(s("1000000")),
            ..Default::default()
        }],
        ..Default::default()
    };
    let txn_id = s(&n.transactional_id);
    let fixed = |r: kwire::RequestKind| -> Probe { Box::new(move |_| r.clone()) };
    let mut probes: Vec<(&'static str, Probe)> = vec![
        ("OffsetFetch", Box::new(offset_fetch)),
        ("FindCoordinator group", find(0, &n.group)),
        ("FindCoordinator transaction", find(1, &n.transactional_id)),
    ];
    let requests: Vec<(&'static str, kwire::RequestKind)> = vec![
        ("ListOffsets", list_offsets.into()),
        ("OffsetCommit", commit.into()),
        ("JoinGroup", join.into()),
        ("DescribeGroups", DescribeGroupsRequest { groups: vec![s(&n.group)], ..Default::default() }.into()),
        ("DeleteGroups", DeleteGroupsRequest { groups_names: vec![s(&n.group)], ..Default::default() }.into()),
        (
            "OffsetDelete",
            OffsetDeleteRequest {
                group_id: s(&n.group),
                topics: vec![offset_delete_request::OffsetDeleteRequestTopic {
                    name: s(&n.readable),
                    partitions: vec![offset_delete_request::OffsetDeleteRequestPartition { partition_index: 0 }],
                }],
            }
            .into(),
        ),
        (
            "DescribeConfigs",
            DescribeConfigsRequest { resources: vec![config(2, &n.readable), config(2, &n.hidden), config(4, "")], ..Default::default() }.into(),
        ),
        (
            "IncrementalAlterConfigs",
            IncrementalAlterConfigsRequest { resources: vec![alter(2, &n.readable)], validate_only: true, ..Default::default() }.into(),
        ),
        (
            "CreatePartitions",
            CreatePartitionsRequest {
                topics: vec![create_partitions_request::CreatePartitionsTopic { name: s(&n.readable), count: 2, ..Default::default() }],
                timeout_ms: 5_000,
                validate_only: true,
                ..Default::default()
            }
            .into(),
        ),
        (
            "DeleteRecords",
            DeleteRecordsRequest {
                topics: vec![delete_records_request::DeleteRecordsTopic {
                    name: s(&n.readable),
                    partitions: vec![delete_records_request::DeleteRecordsPartition { partition_index: 0, offset: 0, ..Default::default() }],
                    ..Default::default()
                }],
                timeout_ms: 5_000,
                ..Default::default()
            }
            .into(),
        ),
        (
            "DescribeProducers",
            DescribeProducersRequest {
                topics: both
                    .iter()
                    .map(|t| describe_producers_request::TopicRequest { name: s(t), partition_indexes: kwire::smallvec![0], ..Default::default() })
                    .collect(),
                ..Default::default()
            }
            .into(),
        ),
        (
            "InitProducerId idempotent",
            InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: -1, producer_id: -1, producer_epoch: -1, ..Default::default() }.into(),
        ),
        (
            "InitProducerId transactional",
            InitProducerIdRequest {
                transactional_id: Some(txn_id.clone()),
                transaction_timeout_ms: 60_000,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            }
            .into(),
        ),
        ("EndTxn", EndTxnRequest { transactional_id: txn_id.clone(), producer_id: 1, producer_epoch: 0, committed: true, ..Default::default() }.into()),
        (
            "AddOffsetsToTxn",
            AddOffsetsToTxnRequest { transactional_id: txn_id.clone(), producer_id: 1, producer_epoch: 0, group_id: s(&n.group), ..Default::default() }.into(),
        ),
        (
            "TxnOffsetCommit",
            TxnOffsetCommitRequest {
                transactional_id: txn_id.clone(),
                group_id: s(&n.group),
                producer_id: 1,
                producer_epoch: 0,
                generation_id_or_member_epoch: -1,
                topics: vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic {
                    name: s(&n.readable),
                    partitions: vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition { committed_leader_epoch: -1, ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            }
            .into(),
        ),
        (
            "ConsumerGroupHeartbeat",
            ConsumerGroupHeartbeatRequest {
                group_id: s(&n.group),
                member_id: s("kw-acl-member-0000000"),
                rebalance_timeout_ms: 10_000,
                subscribed_topic_names: Some(vec![s(&n.hidden)]),
                topic_partitions: Some(Vec::new()),
                ..Default::default()
            }
            .into(),
        ),
    ];
    probes.extend(requests.into_iter().map(|(label, r)| (label, fixed(r))));
    probes
}

/// Each probe's error codes (field and code, in wire order); a transport failure is a test
/// failure.
type Decisions = Vec<(String, Vec<(&'static str, kwire::ErrorCode)>)>;

/// Creates the two topics and alice's READ on one (as `admin`), then sends every probe as
/// `alice`: once as she is, once more after READ on the group and WRITE on the transactional
/// id are granted.
async fn authorizer_decisions(admin: &Admin, alice: &kwire_client::Client, n: &AclNames) -> Decisions {
    use kwire::Visit;
    use kwire_client::{AclBinding, AclOperation, AclPermission, ResourceType};

    let mut ids = [kwire::Uuid::ZERO; 2];
    for (t, id) in [&n.readable, &n.hidden].into_iter().zip(&mut ids) {
        *id = admin.create_topic(NewTopic::new(t, 1)).await.unwrap().id;
    }
    let allow = |resource: ResourceType, name: &str, operation: AclOperation| AclBinding::new(resource, name, "User:alice", operation, AclPermission::Allow);
    create_acls_applied(admin, &[allow(ResourceType::Topic, &n.readable, AclOperation::Read)]).await;
    let mut out = Decisions::new();
    for round in ["before", "after"] {
        if round == "after" {
            wait_for_group_coordinator(admin, &n.group).await;
            let acls =
                [allow(ResourceType::Group, &n.group, AclOperation::Read), allow(ResourceType::TransactionalId, &n.transactional_id, AclOperation::Write)];
            create_acls_applied(admin, &acls).await;
        }
        for (label, build) in authorizer_probes(n, ids) {
            // The transaction probes past the authorizer meet the transaction coordinator's
            // state, which the broker's earlier tests shaped: only their refusals are judged.
            if round == "after" && (label.contains("Txn") || label.starts_with("InitProducerId transactional") || label == "FindCoordinator transaction") {
                continue;
            }
            // Probes of many apis, built per version: raw requests on one broker's connection.
            let addr = alice.metadata().brokers.values().next().map(|b| b.addr()).expect("a broker");
            let conn = alice.connection(&addr).await.unwrap();
            let version = conn.version(build(0).api_key()).unwrap_or_else(|e| panic!("{label}: {e}"));
            let response = conn.request(build(version)).await.unwrap_or_else(|e| panic!("{label}: {e}"));
            out.push((format!("{label}, {round}"), response.errors()));
        }
    }
    out
}

/// Creates `acls` and waits until the broker's authorizer holds them. A KRaft broker answers
/// CreateAcls once the controller has committed them and applies them when it replays the
/// metadata log, a moment later: a probe sent at once can still be refused. DescribeAcls reads
/// the same authorizer cache that decides the probes.
async fn create_acls_applied(admin: &Admin, acls: &[kwire_client::AclBinding]) {
    use kwire_client::AclBindingFilter;
    for created in admin.create_acls(acls).await.unwrap() {
        created.unwrap();
    }
    for acl in acls {
        common::eventually("the ACL applied", || async { !admin.describe_acls(&AclBindingFilter::exactly(acl)).await.unwrap().is_empty() }).await;
    }
}

/// Waits (30 s at most) until the group's coordinator is ready: a fresh broker creates its
/// offsets topic on the first lookup and answers COORDINATOR_NOT_AVAILABLE meanwhile.
async fn wait_for_group_coordinator(admin: &Admin, group: &str) {
    use kwire::messages::FindCoordinatorRequest;
    let key = kwire::ByteString::from(group.to_owned());
    let build = |v: i16| {
        if v < 4 {
            FindCoordinatorRequest { key: key.clone(), ..Default::default() }
        } else {
            FindCoordinatorRequest { coordinator_keys: vec![key.clone()], ..Default::default() }
        }
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let response = admin.client().send_versioned(Route::Any, build).await.unwrap();
        let errors = kwire::Visit::errors(&response);
        if errors.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no coordinator for {group} in 30 s: {errors:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// kwire-fake's authorizer judged by Kafka's: the same principal, topics, group, transactional
/// id and ACLs on the broker and on the fake (advertising the broker's release); every probe
/// answers with the same error codes on both, before and after alice is let in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fakes_authorizer_decides_as_kafkas() {
    use kwire_client::{Client, ClientConfig, Connector, Sasl};
    use kwire_fake::{Cluster, ClusterConfig, Release};

    let Some(b) = Broker::from_env("the_fakes_authorizer_decides_as_kafkas") else { return };
    let n = AclNames {
        readable: unique("kw-acl-readable"),
        hidden: unique("kw-acl-hidden"),
        group: unique("kw-acl-group"),
        transactional_id: unique("kw-acl-txn"),
    };
    let admin = Admin::new(b.client().await);
    let alice = Client::connect(ClientConfig::new(b.var("SASL_PLAINTEXT")).sasl(Sasl::plain("alice", "alice-secret"))).await.unwrap();
    let on_broker = authorizer_decisions(&admin, &alice, &n).await;

    let release: Release = b.version().get(..3).unwrap_or_default().parse().unwrap();
    let cluster = Cluster::start(
        ClusterConfig::default()
            .brokers(1)
            .release(release)
            .sasl_plain("admin", "admin-secret")
            .sasl_plain("alice", "alice-secret")
            .acl_authorizer(&["User:admin"]),
    );
    let connect = |user: &str, password: &str| {
        Client::connect(ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).sasl(Sasl::plain(user, password)))
    };
    let fake_admin = Admin::new(connect("admin", "admin-secret").await.unwrap());
    let on_fake = authorizer_decisions(&fake_admin, &connect("alice", "alice-secret").await.unwrap(), &n).await;

    // One line per probe, so a difference reads as a diff.
    let lines = |d: &Decisions| d.iter().map(|(label, codes)| format!("{label}: {codes:?}")).collect::<Vec<_>>();
    assert_eq!(lines(&on_fake), lines(&on_broker), "the fake (left) and Kafka {} (right)", b.version());
    // The probes decide something: refusals of each kind were seen.
    let seen: Vec<kwire::ErrorCode> = on_broker.iter().flat_map(|(_, c)| c.iter().map(|(_, code)| *code)).collect();
    for code in
        [kwire::ErrorCode::TOPIC_AUTHORIZATION_FAILED, kwire::ErrorCode::GROUP_AUTHORIZATION_FAILED, kwire::ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    {
        assert!(seen.contains(&code), "{code:?} never seen");
    }
    admin.delete_topics(&[&n.readable, &n.hidden]).await.unwrap();
}
