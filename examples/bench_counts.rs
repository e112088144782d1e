//! Allocations per operation for the benchmark workloads (`benches/codec.rs`), kwire next to
//! kafka-protocol, counted by a global allocator; and a runner for `benches/callgrind.sh`.
//!
//! ```sh
//! cargo run --release --example bench_counts               # the allocation table
//! cargo run --release --example bench_counts -- list       # every operation id
//! cargo run --release --example bench_counts -- run W1/decode/kwire 10   # 10 times
//! cargo run --release --example bench_counts -- dump DIR   # W1.bin..W5.bin for the other peers
//! ```

#[path = "../benches/workloads/mod.rs"]
mod workloads;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::{Decodable, Encodable};
use kwire::codec::Vectored;
use kwire::runtime::records::{Batch, Batches};
use kwire::Message;
use workloads::{kp, kw, Data, Spec};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static REALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        REALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size.saturating_sub(layout.size()) as u64, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One benchmarked operation: `W1/decode/kwire`.
struct Op {
    id: String,
    run: Box<dyn FnMut()>,
}

fn op(spec: &Spec, name: &str, crate_name: &str, run: impl FnMut() + 'static) -> Op {
    Op { id: format!("{}/{name}/{crate_name}", spec.id), run: Box::new(run) }
}

fn message_ops<A, B>(ops: &mut Vec<Op>, spec: &'static Spec, ours: A, theirs: B)
where
    A: Message + 'static,
    B: Encodable + Decodable + 'static,
{
    let v = spec.version;
    let frame = ours.to_bytes(v).unwrap();
    workloads::check(spec, "kwire", &frame).unwrap();
    let (ours, theirs) = (std::rc::Rc::new(ours), std::rc::Rc::new(theirs));
    let (a, mut buf) = (ours.clone(), BytesMut::with_capacity(spec.len));
    ops.push(op(spec, "encode", "kwire", move || {
        buf.clear();
        a.encode(&mut buf, v).unwrap();
    }));
    let (t, mut buf) = (theirs.clone(), BytesMut::with_capacity(spec.len));
    ops.push(op(spec, "encode", "kafka-protocol", move || {
        buf.clear();
        t.encode(&mut buf, v).unwrap();
    }));
    let a = ours.clone();
    ops.push(op(spec, "encode_sized", "kwire", move || {
        let mut out = BytesMut::with_capacity(a.encoded_len(v));
        a.encode(&mut out, v).unwrap();
        std::hint::black_box(out);
    }));
    let t = theirs.clone();
    ops.push(op(spec, "encode_sized", "kafka-protocol", move || {
        let mut out = BytesMut::with_capacity(t.compute_size(v).unwrap());
        t.encode(&mut out, v).unwrap();
        std::hint::black_box(out);
    }));
    let f = frame.clone();
    ops.push(op(spec, "decode", "kwire", move || {
        std::hint::black_box(A::decode(&mut f.clone(), v).unwrap());
    }));
    let f = frame.clone();
    ops.push(op(spec, "decode", "kafka-protocol", move || {
        std::hint::black_box(B::decode(&mut f.clone(), v).unwrap());
    }));
}

fn copy_ops<A: Message + 'static>(ops: &mut Vec<Op>, spec: &'static Spec, ours: A, shared: fn(&A) -> Vec<Bytes>) {
    let src = ours.to_bytes(spec.version).unwrap().to_vec();
    let mut dst = vec![0xa5u8; src.len()];
    ops.push(op(spec, "memcpy", "-", move || {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
    }));
    ops.push(op(spec, "encode_vectored", "kwire", move || {
        let mut out = Vectored::new(shared(&ours), 4096);
        ours.encode(&mut out, spec.version).unwrap();
        std::hint::black_box(out.finish());
    }));
}

