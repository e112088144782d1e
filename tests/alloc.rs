//! Bounded memory on hostile input, measured with a counting global allocator (this file is its
//! own test binary so the allocator affects no other test).
//!
//! For every message (requests, responses, headers, data) at every valid version, adversarial
//! bodies are built from the message's sample encoding: at every byte offset, a length or count
//! prefix claiming exactly the bytes left (the most the remaining-bytes check lets through)
//! followed by filler that decodes as small elements; a prefix claiming the maximum (int32,
//! int16, varint) with nothing behind it; and, in flexible versions, a tagged-field section whose
//! one field claims all the bytes left. That covers maximal counts and lengths at every nesting
//! depth, huge tagged-field sizes and records fields claiming gigabytes. Each must decode (to an
//! error, or to whatever the bytes happen to mean) with the peak of bytes allocated during the
//! decode within `ALLOC_PER_INPUT_BYTE * input length + ALLOC_FIXED`, the bound the README's
//! Safety section states.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kwire::messages::visit_messages;
use kwire::runtime::sample::{MessageVisitor, Sample, SampleRng};
use kwire::runtime::varint::write_unsigned_varint;
use kwire::{Bytes, Decode, DecodeErrorKind, Message};

/// Peak heap bytes a decode may use per byte of input... Not smaller because honest content can
/// cost that much: a 2-byte empty topic name decodes to a struct of about 100 bytes, and a vector
/// holds its old and new blocks while it grows.
const ALLOC_PER_INPUT_BYTE: usize = 128;
/// ...plus this much whatever the input (the first 4 KiB each array may reserve, error values).
const ALLOC_FIXED: usize = 64 << 10;

/// Filler after a claimed length: long enough that allocation proportional to a claim shows.
const FILLER: usize = 4096;

