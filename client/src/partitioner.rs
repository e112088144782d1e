//! Java's default partitioning: murmur2 of the key for keyed records
//! (`Utils.toPositive(Utils.murmur2(key)) % partitions`), and for unkeyed ones Java's built-in
//! partitioner since Kafka 3.3 (KIP-794, `BuiltInPartitioner`): one partition per topic until
//! `batch.size` bytes went to it (up to twice that while its last batch is not full), then
//! another, at random weighted by how short each available partition's queue is (adaptive
//! partitioning), or uniformly among the partitions with a leader when the queues are even.

/// Kafka's `Utils.murmur2`: MurmurHash2, 32-bit, seed `0x9747b28c`.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= (rest[2] as u32) << 16;
    }
    if rest.len() >= 2 {
        h ^= (rest[1] as u32) << 8;
    }
    if !rest.is_empty() {
        h ^= rest[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Kafka's `Utils.toPositive`: clears the sign bit.
pub fn to_positive(n: i32) -> i32 {
    n & 0x7fff_ffff
}

/// The partition Java's producer picks for a keyed record.
pub fn partition_for_key(key: &[u8], partitions: usize) -> i32 {
    if partitions == 0 {
        return 0;
    }
    (to_positive(murmur2(key)) as usize % partitions) as i32
}

/// Java's `BuiltInPartitioner.PartitionLoadStats` for one topic: a cumulative frequency table
/// over its available partitions, each weighted by `longest queue + 1 - its queue` (queues in
/// batches waiting to be sent), so that a partition whose broker keeps up is picked more often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadStats {
    cumulative: Vec<u32>,
    partitions: Vec<i32>,
}

impl LoadStats {
    /// The statistics for `queues` (`(partition, queued batches)` of the partitions with a
    /// leader) among `all` partitions, or `None` where Java keeps none: fewer than two
    /// partitions, none available, or every partition available with queues of one length.
    pub fn new(queues: &[(i32, usize)], all: usize) -> Option<LoadStats> {
        let first = queues.first()?.1;
        if all < 2 {
            return None;
        }
        let longest = queues.iter().map(|&(_, n)| n).max().unwrap_or(0);
        if queues.iter().all(|&(_, n)| n == first) && queues.len() == all {
            return None;
        }
        let plus_one = u32::try_from(longest).unwrap_or(u32::MAX - 1).saturating_add(1);
        let mut sum = 0u32;
        let cumulative = queues
            .iter()
            .map(|&(_, n)| {
                sum = sum.saturating_add(plus_one - u32::try_from(n).unwrap_or(u32::MAX - 1).min(plus_one - 1));
                sum
            })
            .collect();
        Some(LoadStats { cumulative, partitions: queues.iter().map(|&(p, _)| p).collect() })
    }

    /// The table's running sums, as Java's `cumulativeFrequencyTable`.
    pub fn cumulative(&self) -> &[u32] {
        &self.cumulative
    }

    /// The partition a non-negative random number picks (Java's `nextPartition`: the first
    /// entry of the table greater than `random % total`).
    pub fn pick(&self, random: u32) -> i32 {
        let total = self.cumulative.last().copied().unwrap_or(0).max(1);
        let weighted = random % total;
        let i = self.cumulative.partition_point(|&c| c <= weighted);
        self.partitions.get(i).or(self.partitions.last()).copied().unwrap_or(0)
    }
}

/// The next partition for a topic's unkeyed records, as Java's `BuiltInPartitioner`: by `load`
/// when there are statistics, else uniformly among `available` (partitions with a leader),
/// else among all `partitions`. `random` is a non-negative random number (Java's
/// `Utils.toPositive(ThreadLocalRandom.current().nextInt())`).
pub fn next_partition(random: u32, load: Option<&LoadStats>, available: &[i32], partitions: usize) -> i32 {
    match load {
        Some(load) => load.pick(random),
        None if !available.is_empty() => available.get(random as usize % available.len()).copied().unwrap_or(0),
        None => (random as usize % partitions.max(1)) as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_stats_weigh_short_queues_as_java_does() {
        // Java's example: queues 0 3 1 -> weights 4 1 3 -> table 4 5 8.
        let load = LoadStats::new(&[(0, 0), (1, 3), (2, 1)], 3).unwrap();
        assert_eq!(load.cumulative(), [4, 5, 8]);
        let picks: Vec<i32> = (0..8).map(|r| load.pick(r)).collect();
        assert_eq!(picks, [0, 0, 0, 0, 1, 2, 2, 2]);
        assert_eq!(load.pick(8 + 4), 1, "modulo the total");
        // Even queues over every partition: no statistics, uniform among the available.
        assert_eq!(LoadStats::new(&[(0, 2), (1, 2), (2, 2)], 3), None);
        // Even queues but a partition without a leader: statistics over the others.
        assert_eq!(LoadStats::new(&[(0, 2), (2, 2)], 3).unwrap().cumulative(), [1, 2]);
        assert_eq!(LoadStats::new(&[(0, 5)], 1), None, "one partition");
        assert_eq!(LoadStats::new(&[], 3), None, "none available");
        assert_eq!(next_partition(7, None, &[1, 4], 6), 4);
        assert_eq!(next_partition(7, None, &[], 6), 1);
        assert_eq!(next_partition(5, Some(&load), &[0, 1, 2], 3), 2);
    }
}
