//! The cooperative-sticky assignor against Java's own: generated groups go through rounds of
//! rebalancing (members joining and leaving with what they own, stale generations claiming
//! the same partitions, equal and unequal subscriptions, several topics); every round's input
//! is handed to Kafka's `CooperativeStickyAssignor.assign` (kafka-clients from the broker's
//! classpath, a single-file program) and the assignments must be the same, member by member.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use common::{unique, Broker};
use kwire_client::assignor::{cooperative_sticky_assign, Member as StickyMember};
use kwire_client::TopicPartition;

const JAVA: &str = r#"
import java.io.*;
import java.nio.ByteBuffer;
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.*;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.common.*;

public class Assign {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        Node node = new Node(0, "localhost", 9092);
        String name = null;
        List<PartitionInfo> parts = new ArrayList<>();
        Map<String, Subscription> subs = new HashMap<>();
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.split(" ", -1);
            switch (f[0]) {
                case "S": name = f[1]; parts.clear(); subs = new HashMap<>(); break;
                case "T":
                    for (int p = 0; p < Integer.parseInt(f[2]); p++)
                        parts.add(new PartitionInfo(f[1], p, node, new Node[]{node}, new Node[]{node}));
                    break;
                case "M": {
                    List<String> topics = f[3].isEmpty() ? List.of() : Arrays.asList(f[3].split(","));
                    List<TopicPartition> owned = new ArrayList<>();
                    if (!f[4].isEmpty())
                        for (String tp : f[4].split(",")) {
                            int i = tp.lastIndexOf(':');
                            owned.add(new TopicPartition(tp.substring(0, i), Integer.parseInt(tp.substring(i + 1))));
                        }
                    int generation = -1;
                    ByteBuffer userData = null;
                    if (f[2].startsWith("g")) generation = Integer.parseInt(f[2].substring(1));
                    else if (f[2].startsWith("u")) { userData = ByteBuffer.allocate(4); userData.putInt(Integer.parseInt(f[2].substring(1))); userData.flip(); }
                    subs.put(f[1], new Subscription(topics, userData, owned, generation, Optional.empty()));
                    break;
                }
                case "E": {
                    Cluster cluster = new Cluster("c", List.of(node), parts, Set.of(), Set.of());
                    try {
                        GroupAssignment a = new CooperativeStickyAssignor().assign(cluster, new GroupSubscription(subs));
                        for (Map.Entry<String, Assignment> e : new TreeMap<>(a.groupAssignment()).entrySet()) {
                            TreeSet<String> tps = new TreeSet<>();
                            for (TopicPartition tp : e.getValue().partitions()) tps.add(tp.topic() + ":" + tp.partition());
                            System.out.println("A " + name + " " + e.getKey() + " " + String.join(",", tps));
                        }
                    } catch (IllegalStateException e) {
                        System.out.println("X " + name);
                    }
                    break;
                }
            }
        }
    }
}
"#;

struct Scenario {
    name: String,
    counts: BTreeMap<String, i32>,
    members: Vec<StickyMember>,
}

impl Scenario {
    fn to_java(&self, out: &mut String) {
        let _ = writeln!(out, "S {}", self.name);
        for (t, n) in &self.counts {
            let _ = writeln!(out, "T {t} {n}");
        }
        for m in &self.members {
            let generation = match &m.user_data {
                Some(d) => format!("u{}", i32::from_be_bytes([d[0], d[1], d[2], d[3]])),
                None if m.generation_id >= 0 => format!("g{}", m.generation_id),
                None => "n".into(),
            };
            let owned: Vec<String> = m.owned_partitions.iter().map(|tp| format!("{}:{}", tp.topic, tp.partition)).collect();
            let _ = writeln!(out, "M {} {generation} {} {}", m.member_id, m.topics.join(","), owned.join(","));
        }
        let _ = writeln!(out, "E");
    }
}

fn lines_of(name: &str, result: &Result<BTreeMap<String, Vec<TopicPartition>>, kwire_client::Error>) -> Vec<String> {
    match result {
        Err(_) => vec![format!("X {name}")],
        Ok(a) => a
            .iter()
            .map(|(m, tps)| {
                let mut v: Vec<String> = tps.iter().map(|tp| format!("{}:{}", tp.topic, tp.partition)).collect();
                v.sort();
                format!("A {name} {m} {}", v.join(","))
            })
            .collect(),
    }
}