thread_local! {
    // Counted per thread, so tests running in parallel do not see each other's allocations.
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

struct Counting;

fn record(delta: isize) {
    let _ = TRACKING.try_with(|t| {
        if t.get() {
            let now = CURRENT.get() + delta;
            CURRENT.set(now);
            if now > PEAK.get() {
                PEAK.set(now);
            }
        }
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size() as isize);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record(-(layout.size() as isize));
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size() as isize);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Count the old and new blocks as both live while moving, as a copying realloc has them.
        record(new_size as isize);
        record(-(layout.size() as isize));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Decodes `input` as `M` at `version` and returns the peak bytes allocated meanwhile, and
/// whether the decode failed.
fn peak_decode<M: Message>(input: &Bytes, version: i16) -> (usize, bool) {
    let mut buf = input.clone();
    CURRENT.set(0);
    PEAK.set(0);
    TRACKING.set(true);
    let result = M::decode(&mut buf, version);
    let failed = result.is_err();
    drop(result);
    TRACKING.set(false);
    (PEAK.get().max(0) as usize, failed)
}

/// Adversarial inputs for a message whose valid encoding at this version is `sample`.
fn adversarial(sample: &[u8], flexible: bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let filler = if flexible { 1u8 } else { 0u8 };
    for at in 0..=sample.len() {
        let head = &sample[..at];
        let mut prefixes: Vec<Vec<u8>> = Vec::new();
        if flexible {
            // Compact length/count of exactly the bytes left, and the largest varint.
            let mut exact = Vec::new();
            write_unsigned_varint(&mut exact, FILLER as u32 + 1);
            prefixes.push(exact);
            prefixes.push(vec![0xff, 0xff, 0xff, 0xff, 0x0f]);
            // A tagged-field section: one field (tag 0, then tag 1000) claiming all that is left.
            for tag in [0u32, 1000] {
                let mut tagged = vec![1];
                write_unsigned_varint(&mut tagged, tag);
                write_unsigned_varint(&mut tagged, FILLER as u32);
                prefixes.push(tagged);
            }
        } else {
            prefixes.push((FILLER as i32).to_be_bytes().to_vec());
            prefixes.push((FILLER as i16).to_be_bytes().to_vec());
            prefixes.push(i32::MAX.to_be_bytes().to_vec());
            prefixes.push(i16::MAX.to_be_bytes().to_vec());
        }
        for prefix in prefixes {
            let mut input = [head, &prefix].concat();
            input.resize(input.len() + FILLER, filler);
            out.push(input);
        }
        // The maximal claims with nothing behind them.
        out.push([head, &[0x7f, 0xff, 0xff, 0xff][..]].concat());
        if flexible {
            out.push([head, &[0xff, 0xff, 0xff, 0xff, 0x0f][..]].concat());
        }
    }
    out
}

#[derive(Default)]
struct Bounded {
    inputs: usize,
    errors: usize,
    worst: Option<(f64, String)>,
    worst_large: Option<(f64, String)>,
    failures: Vec<String>,
}

impl MessageVisitor for Bounded {
    fn visit<M: Message + Sample>(&mut self) {
        for version in M::VERSIONS.iter() {
            let Ok(sample) = M::sample(version, &mut SampleRng::new(1)).to_bytes(version) else { continue };
            let flexible = M::FLEXIBLE_VERSIONS.contains(version);
            for input in adversarial(&sample, flexible) {
                let input = Bytes::from(input);
                let (peak, failed) = peak_decode::<M>(&input, version);
                self.inputs += 1;
                self.errors += usize::from(failed);
                let bound = ALLOC_PER_INPUT_BYTE * input.len() + ALLOC_FIXED;
                let ratio = peak as f64 / input.len() as f64;
                let what = || format!("{} v{version}: {peak} bytes for {} input bytes", M::NAME, input.len());
                if self.worst.as_ref().is_none_or(|(w, _)| ratio > *w) {
                    self.worst = Some((ratio, what()));
                }
                if input.len() >= FILLER && self.worst_large.as_ref().is_none_or(|(w, _)| ratio > *w) {
                    self.worst_large = Some((ratio, what()));
                }
                if peak > bound && self.failures.len() < 20 {
                    self.failures.push(format!(
                        "{} v{version}: peak {peak} bytes for {} input bytes (bound {bound}): {}",
                        M::NAME,
                        input.len(),
                        hex::encode(&input[..input.len().min(64)])
                    ));
                }
            }
        }
    }
}

#[test]
fn hostile_bodies_stay_within_the_allocation_bound() {
    let mut b = Bounded::default();
    visit_messages(&mut b);
    println!("{} inputs, {} rejected; worst peak/input: {:?}; of long inputs: {:?}", b.inputs, b.errors, b.worst, b.worst_large);
    assert!(b.inputs > 100_000, "too few inputs: {}", b.inputs);
    // Most claims are lies the decoder must reject; the rest happen to decode as filler.
    assert!(b.errors * 2 > b.inputs, "only {} of {} inputs were rejected", b.errors, b.inputs);
    assert!(b.failures.is_empty(), "allocation over the bound:\n{}", b.failures.join("\n"));
}

#[test]
fn tiny_frames_claiming_gigabytes_allocate_nothing_proportional() {
    use kwire::messages::{FetchResponse, ProduceRequest};
    // A Produce v3 body whose first field (transactional id) is null and whose topic array claims
    // i32::MAX elements; and one whose records field claims 2 GiB.
    let count = Bytes::from_static(&[0xff, 0xff, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff]);
    let (peak, failed) = peak_decode::<ProduceRequest>(&count, 3);
    assert!(failed);
    assert!(peak < 4096, "{peak}");
    // Null transactional id, acks 1, timeout 1, one topic "t", one partition 0, then records.
    let mut records = vec![0xff, 0xff, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 0];
    records.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
    let input = Bytes::from(records);
    let err = ProduceRequest::decode(&mut input.clone(), 3).unwrap_err();
    assert_eq!(err.path_string(), "TopicData[0].PartitionData[0].Records");
    assert!(matches!(err.kind(), DecodeErrorKind::LengthExceedsRemaining { length: 0x7fff_ffff, .. }), "{err}");
    let (peak, _) = peak_decode::<ProduceRequest>(&input, 3);
    assert!(peak < 4096, "{peak}");
    // Same for a Fetch response of eight bytes.
    let (peak, failed) = peak_decode::<FetchResponse>(&Bytes::from_static(&[0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff]), 4);
    assert!(failed);
    assert!(peak < 4096, "{peak}");
}

#[test]
fn lying_counts_reserve_no_more_than_four_bytes_per_input_byte() {
    use kwire::messages::MetadataResponse;
    // MetadataResponse v0 claiming 100,000 brokers, backed by 100,000 bytes in which the first
    // broker already fails (its host is null). Reserving the claim would take 100,000 times the
    // size of a broker struct (about 10 MB); the reservation is capped at 4 bytes per input byte.
    let mut input = 100_000i32.to_be_bytes().to_vec();
    input.extend_from_slice(&[0, 0, 0, 1]);
    input.resize(4 + 100_000, 0xff);
    let input = Bytes::from(input);
    let (peak, failed) = peak_decode::<MetadataResponse>(&input, 0);
    assert!(failed);
    assert!(peak <= 4 * input.len() + 8192, "{peak} bytes for {} input bytes", input.len());
}
