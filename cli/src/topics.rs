//! `kwire topics list|describe|create|delete`, as `kafka-topics.sh` does them.

use std::io::Write;

use clap::{Args, Subcommand};
use kwire::runtime::json::serde_json::{json, Value};
use kwire_client::{Admin, NewTopic, TopicInfo};

use crate::error::CliError;
use crate::format::{print_json, Table};

/// `kwire topics`.
#[derive(Subcommand, Debug)]
pub enum TopicsCommand {
    /// Lists the topics' names.
    List {
        /// Internal topics too (__consumer_offsets, __transaction_state).
        #[arg(long)]
        internal: bool,
        /// A JSON array of names.
        #[arg(long)]
        json: bool,
    },
    /// Each partition's leader, replicas and in-sync replicas.
    Describe {
        /// The topics (all of them when none is given).
        topics: Vec<String>,
        /// One JSON object per topic: name, id, internal, partitions [{partition, leader,
        /// leaderEpoch, replicas, isr}].
        #[arg(long)]
        json: bool,
    },
    /// Creates a topic.
    Create(CreateArgs),
    /// Deletes topics.
    Delete {
        /// The topics.
        #[arg(required = true)]
        topics: Vec<String>,
    },
}

/// `kwire topics create`.
#[derive(Args, Debug)]
pub struct CreateArgs {
    /// The topic.
    pub topic: String,
    /// Partitions (the broker's num.partitions by default).
    #[arg(long, default_value_t = -1)]
    pub partitions: i32,
    /// Replication factor (the broker's default.replication.factor by default).
    #[arg(long, default_value_t = -1)]
    pub replication_factor: i16,
    /// A topic config, `KEY=VALUE`; repeatable.
    #[arg(long = "config", value_name = "KEY=VALUE")]
    pub configs: Vec<String>,
}

/// A `KEY=VALUE` pair.
pub fn key_value(s: &str, flag: &str) -> Result<(String, String), CliError> {
    s.split_once('=').map(|(k, v)| (k.trim().to_owned(), v.to_owned())).ok_or_else(|| CliError::Usage(format!("{flag} {s:?}: expected KEY=VALUE")))
}

fn topic_json(t: &TopicInfo) -> Value {
    let partitions: Vec<Value> = t
        .partitions
        .iter()
        .map(|p| json!({"partition": p.index, "leader": p.leader, "leaderEpoch": p.leader_epoch, "replicas": p.replicas, "isr": p.isr}))
        .collect();
    json!({"name": t.name, "id": t.id.to_kafka_string(), "internal": t.internal, "partitions": partitions})
}

fn ids(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// Runs `kwire topics ...`.
pub async fn run(admin: &Admin, command: TopicsCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        TopicsCommand::List { internal, json } => {
            let names = admin.list_topics(internal).await.map_err(|e| CliError::kafka("listing topics", e))?;
            if json {
                return print_json(out, &json!(names));
            }
            for n in names {
                writeln!(out, "{n}").map_err(CliError::io)?;
            }
        }
        TopicsCommand::Describe { topics, json } => {
            let names = if topics.is_empty() { admin.list_topics(false).await.map_err(|e| CliError::kafka("listing topics", e))? } else { topics };
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let described = admin.describe_topics(&refs).await.map_err(|e| CliError::kafka("describing topics", e))?;
            let mut failed = Vec::new();
            let mut table = Table::new(&["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"]);
            for (name, d) in names.iter().zip(described) {
                match d {
                    Ok(t) => {
                        if json {
                            print_json(out, &topic_json(&t))?;
                        }
                        for p in &t.partitions {
                            table.row(vec![t.name.clone(), p.index.to_string(), p.leader.to_string(), ids(&p.replicas), ids(&p.isr)]);
                        }
                    }
                    Err(e) => {
                        eprintln!("kwire: topic {name}: {e}");
                        failed.push(name.clone());
                    }
                }
            }
            if !json {
                table.write(out)?;
            }
            if !failed.is_empty() {
                return Err(CliError::Incomplete(format!("could not describe {}", failed.join(", "))));
            }
        }
        TopicsCommand::Create(a) => {
            let mut t = NewTopic::new(&a.topic, a.partitions).replication_factor(a.replication_factor);
            for c in &a.configs {
                let (k, v) = key_value(c, "--config")?;
                t = t.config(k, v);
            }
            let created = admin.create_topic(t).await.map_err(|e| CliError::kafka(format!("creating topic {}", a.topic), e))?;
            writeln!(out, "created topic {} ({} partitions, replication factor {})", created.name, created.partitions, created.replication_factor)
                .map_err(CliError::io)?;
        }
        TopicsCommand::Delete { topics } => {
            let refs: Vec<&str> = topics.iter().map(String::as_str).collect();
            let results = admin.delete_topics(&refs).await.map_err(|e| CliError::kafka("deleting topics", e))?;
            let mut failed = 0;
            for (name, r) in topics.iter().zip(results) {
                match r {
                    Ok(()) => writeln!(out, "deleted topic {name}").map_err(CliError::io)?,
                    Err(e) => {
                        failed += 1;
                        eprintln!("kwire: deleting topic {name}: {e}");
                    }
                }
            }
            if failed > 0 {
                return Err(CliError::Incomplete(format!("{failed} of {} topic(s) not deleted", topics.len())));
            }
        }
    }
    Ok(())
}
