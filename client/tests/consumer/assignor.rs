//! The assignors against Java's own: generated groups go through rounds of rebalancing
//! (members joining and leaving with what they own, stale generations claiming the same
//! partitions, equal and unequal subscriptions, several topics, static members, racks of
//! members and of partitions' replicas); every round's input is handed to Kafka's own
//! `RangeAssignor`, `RoundRobinAssignor`, `StickyAssignor` and `CooperativeStickyAssignor`
//! (kafka-clients from the broker's classpath, a single-file program) and the assignments must
//! be the same, member by member.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use common::{unique, Broker};
use kwire_client::assignor::{cooperative_sticky_user_data, sticky_user_data, Member as StickyMember, PartitionRacks};
use kwire_client::{Assignor, TopicPartition};

const JAVA: &str = r#"
import java.io.*;
import java.nio.ByteBuffer;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.*;
import org.apache.kafka.common.*;

public class Assign {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        Node node = new Node(0, "localhost", 9092);
        String name = null, assignor = null;
        Map<String, Integer> counts = new LinkedHashMap<>();
        Map<String, String[]> racks = new HashMap<>();
        Map<String, Subscription> subs = new HashMap<>();
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.split(" ", -1);
            switch (f[0]) {
                case "S": name = f[1]; assignor = f[2]; counts.clear(); racks.clear(); subs = new HashMap<>(); break;
                case "T": counts.put(f[1], Integer.parseInt(f[2])); break;
                case "R": racks.put(f[1] + ":" + f[2], f[3].split(",")); break;
                case "M": {
                    List<String> topics = f[3].isEmpty() ? List.of() : Arrays.asList(f[3].split(","));
                    List<TopicPartition> owned = new ArrayList<>();
                    if (!f[4].isEmpty())
                        for (String tp : f[4].split(",")) {
                            int i = tp.lastIndexOf(':');
                            owned.add(new TopicPartition(tp.substring(0, i), Integer.parseInt(tp.substring(i + 1))));
                        }
                    int generation = f[2].startsWith("g") ? Integer.parseInt(f[2].substring(1)) : -1;
                    ByteBuffer userData = null;
                    if (!f[5].equals("-")) {
                        byte[] b = new byte[f[5].length() / 2];
                        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(f[5].substring(2 * i, 2 * i + 2), 16);
                        userData = ByteBuffer.wrap(b);
                    }
                    Optional<String> rack = f[6].equals("-") ? Optional.empty() : Optional.of(f[6]);
                    Subscription s = new Subscription(topics, userData, owned, generation, rack);
                    if (!f[7].equals("-")) s.setGroupInstanceId(Optional.of(f[7]));
                    subs.put(f[1], s);
                    break;
                }
                case "E": {
                    Map<String, Node> rackNodes = new HashMap<>();
                    List<PartitionInfo> parts = new ArrayList<>();
                    for (Map.Entry<String, Integer> t : counts.entrySet())
                        for (int p = 0; p < t.getValue(); p++) {
                            String[] rs = racks.get(t.getKey() + ":" + p);
                            Node[] replicas = new Node[]{node};
                            if (rs != null) {
                                replicas = new Node[rs.length];
                                for (int i = 0; i < rs.length; i++) {
                                    Node n = rackNodes.get(rs[i]);
                                    if (n == null) { n = new Node(rackNodes.size() + 1, "localhost", 9092, rs[i]); rackNodes.put(rs[i], n); }
                                    replicas[i] = n;
                                }
                            }
                            parts.add(new PartitionInfo(t.getKey(), p, replicas[0], replicas, replicas));
                        }
                    List<Node> nodes = new ArrayList<>(rackNodes.values());
                    nodes.add(node);
                    Cluster cluster = new Cluster("c", nodes, parts, Set.of(), Set.of());
                    ConsumerPartitionAssignor a;
                    if (assignor.equals("range")) a = new RangeAssignor();
                    else if (assignor.equals("roundrobin")) a = new RoundRobinAssignor();
                    else if (assignor.equals("sticky")) a = new StickyAssignor();
                    else a = new CooperativeStickyAssignor();
                    try {
                        GroupAssignment ga = a.assign(cluster, new GroupSubscription(subs));
                        for (Map.Entry<String, Assignment> e : new TreeMap<>(ga.groupAssignment()).entrySet()) {
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
    assignor: Assignor,
    counts: BTreeMap<String, i32>,
    racks: PartitionRacks,
    members: Vec<StickyMember>,
    /// A member claims another's partitions (an older or the same generation).
    stolen: bool,
}

impl Scenario {
    fn to_java(&self, out: &mut String) {
        let _ = writeln!(out, "S {} {}", self.name, self.assignor.name());
        for (t, n) in &self.counts {
            let _ = writeln!(out, "T {t} {n}");
        }
        for (tp, rs) in &self.racks {
            if !rs.is_empty() {
                let _ = writeln!(out, "R {} {} {}", tp.topic, tp.partition, rs.iter().cloned().collect::<Vec<_>>().join(","));
            }
        }
        for m in &self.members {
            let generation = if m.generation_id >= 0 { format!("g{}", m.generation_id) } else { "n".into() };
            let user_data = match &m.user_data {
                Some(d) => d.iter().map(|b| format!("{b:02x}")).collect(),
                None => "-".to_string(),
            };
            let owned: Vec<String> = m.owned_partitions.iter().map(|tp| format!("{}:{}", tp.topic, tp.partition)).collect();
            let _ = writeln!(
                out,
                "M {} {generation} {} {} {user_data} {} {}",
                m.member_id,
                m.topics.join(","),
                owned.join(","),
                m.rack_id.as_deref().unwrap_or("-"),
                m.group_instance_id.as_deref().unwrap_or("-")
            );
        }
        let _ = writeln!(out, "E");
    }

    fn assign(&self, racks: &PartitionRacks) -> Result<BTreeMap<String, Vec<TopicPartition>>, kwire_client::Error> {
        self.assignor.assign_with_racks(&self.members, &self.counts, racks)
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

/// How one kind of generated group is made.
#[derive(Clone, Copy)]
struct Kind {
    /// Begins its scenarios' names.
    tag: &'static str,
    assignor: Assignor,
    groups: usize,
    racks: bool,
    statics: bool,
}

const RACKS: [&str; 3] = ["rack-a", "rack-b", "rack-c"];

/// Groups through rounds of rebalances, each round's owned partitions (or, for the eager
/// sticky assignor, the user data's previous assignment) being what the previous round
/// assigned, with members joining, leaving, lagging a generation behind or subscribing to
/// other topics; racks for members and for partitions' replicas.
fn scenarios(kind: Kind, rng: &mut common::Rng) -> Vec<(Scenario, Vec<String>)> {
    let mut out = Vec::new();
    let tag = kind.tag;
    let sticky = matches!(kind.assignor, Assignor::Sticky | Assignor::CooperativeSticky);
    for group in 0..kind.groups {
        let topics: Vec<(String, i32)> = (0..1 + rng.below(3)).map(|i| (format!("topic-{i}"), 1 + rng.below(14) as i32)).collect();
        let counts: BTreeMap<String, i32> = topics.iter().cloned().collect();
        let mut racks = PartitionRacks::new();
        if kind.racks {
            // Replicas on one or two of the racks (sometimes all three, sometimes unknown).
            for (t, n) in &topics {
                for p in 0..*n {
                    let set: BTreeSet<String> = match rng.below(10) {
                        0 => BTreeSet::new(),
                        1 => RACKS.iter().map(|r| r.to_string()).collect(),
                        _ => RACKS.iter().filter(|_| rng.chance(45)).map(|r| r.to_string()).collect(),
                    };
                    racks.insert(TopicPartition::new(t.clone(), p), set);
                }
            }
        }
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
            let rack_id = (kind.racks && rng.chance(80)).then(|| {
                if rng.chance(10) {
                    "rack-z".to_string()
                } else {
                    RACKS[rng.below(RACKS.len() as u64) as usize].to_string()
                }
            });
            let group_instance_id = (kind.statics && rng.chance(50)).then(|| format!("instance-{}", rng.below(1000)));
            // Broker-style ids: a client id and a random suffix (spreads the hash buckets).
            StickyMember {
                member_id: format!("consumer-{tag}{group}-{next_id}-{:08x}", rng.next() as u32),
                topics,
                generation_id: -1,
                rack_id,
                group_instance_id,
                ..Default::default()
            }
        };
        let mut members: Vec<StickyMember> = (0..1 + rng.below(5)).map(|_| new_member(rng)).collect();
        let mut generation = 1;
        // The eager sticky assignor's view of what each member had: its user data.
        let mut had: BTreeMap<String, Vec<TopicPartition>> = BTreeMap::new();
        for round in 0..8 {
            let mut stolen = false;
            if round > 0 {
                // Some leave (keeping at least one), some join with nothing owned.
                members.retain(|_| !rng.chance(15));
                if members.is_empty() || rng.chance(35) {
                    for _ in 0..1 + rng.below(3) {
                        members.push(new_member(rng));
                    }
                }
                // JoinGroup lists members in no fixed order.
                for i in (1..members.len()).rev() {
                    members.swap(i, rng.below(i as u64 + 1) as usize);
                }
                // A member a generation behind, still claiming another's partitions.
                if sticky && members.len() > 1 && rng.chance(20) {
                    let victim = rng.below(members.len() as u64) as usize;
                    let thief = (victim + 1) % members.len();
                    let stolen_tps = had.get(&members[victim].member_id).cloned().unwrap_or_default();
                    let mut g = (generation - 2).max(-1);
                    if rng.chance(50) {
                        // Or the same generation: both claims are void.
                        g = members[victim].generation_id;
                    }
                    stolen = !stolen_tps.is_empty();
                    had.entry(members[thief].member_id.clone()).or_default().extend(stolen_tps);
                    members[thief].generation_id = g;
                }
                for m in members.iter_mut() {
                    match kind.assignor {
                        Assignor::Sticky => {
                            // Eager: nothing owned; the previous assignment in the user data
                            // (none for a new member; the v0 schema without a generation now
                            // and then; the generation field set or not).
                            m.owned_partitions.clear();
                            let g = m.generation_id;
                            m.user_data = had.get(&m.member_id).map(|tps| sticky_user_data(tps, (g >= 0 && !rng.chance(10)).then_some(g)));
                            if rng.chance(30) {
                                m.generation_id = -1;
                            }
                        }
                        Assignor::CooperativeSticky => {
                            m.owned_partitions = had.get(&m.member_id).cloned().unwrap_or_default();
                            m.user_data = None;
                        }
                        Assignor::Range | Assignor::RoundRobin => {}
                    }
                }
                // A v0/v1 member: the cooperative-sticky generation in its user data.
                if kind.assignor == Assignor::CooperativeSticky && rng.chance(10) {
                    let i = rng.below(members.len() as u64) as usize;
                    let g = members[i].generation_id;
                    members[i].user_data = Some(cooperative_sticky_user_data(g));
                    members[i].generation_id = -1;
                }
            }
            let scenario = Scenario {
                name: format!("{tag}{group}r{round}"),
                assignor: kind.assignor,
                counts: counts.clone(),
                racks: racks.clone(),
                members: members.clone(),
                stolen,
            };
            let result = scenario.assign(&scenario.racks);
            let lines = lines_of(&scenario.name, &result);
            out.push((scenario, lines));
            generation += 1;
            let Ok(assignment) = result else { break };
            had = assignment;
            for m in members.iter_mut() {
                m.generation_id = generation;
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assignors_assign_exactly_as_javas() {
    let Some(b) = Broker::from_env("assignors_assign_exactly_as_javas") else {
        return;
    };
    let Some(lib) = b.vars.get("KAFKA_LIB").cloned() else { panic!("no KAFKA_LIB in the env file") };
    let kinds = [
        Kind { tag: "coop", assignor: Assignor::CooperativeSticky, groups: 60, racks: false, statics: false },
        Kind { tag: "cooprack", assignor: Assignor::CooperativeSticky, groups: 60, racks: true, statics: false },
        Kind { tag: "sticky", assignor: Assignor::Sticky, groups: 60, racks: false, statics: false },
        Kind { tag: "stickyrack", assignor: Assignor::Sticky, groups: 60, racks: true, statics: false },
        Kind { tag: "range", assignor: Assignor::Range, groups: 40, racks: false, statics: true },
        Kind { tag: "rangerack", assignor: Assignor::Range, groups: 60, racks: true, statics: true },
        Kind { tag: "rr", assignor: Assignor::RoundRobin, groups: 40, racks: false, statics: true },
    ];
    let mut rng = common::Rng(0x9E37_79B9_7F4A_7C15);
    let cases: Vec<(Scenario, Vec<String>)> = kinds.iter().flat_map(|k| scenarios(*k, &mut rng)).collect();
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
    let out = tokio::time::timeout(Duration::from_secs(180), java).await.expect("java in time").expect("java runs");
    assert!(out.status.success(), "java failed: {}", String::from_utf8_lossy(&out.stderr));
    let java_lines: Vec<String> =
        String::from_utf8(out.stdout).unwrap().lines().filter(|l| l.starts_with("A ") || l.starts_with("X ")).map(str::to_owned).collect();
    let mut by_scenario: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in java_lines {
        let name = l.split(' ').nth(1).unwrap_or_default().to_owned();
        by_scenario.entry(name).or_default().push(l);
    }
    // Per assignor: scenarios, with unequal subscriptions, with conflicting claims, where racks
    // changed the assignment.
    let mut stats: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    for (s, ours) in &cases {
        let theirs = by_scenario.get(&s.name).cloned().unwrap_or_default();
        let mut input = String::new();
        s.to_java(&mut input);
        assert_eq!(ours, &theirs, "scenario {} differs from Java's:\n{input}", s.name);
        let st = stats.entry(s.assignor.name()).or_default();
        st[0] += 1;
        let equal = s.members.iter().all(|m| {
            let mut a = m.topics.clone();
            let mut b = s.members[0].topics.clone();
            a.sort();
            b.sort();
            a == b
        });
        st[1] += usize::from(!equal);
        st[2] += usize::from(s.stolen);
        st[3] += usize::from(!s.racks.is_empty() && lines_of(&s.name, &s.assign(&PartitionRacks::new())) != *ours);
    }
    println!("scenarios, unequal subscriptions, conflicting claims, changed by racks: {stats:?}");
    // The generator must have reached the interesting cases, or this proves little.
    for (name, [n, general, _, racked]) in &stats {
        assert!(*n >= 300 && *general >= 60, "{name}: {n} scenarios, {general} general");
        if *name != "roundrobin" {
            assert!(*racked >= 30, "{name}: racks changed only {racked} assignments");
        }
    }
    for name in ["cooperative-sticky", "sticky"] {
        assert!(stats[name][2] >= 10, "{name}: too few conflicting claims: {:?}", stats[name]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
