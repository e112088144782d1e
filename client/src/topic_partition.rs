//! [`TopicPartition`], the name of one partition, used by every layer above the connection.

/// A partition of a topic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic.
    pub topic: String,
    /// The partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// `topic`'s partition `partition`.
    pub fn new(topic: impl Into<String>, partition: i32) -> TopicPartition {
        TopicPartition { topic: topic.into(), partition }
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Partition numbers by topic, for requests that list partitions under their topic.
pub(crate) fn by_topic<'a>(tps: impl IntoIterator<Item = &'a TopicPartition>) -> std::collections::BTreeMap<&'a str, Vec<i32>> {
    let mut out: std::collections::BTreeMap<&str, Vec<i32>> = std::collections::BTreeMap::new();
    for tp in tps {
        out.entry(tp.topic.as_str()).or_default().push(tp.partition);
    }
    out
}