/// Groups through rounds of rebalances, each round's owned partitions being what the previous
/// round assigned (as members report them), with members joining, leaving, lagging a
/// generation behind or subscribing to other topics.
fn scenarios() -> Vec<(Scenario, Vec<String>)> {
    let mut out = Vec::new();
    let mut rng = common::Rng(0x9E37_79B9_7F4A_7C15);
    for group in 0..60 {
        let topics: Vec<(String, i32)> = (0..1 + rng.below(3)).map(|i| (format!("topic-{i}"), 1 + rng.below(14) as i32)).collect();
        let counts: BTreeMap<String, i32> = topics.iter().cloned().collect();
        let unequal = group % 3 == 2;
        let mut next_id = 0;
        let mut new_member = |rng: &mut common::Rng| {
            next_id += 1;
            let topics: Vec<String> = if unequal {
                let mut ts: Vec<String> = topics.iter().filter(|_| rng.chance(60)).map(|(t, _)| t.clone()).collect();
                if ts.is_empty() {
                    ts.push(topics[rng.below(topics.len() as u64) as usize].0.clone());
                }
                ts
            } else {
                topics.iter().map(|(t, _)| t.clone()).collect()
            };
            // Broker-style ids: a client id and a random suffix (spreads the hash buckets).
            StickyMember { member_id: format!("consumer-{group}-{next_id}-{:08x}", rng.next() as u32), topics, generation_id: -1, ..Default::default() }
        };
        let mut members: Vec<StickyMember> = (0..1 + rng.below(5)).map(|_| new_member(&mut rng)).collect();
        let mut generation = 1;
        for round in 0..8 {
            if round > 0 {
                // Some leave (keeping at least one), some join with nothing owned.
                members.retain(|_| !rng.chance(15));
                if members.is_empty() || rng.chance(35) {
                    for _ in 0..1 + rng.below(3) {
                        members.push(new_member(&mut rng));
                    }
                }
                // JoinGroup lists members in no fixed order.
                for i in (1..members.len()).rev() {
                    members.swap(i, rng.below(i as u64 + 1) as usize);
                }
                // A member a generation behind, still claiming another's partitions.
                if members.len() > 1 && rng.chance(20) {
                    let victim = rng.below(members.len() as u64) as usize;
                    let thief = (victim + 1) % members.len();
                    let stolen = members[victim].owned_partitions.clone();
                    members[thief].owned_partitions.extend(stolen);
                    members[thief].generation_id = (generation - 2).max(-1);
                    if rng.chance(50) {
                        // Or the same generation: both claims are void.
                        members[thief].generation_id = members[victim].generation_id;
                    }
                }
                // A v0/v1 member: the generation in the assignor's user data.
                if rng.chance(10) {
                    let i = rng.below(members.len() as u64) as usize;
                    let g = members[i].generation_id;
                    members[i].user_data = Some(kwire_client::assignor::cooperative_sticky_user_data(g));
                    members[i].generation_id = -1;
                }
            }
            let scenario = Scenario { name: format!("g{group}r{round}"), counts: counts.clone(), members: members.clone() };
            let result = cooperative_sticky_assign(&scenario.members, &scenario.counts);
            let lines = lines_of(&scenario.name, &result);
            out.push((scenario, lines));
            generation += 1;
            let Ok(assignment) = result else { break };
            for m in members.iter_mut() {
                m.owned_partitions = assignment.get(&m.member_id).cloned().unwrap_or_default();
                m.generation_id = generation;
                m.user_data = None;
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_sticky_assigns_exactly_as_javas() {
    let Some(b) = Broker::from_env("cooperative_sticky_assigns_exactly_as_javas") else {
        return;
    };
    let Some(lib) = b.vars.get("KAFKA_LIB").cloned() else { panic!("no KAFKA_LIB in the env file") };
    let cases = scenarios();
    let mut input = String::new();
    for (s, _) in &cases {
        s.to_java(&mut input);
    }
    let dir = std::env::temp_dir().join(unique("kw-java-assignor"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("Assign.java"), JAVA).unwrap();
    std::fs::write(dir.join("input"), &input).unwrap();
    let java = tokio::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{lib}/*"))
        .arg("-Dlog4j2.level=off")
        .arg(dir.join("Assign.java"))
        .stdin(std::fs::File::open(dir.join("input")).unwrap())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), java).await.expect("java in time").expect("java runs");
    assert!(out.status.success(), "java failed: {}", String::from_utf8_lossy(&out.stderr));
    let java_lines: Vec<String> =
        String::from_utf8(out.stdout).unwrap().lines().filter(|l| l.starts_with("A ") || l.starts_with("X ")).map(str::to_owned).collect();
    let mut by_scenario: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in java_lines {
        let name = l.split(' ').nth(1).unwrap_or_default().to_owned();
        by_scenario.entry(name).or_default().push(l);
    }
    let (mut moved, mut general, mut conflicts) = (0, 0, 0);
    for (s, ours) in &cases {
        let theirs = by_scenario.get(&s.name).cloned().unwrap_or_default();
        let mut input = String::new();
        s.to_java(&mut input);
        assert_eq!(ours, &theirs, "scenario {} differs from Java's:\n{input}", s.name);
        let equal = s.members.iter().all(|m| {
            let mut a = m.topics.clone();
            let mut b = s.members[0].topics.clone();
            a.sort();
            b.sort();
            a == b
        });
        general += usize::from(!equal);
        let owned: usize = s.members.iter().map(|m| m.owned_partitions.len()).sum();
        let total: usize = s.counts.values().map(|n| *n as usize).sum();
        conflicts += usize::from(owned > total);
        moved += usize::from(ours.iter().any(|l| l.ends_with(' ')));
    }
    // The generator must have reached the interesting cases, or this proves little.
    assert!(cases.len() >= 300 && general >= 60 && conflicts >= 10, "{} scenarios, {general} general, {conflicts} with conflicting claims", cases.len());
    println!("{} scenarios ({general} with unequal subscriptions, {conflicts} with conflicting claims, {moved} with a member left empty) assigned as Java assigns them", cases.len());
    let _ = std::fs::remove_dir_all(&dir);
}
