//! Java's default partitioning: murmur2 of the key for keyed records
//! (`Utils.toPositive(Utils.murmur2(key)) % partitions`), sticky partitions for unkeyed ones
//! (KIP-480: keep one partition per topic until its batch is done, then pick another at random
//! among those with a leader).

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

/// A new sticky partition for a topic, different from `previous` where there is a choice:
/// random among `available` (partitions with a leader), else among all `partitions`.
pub fn next_sticky(previous: Option<i32>, available: &[i32], partitions: usize) -> i32 {
    if available.is_empty() {
        pick_among(previous, partitions, |i| i as i32)
    } else {
        pick_among(previous, available.len(), |i| available.get(i).copied().unwrap_or(0))
    }
}

/// A random one of `len` candidates (`pool(i)` is the i-th), different from `previous` where
/// there is a choice; 0 when there is none. Nothing is collected: the producer calls this for
/// every new batch.
pub(crate) fn pick_among(previous: Option<i32>, len: usize, pool: impl Fn(usize) -> i32) -> i32 {
    match len {
        0 => 0,
        1 => pool(0),
        _ => loop {
            let pick = pool(random_index(len));
            if Some(pick) != previous {
                break pick;
            }
        },
    }
}

fn random_index(n: usize) -> usize {
    ((crate::retry::random_unit() * n as f64) as usize).min(n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_changes_partition_when_it_can() {
        for _ in 0..100 {
            let p = next_sticky(Some(1), &[0, 1, 2], 3);
            assert_ne!(p, 1);
        }
        assert_eq!(next_sticky(Some(1), &[1], 3), 1);
        assert!((0..3).contains(&next_sticky(None, &[], 3)));
    }
}
