//! `kwire wireshark`'s dissector, run by tshark, against `kwire pcap` on the same capture: a
//! conversation holding a sample request and response of every api key and version this build
//! has (every field non-default, unknown tagged fields where flexible), written with frames split
//! over TCP segments and several frames to a segment. Every frame must decode with nothing
//! malformed, and every field value tshark shows must be the one `kwire pcap` prints, in order.
//! Also: the built-in Kafka dissector's coverage of the same capture, and secrets withheld.
//!
//! Needs tshark (as `.ci/run` installs it); skips without it unless `KWIRE_REQUIRE_CLIENTS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "wireshark/capture.rs"]
mod capture;
#[path = "wireshark/check.rs"]
mod check;

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../tests/support/skip.rs"]
mod skip;

const PORT: u16 = 9092;

fn skip() -> bool {
    skip::missing_tool("the Wireshark dissector", "tshark", &["--version"])
}

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kwire-wireshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn kwire(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kwire")).args(args).output().unwrap();
    assert!(out.status.success(), "kwire {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Writes the dissector for PORT and returns its path.
fn dissector(dir: &Path, show_secrets: bool) -> PathBuf {
    let path = dir.join(if show_secrets { "kwire-secrets.lua" } else { "kwire.lua" });
    let mut args = vec!["wireshark", "--port", "9092"];
    if show_secrets {
        args.push("--show-secrets");
    }
    std::fs::write(&path, kwire(&args)).unwrap();
    path
}

fn sample_capture(dir: &Path) -> (PathBuf, usize) {
    let conversation = capture::every_api_and_version();
    let path = dir.join("every-version.pcap");
    capture::write_pcap(&path, PORT, &conversation);
    (path, conversation.len())
}

#[test]
fn the_dissector_decodes_every_api_and_version_as_kwire_pcap_does() {
    if skip() {
        return;
    }
    let dir = dir();
    let (pcap, messages) = sample_capture(&dir);
    let checked = check::against_kwire_pcap(Path::new(env!("CARGO_BIN_EXE_kwire")), &pcap, &[PORT], &dir);
    assert_eq!(checked.frames, messages, "every message of the capture");
    assert_eq!(checked.newer, 0);
    eprintln!("{messages} messages, {} field values agree", checked.values);
    assert!(checked.values > 10_000, "only {} values compared", checked.values);
}

/// Frames the built-in Kafka dissector of this tshark decodes fully (no malformed or undecoded
/// expert info) and those of the dissector here, on the same capture: the numbers the README's
/// comparison gives.
#[test]
fn coverage_against_the_builtin_kafka_dissector() {
    if skip() {
        return;
    }
    let dir = dir();
    let (pcap, messages) = sample_capture(&dir);
    let lua = dissector(&dir, false);
    let ours = check::tshark_json(&pcap, &["-X", &format!("lua_script:{}", lua.display()), "-J", "frame kwire"]);
    let mut full_ours = 0;
    for packet in &ours {
        full_ours += check::pdus(packet, &Default::default()).iter().filter(|p| p.problems().is_empty()).count();
    }
    assert_eq!(full_ours, messages, "the dissector here decodes every frame");
    let builtin = check::builtin_coverage(&pcap, PORT);
    // Versions whose request and response it decodes fully, and api keys with all versions so.
    let versions = |a: &kwire::ApiKey| a.info().valid.lo..=a.info().valid.hi;
    let full = |a: &kwire::ApiKey, v: i16| builtin.full.get(&(i64::from(a.key()), i64::from(v))) == Some(&2);
    let full_versions: usize = kwire::ApiKey::ALL.iter().map(|a| versions(a).filter(|v| full(a, *v)).count()).sum();
    let all_versions: usize = kwire::ApiKey::ALL.iter().map(|a| versions(a).count()).sum();
    let full_keys = kwire::ApiKey::ALL.iter().filter(|a| versions(a).all(|v| full(a, v))).count();
    let some_keys = kwire::ApiKey::ALL.iter().filter(|a| versions(a).any(|v| full(a, v))).count();
    eprintln!(
        "tshark's built-in kafka dissector: {} of {messages} frames, {full_versions} of {all_versions} versions fully decoded; \
         api keys: {some_keys} of {} in some version, {full_keys} in every version",
        builtin.full_frames,
        kwire::ApiKey::ALL.len()
    );
    assert!(builtin.full_frames < messages, "tshark's own dissector got better: update the README's comparison");
}

/// Bad bytes: every message of the sample conversation with bytes of its body overwritten (the
/// size prefix and header kept, so each still reaches the walker). tshark must finish with no
/// Lua error: a frame that does not parse is marked `kwire.malformed`, nothing else.
#[test]
fn corrupted_frames_are_marked_malformed_never_a_lua_error() {
    if skip() {
        return;
    }
    let dir = dir();
    let lua = dissector(&dir, false);
    for seed in [0x2545_f491_4f6c_dd1du64, 7, 0x9e37_79b9] {
        corrupted_capture(&dir, &lua, seed);
    }
}

fn corrupted_capture(dir: &Path, lua: &Path, seed: u64) {
    let mut conversation = capture::every_api_and_version();
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for m in &mut conversation {
        let header_end = if m.response { 8 } else { 12 }.min(m.bytes.len());
        let body = m.bytes.len() - header_end;
        for _ in 0..3 {
            if body > 0 {
                let at = header_end + (next() as usize) % body;
                // Lengths and counts: all ones (-1, huge varints), or any byte.
                m.bytes[at] = if next() % 2 == 0 { 0xff } else { next() as u8 };
            }
        }
    }
    let pcap = dir.join(format!("corrupted-{seed}.pcap"));
    capture::write_pcap(&pcap, PORT, &conversation);
    let started = std::time::Instant::now();
    let packets = check::tshark_json(&pcap, &["-X", &format!("lua_script:{}", lua.display()), "-J", "frame tcp kwire"]);
    let (mut frames, mut malformed) = (0, 0);
    for packet in &packets {
        let layers = packet["_source"]["layers"].to_string();
        assert!(!layers.contains("Lua Error") && !layers.contains("_ws.lua.error"), "{layers}");
        for pdu in check::pdus(packet, &Default::default()) {
            frames += 1;
            malformed += usize::from(pdu.experts.iter().any(|(f, _)| f == "kwire.malformed"));
            // (Wireshark lists a malformed-group expert info under _ws.malformed too, and notes
            // strings with a NUL inside as _ws.string.*.)
            let expected = |f: &str| ["kwire.malformed", "_ws.malformed", "kwire.no_request"].contains(&f) || f.starts_with("_ws.string.");
            assert!(pdu.experts.iter().all(|(f, _)| expected(f)), "{:?}", pdu.experts);
        }
    }
    eprintln!("seed {seed}: {frames} corrupted frames, {malformed} malformed, in {:?}", started.elapsed());
    assert_eq!(frames, conversation.len(), "every frame is still found");
    assert!(malformed > frames / 4, "only {malformed} of {frames} frames malformed: the corruption did nothing?");
}

#[test]
fn secrets_are_withheld_unless_asked_for() {
    if skip() {
        return;
    }
    let dir = dir();
    let (pcap, _) = sample_capture(&dir);
    let secret = capture::sasl_auth_bytes();
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let colons = check::hex(&secret);
    // The dissector's text (-O kwire) and JSON (-J kwire) output; the capture's own bytes
    // (tcp.payload, -x) are not the dissector's to withhold.
    let outputs = |show: bool| -> [String; 2] {
        let lua = dissector(&dir, show);
        let script = format!("lua_script:{}", lua.display());
        let run = |args: &[&str]| {
            let out = Command::new("tshark").args(["-r", pcap.to_str().unwrap(), "-X", &script]).args(args).output().unwrap();
            assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        [run(&["-O", "kwire"]), run(&["-T", "json", "-J", "kwire"])]
    };
    let [text, json] = outputs(false);
    assert!(text.contains(&format!("AuthBytes: withheld ({} bytes)", secret.len())), "the SaslAuthenticate request's bytes are marked withheld");
    assert!(!text.contains(&hex) && !json.contains(&colons), "the auth bytes appear in the dissector's output");
    let [text, json] = outputs(true);
    assert!(text.contains(&hex) && json.contains(&colons), "--show-secrets shows them");
}