/// What selective decoding saves a proxy: the workload's response as a frame read through
/// `ClientCodec`, decoded (`proxy_decode`) or passed through raw (`proxy_passthrough`, a
/// `Selection` without its api). Both copy the frame into the read buffer first, as a socket does.
fn proxy_ops<A: Message + Into<kwire::ResponseKind> + 'static>(ops: &mut Vec<Op>, spec: &'static Spec, ours: A, api: kwire::ApiKey) {
    use kwire::codec::{ClientCodec, OutboundResponse, Selection, ServerCodec};
    let v = spec.version;
    let mut frame = BytesMut::new();
    let response = OutboundResponse { correlation_id: 1, api_key: api, version: v, body: ours.into() };
    ServerCodec::new().encode_response(response, &mut frame).unwrap();
    let frame = frame.freeze();
    for (name, selection) in [("proxy_decode", Selection::none().api(api)), ("proxy_passthrough", Selection::none())] {
        let (f, mut codec) = (frame.clone(), ClientCodec::new());
        ops.push(op(spec, name, "kwire", move || {
            codec.expect_response(1, api, v).unwrap();
            let mut buf = BytesMut::from(&f[..]);
            std::hint::black_box(codec.decode_response_selected(&mut buf, &selection).unwrap().unwrap());
        }));
    }
}

fn record_ops(ops: &mut Vec<Op>, d: &Data) {
    let spec = &workloads::W5;
    let builder = std::rc::Rc::new(kw::w5(d));
    let theirs = std::rc::Rc::new(kp::w5(d));
    let frame = builder.build().unwrap();
    workloads::check(spec, "kwire", &frame).unwrap();
    let (b, mut out) = (builder.clone(), Vec::with_capacity(spec.len));
    ops.push(op(spec, "encode", "kwire", move || {
        out.clear();
        b.build_into(&mut out).unwrap();
    }));
    let (t, mut buf) = (theirs.clone(), BytesMut::with_capacity(spec.len));
    ops.push(op(spec, "encode", "kafka-protocol", move || {
        buf.clear();
        kafka_protocol::records::RecordBatchEncoder::encode(&mut buf, t.iter(), &kp::W5_OPTIONS).unwrap();
    }));
    let b = builder.clone();
    ops.push(op(spec, "encode_sized", "kwire", move || {
        std::hint::black_box(b.build().unwrap());
    }));
    let t = theirs.clone();
    ops.push(op(spec, "encode_sized", "kafka-protocol", move || {
        let mut out = BytesMut::with_capacity(spec.len);
        kafka_protocol::records::RecordBatchEncoder::encode(&mut out, t.iter(), &kp::W5_OPTIONS).unwrap();
        std::hint::black_box(out);
    }));
    let f = frame.clone();
    ops.push(op(spec, "decode", "kwire", move || {
        for batch in Batches::new(f.clone()) {
            if let Batch::V2(batch) = batch.unwrap() {
                for r in batch.records().unwrap() {
                    std::hint::black_box(r.unwrap());
                }
            }
        }
    }));
    let f = frame.clone();
    ops.push(op(spec, "decode_vec", "kwire", move || {
        let all: Vec<_> = Batches::new(f.clone()).map(|b| b.unwrap().records().unwrap()).collect();
        std::hint::black_box(all);
    }));
    let f = frame.clone();
    ops.push(op(spec, "decode", "kafka-protocol", move || {
        std::hint::black_box(kafka_protocol::records::RecordBatchDecoder::decode(&mut f.clone()).unwrap());
    }));
}

