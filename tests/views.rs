//! The borrowed views (`XxxView<'a>`) against the owned decode, over every message and version.
//!
//! For each (message, version) and several seeds, on the sample encoding (every field set, unknown
//! tagged fields where the version is flexible):
//! - the view decodes every byte, with **no allocation**, and a walk of all of it (its `Debug`
//!   output written to a sink: every field, every array element, every tagged field) allocates
//!   nothing either (a counting global allocator: this file is its own test binary);
//! - `into_owned()` is equal to the value that was encoded;
//! - every strict prefix, and the input with bytes overwritten at many offsets, gives the same
//!   outcome through the view as through the owned decode: both fail with the same error (kind,
//!   message, field path, offset), or both succeed with equal values.

#![cfg(feature = "views")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

use kwire::messages::visit_view_messages;
use kwire::runtime::sample::{Sample, SampleRng, ViewMessageVisitor};
use kwire::runtime::view::{IntoOwned, MessageView, View, Viewed};
use kwire::{Bytes, DecodeError, Message};

thread_local! {
    // Per thread, so tests running in parallel do not count each other's allocations.
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; only calls are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = TRACKING.try_with(|t| {
            if t.get() {
                ALLOCATIONS.set(ALLOCATIONS.get() + 1);
            }
        });
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations<R>(f: impl FnOnce() -> R) -> (R, usize) {
    ALLOCATIONS.set(0);
    TRACKING.set(true);
    let r = f();
    TRACKING.set(false);
    (r, ALLOCATIONS.get())
}

/// Equal, or equal as text (a float64 NaN is not equal to itself).
fn same<M: Message>(a: &M, b: &M) -> bool {
    a == b || format!("{a:?}") == format!("{b:?}")
}

/// What an error says, for comparing the two decoders.
fn describe(e: &DecodeError) -> String {
    format!("{:?} in {:?} at {:?}, path {}", e.kind(), e.message(), e.offset(), e.path_string())
}

/// The outcome of decoding `input` both ways: equal, or the difference.
fn same_outcome<M: Message + Viewed>(input: &Bytes, version: i16) -> Result<(), String> {
    let owned = M::decode(&mut input.clone(), version);
    let mut slice: &[u8] = input;
    let view = M::View::decode(&mut slice, version);
    match (owned, view) {
        (Ok(o), Ok(v)) => {
            let back = v.into_owned();
            if !same(&back, &o) {
                return Err(format!("both decode, but differ:\n  owned {o:?}\n  view  {back:?}"));
            }
        }
        (Err(a), Err(b)) => {
            let (a, b) = (describe(&a), describe(&b));
            if a != b {
                return Err(format!("both fail, differently:\n  owned {a}\n  view  {b}"));
            }
        }
        (Ok(_), Err(e)) => return Err(format!("only the view fails: {}", describe(&e))),
        (Err(e), Ok(_)) => return Err(format!("only the owned decode fails: {}", describe(&e))),
    }
    Ok(())
}

struct Views {
    seeds: std::ops::Range<u64>,
    /// This thread checks the messages visited at `part`, `part + parts`, ...
    part: usize,
    parts: usize,
    visited: usize,
    versions: usize,
    checked_inputs: usize,
    failures: Vec<String>,
}

impl Views {
    fn check<M: Message + Sample + Viewed>(&mut self, version: i16, seed: u64) -> Result<(), String> {
        let value = M::sample(version, &mut SampleRng::new(seed));
        let bytes = value.to_bytes(version).map_err(|e| format!("encode: {e}"))?;

        let mut slice: &[u8] = &bytes;
        let (walked, count) = allocations(|| {
            let view = M::View::decode(&mut slice, version)?;
            // Every field and element, through the views' Debug impls.
            let _ = write!(std::io::sink(), "{view:?}");
            Ok::<_, DecodeError>(view)
        });
        let view = walked.map_err(|e| format!("view decode: {e}"))?;
        if count != 0 {
            return Err(format!("decoding and walking the view allocated {count} times"));
        }
        if !slice.is_empty() {
            return Err(format!("{} bytes left after the view", slice.len()));
        }
        let back = view.into_owned();
        if !same(&back, &value) {
            return Err(format!("into_owned differs:\n  wrote {value:?}\n  read  {back:?}"));
        }

        for cut in 0..bytes.len() {
            self.checked_inputs += 1;
            same_outcome::<M>(&bytes.slice(..cut), version).map_err(|e| format!("{cut}-byte prefix: {e}"))?;
        }
        // Overwrite one byte at a time with values that hit lengths, counts, null markers,
        // varint continuation bits and UTF-8: 0x00, 0x7f, 0x80, 0xff and a flipped bit.
        let mut rng = SampleRng::new(seed ^ 0x5eed);
        for at in 0..bytes.len() {
            let original = bytes[at];
            for replace in [0x00, 0x7f, 0x80, 0xff, original ^ (1 << (rng.next_u64() % 8))] {
                if replace == original {
                    continue;
                }
                let mut mutated = bytes.to_vec();
                mutated[at] = replace;
                self.checked_inputs += 1;
                // The reads meant for checked bytes (an iterated element: nested arrays skipped,
                // not checked) must not panic on bytes that were never checked, read in full.
                let mut slice: &[u8] = &mutated;
                if let Ok(v) = <M::View<'_> as View<'_>>::decode_trusted(&mut slice, version, false) {
                    let _ = write!(std::io::sink(), "{v:?}");
                }
                same_outcome::<M>(&Bytes::from(mutated), version).map_err(|e| format!("byte {at} set to {replace:#04x}: {e}"))?;
            }
        }
        Ok(())
    }
}

impl ViewMessageVisitor for Views {
    fn visit<M: Message + Sample + Viewed>(&mut self) {
        self.visited += 1;
        if (self.visited - 1) % self.parts != self.part {
            return;
        }
        assert_eq!(<M::View<'_> as MessageView<'_>>::NAME, M::NAME);
        for version in M::VERSIONS.iter() {
            self.versions += 1;
            for seed in self.seeds.clone() {
                if let Err(e) = self.check::<M>(version, seed) {
                    self.failures.push(format!("{} v{version} seed {seed}: {e}", M::NAME));
                    break;
                }
            }
        }
    }
}

#[test]
fn views_agree_with_the_owned_decode_and_never_allocate() {
    // Every other message per thread (the check is quadratic in a message's size; the
    // allocation counter is per thread), merged afterwards.
    let parts = 2;
    let runs: Vec<Views> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..parts)
            .map(|part| {
                s.spawn(move || {
                    let mut v = Views { seeds: 0..2, part, parts, visited: 0, versions: 0, checked_inputs: 0, failures: Vec::new() };
                    visit_view_messages(&mut v);
                    v
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("a views thread")).collect()
    });
    let mut v = Views { seeds: 0..2, part: 0, parts, visited: 0, versions: 0, checked_inputs: 0, failures: Vec::new() };
    for run in runs {
        v.versions += run.versions;
        v.checked_inputs += run.checked_inputs;
        v.failures.extend(run.failures);
    }
    let shown: Vec<_> = v.failures.iter().take(20).collect();
    assert!(v.failures.is_empty(), "{} failures, first ones:\n{shown:#?}", v.failures.len());
    // Every version of every api's request and response, plus the headers and the data specs.
    let api_versions: usize = kwire::ApiKey::ALL.iter().map(|k| 2 * k.info().valid.iter().count()).sum();
    assert!(v.versions > api_versions, "only {} (message, version) pairs of {api_versions}", v.versions);
    eprintln!("{} (message, version) pairs, {} inputs compared", v.versions, v.checked_inputs);
}

#[test]
fn a_view_reads_the_fields_in_place() {
    use kwire::messages::metadata_response::*;
    let topic = MetadataResponseTopic {
        name: Some("orders".into()),
        partitions: vec![MetadataResponsePartition { partition_index: 3, leader_id: 2, replica_nodes: [2, 0, 1].into_iter().collect(), ..Default::default() }],
        ..Default::default()
    };
    let msg = MetadataResponse { topics: vec![topic], cluster_id: Some("c-1".into()), ..Default::default() };
    let bytes = msg.to_bytes(12).unwrap();
    let mut slice: &[u8] = &bytes;
    let view = MetadataResponseView::decode(&mut slice, 12).unwrap();
    assert_eq!(view.cluster_id, Some("c-1"));
    let t = view.topics.iter().next().unwrap();
    assert_eq!(t.name, Some("orders"));
    // The name points into the frame: no copy was made.
    let name = t.name.unwrap();
    assert!(bytes.as_ptr_range().contains(&name.as_ptr()));
    let p = t.partitions.iter().next().unwrap();
    assert_eq!((p.partition_index, p.leader_id), (3, 2));
    assert_eq!(p.replica_nodes.iter().collect::<Vec<_>>(), [2, 0, 1]);
    assert_eq!(p.leader_epoch, -1, "absent in the owned value's default, -1 by the spec");
    // A version the message does not have is refused up front.
    let err = MetadataResponseView::decode(&mut &bytes[..], 99).unwrap_err();
    assert_eq!(err.kind(), &kwire::DecodeErrorKind::UnsupportedVersion { version: 99 });
}