/// The operations of workload `only` (every workload when `None`).
fn ops(d: &Data, only: Option<&str>) -> Vec<Op> {
    let want = |s: &Spec| only.is_none_or(|w| w == s.id);
    let mut ops = Vec::new();
    if want(&workloads::W1) {
        message_ops(&mut ops, &workloads::W1, kw::w1(d), kp::w1(d));
        // The borrowed view read in full, and the physical floor.
        let frame = kw::w1(d).to_bytes(workloads::W1.version).unwrap();
        ops.push(op(&workloads::W1, "view", "kwire", move || {
            std::hint::black_box(kw::w1_view_read(std::hint::black_box(&frame)));
        }));
        let frame = kw::w1(d).to_bytes(workloads::W1.version).unwrap();
        ops.push(op(&workloads::W1, "view_decode", "kwire", move || {
            let mut buf: &[u8] = std::hint::black_box(&frame);
            let view = kwire::messages::metadata_response::MetadataResponseView::decode(&mut buf, 12);
            std::hint::black_box(view.unwrap().cluster_id);
        }));
        let src = kw::w1(d).to_bytes(workloads::W1.version).unwrap().to_vec();
        let mut dst = vec![0xa5u8; src.len()];
        ops.push(op(&workloads::W1, "memcpy", "-", move || {
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
        }));
        proxy_ops(&mut ops, &workloads::W1, kw::w1(d), kwire::ApiKey::Metadata);
    }
    if want(&workloads::W2) {
        message_ops(&mut ops, &workloads::W2, kw::w2(d), kp::w2(d));
        copy_ops(&mut ops, &workloads::W2, kw::w2(d), kw::w2_shared);
    }
    if want(&workloads::W3) {
        message_ops(&mut ops, &workloads::W3, kw::w3(d), kp::w3(d));
        copy_ops(&mut ops, &workloads::W3, kw::w3(d), kw::w3_shared);
        proxy_ops(&mut ops, &workloads::W3, kw::w3(d), kwire::ApiKey::Fetch);
    }
    if want(&workloads::W4A) {
        message_ops(&mut ops, &workloads::W4A, kw::w4a(), kp::w4a());
    }
    if want(&workloads::W4B) {
        message_ops(&mut ops, &workloads::W4B, kw::w4b(), kp::w4b());
    }
    if want(&workloads::W5) {
        record_ops(&mut ops, d);
    }
    ops
}

/// Writes the frames as `<id>.bin` (W1.bin, W4a.bin, ...), each checked first, for the peers in
/// other languages (benches/java, benches/go), which check length and digest again themselves.
fn dump(d: &Data, dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let frames = [
        (&workloads::W1, kw::w1(d).to_bytes(workloads::W1.version).unwrap()),
        (&workloads::W2, kw::w2(d).to_bytes(workloads::W2.version).unwrap()),
        (&workloads::W3, kw::w3(d).to_bytes(workloads::W3.version).unwrap()),
        (&workloads::W4A, kw::w4a().to_bytes(workloads::W4A.version).unwrap()),
        (&workloads::W4B, kw::w4b().to_bytes(workloads::W4B.version).unwrap()),
        (&workloads::W5, kw::w5(d).build().unwrap()),
    ];
    for (spec, frame) in frames {
        workloads::check(spec, "kwire", &frame).unwrap();
        let path = dir.join(format!("{}.bin", spec.id));
        std::fs::write(&path, &frame).unwrap();
        println!("{} {} bytes fnv1a64 {:016x}", path.display(), frame.len(), spec.fnv1a64);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let d = Data::new();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["list"] => {
            for op in ops(&d, None) {
                println!("{}", op.id);
            }
        }
        ["run", id, n] => {
            let n: usize = n.parse().expect("iteration count");
            let workload = id.split('/').next().unwrap_or_default();
            let mut ops = ops(&d, Some(workload));
            let op = ops.iter_mut().find(|op| op.id == id).unwrap_or_else(|| panic!("no operation {id}"));
            for _ in 0..n {
                (op.run)();
            }
        }
        [] => {
            println!("{:<34} {:>10} {:>9} {:>12}", "operation", "allocs/op", "reallocs", "bytes/op");
            for mut op in ops(&d, None) {
                (op.run)(); // warm: first-use allocations (thread-locals, lazy statics) are not counted
                let (a, r, b) = (ALLOCS.load(Relaxed), REALLOCS.load(Relaxed), BYTES.load(Relaxed));
                (op.run)();
                let (a, r, b) = (ALLOCS.load(Relaxed) - a, REALLOCS.load(Relaxed) - r, BYTES.load(Relaxed) - b);
                println!("{:<34} {a:>10} {r:>9} {b:>12}", op.id);
            }
        }
        ["dump", dir] => dump(&d, std::path::Path::new(dir)),
        _ => {
            eprintln!("usage: bench_counts [list | run <workload>/<op>/<crate> <iterations> | dump <dir>]");
            std::process::exit(2);
        }
    }
}
