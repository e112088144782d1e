//! Apache Kafka's own generated Java classes as the oracle (issue 12; `tests/java/README.md`).
//!
//! Runs when `KWIRE_JAVA_ORACLE` names a directory where `tests/java`'s `Oracle gen` wrote
//! its vectors and `KWIRE_JAVA_CP` is the classpath to run `Oracle` with (for the checks
//! Java makes of kwire's output); `scripts/java-oracle.sh` sets both. Otherwise it prints
//! why and passes. Every cell of the matrix must agree, or carry an explanation ([`EXPLAINED`],
//! [`explain`]) whose check still holds; an explanation that matches nothing fails too.
//!
//! - (a) Java builds the values: kwire decodes Java's bytes (every byte), re-encodes them
//!   identically, prints Java's JSON and reads Java's JSON back to the same value.
//! - (b) kwire builds the values (its schema-driven samples): Java reads the bytes (every
//!   byte), writes identical bytes, prints kwire's JSON, and reads kwire's JSON to an
//!   equal object.
//! - (c) Rejections: truncated bodies, nulls in fields not nullable at the version, and tags the
//!   message knows only at other versions are refused by both or by neither; Java's value written
//!   at neighbouring versions is refused by both (a non-default value in a non-ignorable field the
//!   version lacks, a null it does not allow) or written to the same bytes.
//! - Records, the `Errors` table and the `ApiKeys` table.
//!
//! A merged build (`kwire::SPEC_DIR` lists several releases, the default) is compared on
//! every version the jar has, against the release of the jar's major.minor ([`Build`]); what only
//! kwire has is listed as "kwire only" where that release lacks it too, and the
//! versions the releases define differently follow the newer one, each explained.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kwire::messages::visit_json_messages;
use kwire::records::{Batch, Batches, Compression, LegacyBuilder, Record, RecordBatchBuilder, TimestampType};
use kwire::runtime::error_code::ERROR_CODES;
use kwire::runtime::json::serde_json::{self, json, Value};
use kwire::runtime::sample::{JsonMessageVisitor, Sample, SampleRng};
use kwire::runtime::VersionRange;
use kwire::{ApiKey, Bytes, Message, VersionedJson};

/// Seeds of kwire samples per (message, version) in direction (b).
const RUST_SEEDS: u64 = 4;

/// What an explanation may look at to check that it still holds.
struct Ctx {
    /// Java's tables (`java-tables.json`).
    tables: Value,
    /// The specs inside the kafka-clients jar (`<dir>/specs`, extracted by the script).
    jar_index: SpecIndex,
    /// The spec sets this kwire build was generated from.
    build: Build,
}

/// The spec sets of this kwire build: `kwire::SPEC_DIR`, one directory or several
/// releases' joined by `:` (oldest first) for a merged build (the default: kafka-3.9.0 and
/// kafka-4.4.0).
struct Build {
    /// (release name as `ApiKey::info().releases` names it, directory, its specs), oldest first.
    releases: Vec<(String, PathBuf, SpecIndex)>,
    /// The release this kafka-clients jar is (same major.minor; the only one in a single-release
    /// build): the versions it defines are the ones the jar must agree on.
    jar_release: usize,
}

impl Build {
    fn new(kafka_clients: &str) -> Build {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let releases: Vec<(String, PathBuf, SpecIndex)> = std::env::split_paths(kwire::SPEC_DIR)
            .map(|d| {
                let dir = root.join(d);
                let name = dir.canonicalize().unwrap_or_else(|_| dir.clone()).file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                let index = SpecIndex::read(&dir);
                (name, dir, index)
            })
            .collect();
        assert!(!releases.is_empty(), "kwire::SPEC_DIR is empty");
        let minor: String = kafka_clients.split('.').take(2).map(|p| format!("{p}.")).collect();
        let jar_release = if releases.len() == 1 {
            0
        } else {
            releases.iter().position(|r| r.0.trim_start_matches("kafka-").starts_with(&minor)).unwrap_or_else(|| {
                // A newer jar than any release of the build (4.4.0 against the default): its
                // new versions would be Java's only; compare it with its own specs instead.
                panic!(
                    "the merged build ({}) has no release for kafka-clients {kafka_clients}; compare it with its own specs ({kafka_clients}=jar)",
                    kwire::SPEC_DIR
                )
            })
        };
        Build { releases, jar_release }
    }

    fn merged(&self) -> bool {
        self.releases.len() > 1
    }

    fn jar_release(&self) -> &str {
        &self.releases[self.jar_release].0
    }

    /// "merged 3.9.0+4.4.0 build".
    fn label(&self) -> String {
        let names: Vec<&str> = self.releases.iter().map(|r| r.0.trim_start_matches("kafka-")).collect();
        format!("merged {} build", names.join("+"))
    }

    /// The spec of kwire's message `name` in release `i`: by api key and direction for api
    /// messages (Kafka 4.1 renamed api 74), else by name.
    fn spec(&self, i: usize, name: &str) -> Option<&Value> {
        let index = &self.releases[i].2;
        match api_of(name) {
            Some((api, kind)) => index.by_api.get(&(api.key(), kind.to_string())),
            None => index.by_name.get(name),
        }
    }

    fn defines(&self, i: usize, name: &str, version: i16) -> bool {
        self.spec(i, name).and_then(|s| spec_range(s["validVersions"].as_str())).is_some_and(|(lo, hi)| lo <= i64::from(version) && i64::from(version) <= hi)
    }

    /// The versions of an api to compare with the jar: those of the jar's release (all of them
    /// in a single-release build).
    fn versions_of(&self, info: &kwire::runtime::ApiInfo) -> Result<VersionRange, String> {
        if !self.merged() {
            return Ok(info.valid);
        }
        let rel = self.jar_release();
        info.releases.iter().find(|r| r.release == rel).map(|r| r.valid).ok_or_else(|| format!("ApiKey::info().releases of {} has no {rel}", info.name))
    }

    /// The release the build takes `name` v`version` from: the newest that defines it
    /// (`ApiKey::info().origin` for an api).
    fn defining(&self, name: &str, version: i16) -> Option<usize> {
        match api_of(name) {
            Some((api, _)) => {
                let release = api.info().origin(version)?.release;
                self.releases.iter().position(|r| r.0 == release)
            }
            None => (0..self.releases.len()).rev().find(|&i| self.defines(i, name, version)),
        }
    }

    /// Why kwire has `name` v`version` and the jar does not, or why that is a disagreement:
    /// the jar's release must not define it (checked in its spec and, for an api, in the
    /// generated `ApiKey::info().releases`).
    fn kwire_only(&self, name: &str, version: i16) -> Result<String, String> {
        let rel = self.jar_release();
        if self.defines(self.jar_release, name, version) {
            return Err(format!("{rel} defines {name} v{version}, but kafka-clients does not have it"));
        }
        let by = match api_of(name) {
            Some((api, _)) => {
                let info = api.info();
                if info.releases.iter().any(|r| r.release == rel && r.valid.contains(version)) {
                    return Err(format!("ApiKey::info().releases says {rel} defines {name} v{version}"));
                }
                info.origin(version).ok_or_else(|| format!("no origin for {name} v{version}"))?.release.to_string()
            }
            None => (0..self.releases.len())
                .rev()
                .find(|&i| self.defines(i, name, version))
                .map(|i| self.releases[i].0.clone())
                .ok_or_else(|| format!("no release of the build defines {name} v{version}"))?,
        };
        let i = self.releases.iter().position(|r| r.0 == by).ok_or_else(|| format!("{by} is not in the build"))?;
        if !self.defines(i, name, version) {
            return Err(format!("{by}'s spec does not define {name} v{version}"));
        }
        Ok(format!("not in {rel}, defined by {by}"))
    }
}

/// Spec files of one directory, by message name and by (api key, request/response).
#[derive(Default)]
struct SpecIndex {
    by_name: HashMap<String, Value>,
    by_api: HashMap<(i16, String), Value>,
}

impl SpecIndex {
    fn read(dir: &Path) -> SpecIndex {
        let mut index = SpecIndex::default();
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("dir entry").path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let spec = read_spec(&path).unwrap_or_else(|e| panic!("{e}"));
            if let (Some(key), Some(kind)) = (spec["apiKey"].as_i64(), spec["type"].as_str()) {
                index.by_api.insert((key as i16, kind.to_string()), spec.clone());
            }
            if let Some(name) = spec["name"].as_str() {
                index.by_name.insert(name.to_string(), spec.clone());
            }
        }
        index
    }
}

/// The api key and direction of a request or response message name (kwire's names).
fn api_of(name: &str) -> Option<(ApiKey, &'static str)> {
    let (base, kind) = if let Some(b) = name.strip_suffix("Request") { (b, "request") } else { (name.strip_suffix("Response")?, "response") };
    ApiKey::ALL.iter().copied().find(|k| k.name() == base).map(|k| (k, kind))
}

/// A spec's version range ("0-6", "0", "3+" or "none") as a closed range; `None` for none.
fn spec_range(text: Option<&str>) -> Option<(i64, i64)> {
    let d = text?;
    if d == "none" {
        return None;
    }
    if let Some(lo) = d.strip_suffix('+') {
        return Some((lo.parse().ok()?, i64::from(i16::MAX)));
    }
    let (lo, hi) = d.split_once('-').unwrap_or((d, d));
    Some((lo.parse().ok()?, hi.parse().ok()?))
}

/// A spec file, without Kafka's // comment lines (the license).
fn read_spec(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    serde_json::from_str(&json).map_err(|e| format!("{}: {e}", path.display()))
}

/// Error messages older kafka-clients releases (version prefix) word differently from 4.4.0
/// (kwire's table).
const OLDER_MESSAGES: &[(&str, i64, &str)] = &[
    ("3.9.", 24, "The configured groupId is invalid."),
    ("3.9.", 81, "The consumer group has reached its max size."),
    ("3.9.", 124, "The share coordinator rejected the request because the share-group state epoch did not match."),
    ("4.3.", 124, "The share coordinator rejected the request because the share-group state epoch did not match."),
];

/// Which builds an explanation is for.
#[derive(PartialEq)]
enum Builds {
    Any,
    /// From one release's specs.
    Single,
    /// Merged from several releases (the default build).
    Merged,
}

/// Explained disagreements: (id, the kafka-clients versions it is for (prefixes), builds, why).
const EXPLAINED: &[(&str, &[&str], Builds, &str)] = &[
    ("deprecated-3.9.1", &["3.9."], Builds::Single, "kafka-clients 3.9.1 changed `deprecatedVersions` in its own specs after 3.9.0; kwire follows the kafka-3.9.0 specs it is built from (checked: the jar's spec says what Java says, kafka-3.9.0's what kwire says)"),
    ("older-message", &["3.9.", "4.3."], Builds::Any, "kwire's Errors table has kafka-clients 4.4.0's messages; this release words this one differently (checked against its text)"),
    ("newer-code", &["3.9.", "4.3."], Builds::Any, "error code added after this kafka-clients release (kwire's table is 4.4.0's; checked: above Java's highest code)"),
    ("none-message", &[""], Builds::Any, "Java's Errors.NONE has no exception, so message() falls back to the enum name \"NONE\"; kwire's table says \"No error\" (checked: exactly these two texts)"),
    ("unstable-older", &["3.9."], Builds::Merged, "the jar's release marks this version unstable (`latestVersionUnstable`, its newest, no compatibility promised) and a newer release of the build redefined it; the merged build follows the newer release, so the jar speaks another protocol at this version (checked: the jar's release and the jar's own spec mark the request's newest version unstable, `ApiKey::info().origin(v)` is the newer release, whose spec of this message differs)"),
    ("newer-tag", &["3.9."], Builds::Merged, "Java writes an unknown tagged field whose tag a newer release gave a field at later versions; the merged build follows the newer release for this version (as its kafka-clients does), which refuses a tag known only at other versions, where this jar keeps it as unknown (checked: the version's origin is the newer release, whose spec has the tag in that struct at other versions only, and the jar's spec has no field with that tag there)"),
    ("renamed-field", &["3.9."], Builds::Merged, "a newer release of the build renamed the field; the merged build's JSON uses the newer name at every version (the wire is the same; checked apart from the names: kwire reads Java's JSON under its names, and Java reads kwire's under Java's, to equal values) (checked: the jar's release's spec has the old name and not the new one in that struct, the newest release's the new and not the old, with the same type)"),
    ("merged-listeners", &["4.3.", "4.4."], Builds::Merged, "a merged build's `ApiKey::info().listeners` is the union of its releases' listeners (kafka-3.9.0 adds `zkBroker`, which Kafka 4 removed); this jar's release lists fewer (checked: kwire's are the union of the releases' specs, Java's its own spec's, and the extra ones come from other releases only)"),
    ("renamed-api", &["3.9."], Builds::Merged, "Kafka 4.1 renamed the api; the merged build uses the newest release's name (checked: Java's name is the jar's release's spec's, kwire's the newest release's)"),
];

fn explanation_applies(e: &(&str, &[&str], Builds, &str), version: &str, merged: bool) -> bool {
    e.1.iter().any(|p| version.starts_with(p))
        && match e.2 {
            Builds::Any => true,
            Builds::Single => !merged,
            Builds::Merged => merged,
        }
}

/// The explanation for a disagreeing cell, if one applies: its id, and whether it still holds.
fn explain(ctx: &Ctx, row: &str, column: &str, failures: &[String]) -> Option<(&'static str, Result<(), String>)> {
    let version = ctx.tables["kafkaClients"].as_str().unwrap_or_default();
    let find =
        |id: &str, check: Result<(), String>| EXPLAINED.iter().find(|e| e.0 == id && explanation_applies(e, version, ctx.build.merged())).map(|e| (e.0, check));
    if column != "table" {
        if !ctx.build.merged() {
            return None;
        }
        let (name, v) = row.rsplit_once(" v")?;
        let v: i16 = v.parse().ok()?;
        let (id, check) = explain_merged(ctx, name, v, failures)?;
        return find(id, check);
    }
    if let Some(key) = row.strip_prefix("ApiKeys ") {
        if ctx.build.merged() && failures.iter().all(|f| f.starts_with("differs at .listeners")) {
            let api = ApiKey::from_i16(key.parse().ok()?)?;
            let java = ctx.tables["apis"].as_array()?.iter().find(|a| a["key"].as_i64() == Some(api.key().into()))?;
            let norm = |l: &Value| l.as_str().unwrap_or_default().replace('_', "").to_lowercase();
            let set = |v: Option<&Value>| -> std::collections::BTreeSet<String> {
                v.and_then(|v| v["listeners"].as_array()).into_iter().flatten().map(norm).collect()
            };
            let request = format!("{}Request", api.name());
            let union: std::collections::BTreeSet<String> = (0..ctx.build.releases.len()).flat_map(|i| set(ctx.build.spec(i, &request))).collect();
            let ours: std::collections::BTreeSet<String> = api.info().listeners.iter().map(|l| l.to_lowercase()).collect();
            let theirs = set(Some(java));
            let jar_spec = set(ctx.jar_index.by_api.get(&(api.key(), "request".into())));
            let jar_release = set(ctx.build.spec(ctx.build.jar_release, &request));
            let check = if ours == union && theirs == jar_spec && theirs == jar_release && theirs.is_subset(&ours) {
                Ok(())
            } else {
                Err(format!("kwire {ours:?}, the releases' union {union:?}, Java {theirs:?}, the jar's spec {jar_spec:?}, the jar's release {jar_release:?}"))
            };
            return find("merged-listeners", check);
        }
        if ctx.build.merged() && failures.iter().all(|f| f.starts_with("differs at .name")) {
            let api = ApiKey::from_i16(key.parse().ok()?)?;
            let java = ctx.tables["apis"].as_array()?.iter().find(|a| a["key"].as_i64() == Some(api.key().into()))?;
            let base = |s: Option<&Value>| s.and_then(|s| s["name"].as_str()).map(|n| n.trim_end_matches("Request").to_string());
            let theirs = base(ctx.build.spec(ctx.build.jar_release, &format!("{}Request", api.name())));
            let newest = base(ctx.build.spec(ctx.build.releases.len() - 1, &format!("{}Request", api.name())));
            let check = if theirs.as_deref() == java["name"].as_str() && newest.as_deref() == Some(api.name()) && theirs != newest {
                Ok(())
            } else {
                Err(format!("Java {}, the jar's release {theirs:?}, the newest {newest:?}, kwire {}", java["name"], api.name()))
            };
            return find("renamed-api", check);
        }
    }
    let id = if let Some(key) = row.strip_prefix("ApiKeys ") {
        if !failures.iter().all(|f| f.starts_with("differs at .deprecated")) {
            return None;
        }
        let key: i64 = key.parse().ok()?;
        let java = ctx.tables["apis"].as_array()?.iter().find(|a| a["key"].as_i64() == Some(key))?;
        let api = ApiKey::from_i16(key as i16)?;
        let check = (|| {
            // Over the versions the jar's release defines, which of them each side deprecates:
            // the jar's own spec, Java's ApiKeys, the spec kwire generated each version from
            // (the release that defines it, `ApiKey::info().origin`), and kwire's ApiInfo.
            let info = api.info();
            let valid = ctx.build.versions_of(info)?;
            let file = format!("{}Request.json", api.name());
            let jar_spec = ctx.jar_index.by_api.get(&(api.key(), "request".to_string())).ok_or(format!("the jar has no spec for api {key}"))?;
            let jar = spec_range(jar_spec["deprecatedVersions"].as_str());
            let (lo, hi) = (java["lowestDeprecated"].as_i64().unwrap_or(0), java["highestDeprecated"].as_i64().unwrap_or(-1));
            let in_range = |r: Option<(i64, i64)>, v: i16| r.is_some_and(|(lo, hi)| lo <= i64::from(v) && i64::from(v) <= hi);
            let mut ours = Vec::new();
            for v in valid.iter() {
                let release = info.origin(v).ok_or(format!("no origin for {file} v{v}"))?.release;
                let i = ctx.build.releases.iter().position(|r| r.0 == release).ok_or(format!("{release} not in the build"))?;
                let spec = ctx.build.spec(i, &format!("{}Request", api.name())).ok_or(format!("{release} has no {file}"))?;
                ours.push(in_range(spec_range(spec["deprecatedVersions"].as_str()), v));
            }
            let jar: Vec<bool> = valid.iter().map(|v| in_range(jar, v)).collect();
            let java: Vec<bool> = valid.iter().map(|v| lo <= i64::from(v) && i64::from(v) <= hi).collect();
            let wire: Vec<bool> = valid.iter().map(|v| info.deprecated.contains(v)).collect();
            if jar == java && ours == wire && jar != ours {
                Ok(())
            } else {
                let show = |d: &[bool]| shown_versions(valid, d);
                Err(format!("{file}: jar {}, ours {}, Java {}, kwire {}", show(&jar), show(&ours), show(&java), show(&wire)))
            }
        })();
        return EXPLAINED.iter().find(|e| e.0 == "deprecated-3.9.1" && explanation_applies(e, version, ctx.build.merged())).map(|e| (e.0, check));
    } else if let Some(code) = row.strip_prefix("Errors ") {
        let code: i64 = code.parse().ok()?;
        let errors = ctx.tables["errors"].as_array()?;
        let java = errors.iter().find(|e| e["code"].as_i64() == Some(code));
        let ours = ERROR_CODES.iter().find(|i| i64::from(i.code) == code);
        match (java, ours) {
            (Some(j), Some(o)) if code == 0 => {
                let ok = j["message"] == "NONE" && o.message == "No error" && failures.iter().all(|f| f.starts_with("differs at .message"));
                ("none-message", ok.then_some(()).ok_or_else(|| format!("Java {}, kwire {}", j["message"], o.message)))
            }
            (Some(j), Some(_)) => {
                let old = OLDER_MESSAGES.iter().find(|m| version.starts_with(m.0) && m.1 == code)?;
                let ok = j["message"] == old.2 && failures.iter().all(|f| f.starts_with("differs at .message"));
                ("older-message", ok.then_some(()).ok_or_else(|| format!("Java now says {}", j["message"])))
            }
            (None, Some(_)) => {
                let max = errors.iter().filter_map(|e| e["code"].as_i64()).max().unwrap_or(0);
                ("newer-code", (code > max).then_some(()).ok_or_else(|| format!("{code} is not above Java's {max}")))
            }
            _ => return None,
        }
    } else {
        return None;
    };
    EXPLAINED.iter().find(|e| e.0 == id.0 && explanation_applies(e, version, ctx.build.merged())).map(|e| (e.0, id.1))
}

/// Explanations of a merged build's disagreements in columns a-c for message `name` v`v`.
fn explain_merged(ctx: &Ctx, name: &str, v: i16, failures: &[String]) -> Option<(&'static str, Result<(), String>)> {
    let build = &ctx.build;
    let jar = build.jar_release;
    let defining = build.defining(name, v)?;
    // The jar's release marks the version unstable and a newer release redefined it.
    if let Some((api, _)) = api_of(name) {
        let unstable_newest = |spec: Option<&Value>| {
            spec.is_some_and(|s| s["latestVersionUnstable"] == true && spec_range(s["validVersions"].as_str()).is_some_and(|r| r.1 == i64::from(v)))
        };
        let request = format!("{}Request", api.name());
        if unstable_newest(build.spec(jar, &request)) {
            let check = (|| {
                if !unstable_newest(ctx.jar_index.by_api.get(&(api.key(), "request".into()))) {
                    return Err(format!("the jar's own spec does not mark {request} v{v} unstable"));
                }
                if defining == jar {
                    return Err(format!("{name} v{v} comes from {}", build.releases[jar].0));
                }
                let (old, new) = (build.spec(jar, name), build.spec(defining, name));
                if old.map(|s| &s["fields"]) == new.map(|s| &s["fields"]) {
                    return Err(format!("{name}'s fields are the same in {} and {}", build.releases[jar].0, build.releases[defining].0));
                }
                Ok(())
            })();
            return Some(("unstable-older", check));
        }
    }
    let failures: Vec<&str> = failures.iter().map(|f| f.split_once(": ").filter(|(s, _)| s.starts_with("seed ")).map_or(f.as_str(), |(_, r)| r)).collect();
    if failures.iter().all(|f| f.contains(" is not valid for version ") && f.contains(": tag ")) {
        let check = failures.iter().try_for_each(|f| {
            let tag: i64 = f.rsplit_once(": tag ").and_then(|(_, t)| t.split(' ').next()?.parse().ok()).ok_or(format!("no tag in {f}"))?;
            let path = f.split_once(" field ").map_or("", |(_, p)| p.split(" at offset").next().unwrap_or(""));
            let path: Vec<String> = path.split('.').filter(|p| !p.is_empty()).map(|p| p.split('[').next().unwrap_or(p).to_string()).collect();
            if defining == jar {
                return Err(format!("{name} v{v} comes from the jar's release"));
            }
            let new = build
                .spec(defining, name)
                .and_then(|s| struct_fields(s, &path))
                .ok_or(format!("{name}: no struct {path:?} in {}", build.releases[defining].0))?;
            let tagged = new.iter().find(|f| field_tag(f) == Some(tag)).ok_or(format!("{}: no tag {tag} in {path:?}", build.releases[defining].0))?;
            if spec_range(tagged["taggedVersions"].as_str()).is_some_and(|(lo, hi)| lo <= i64::from(v) && i64::from(v) <= hi) {
                return Err(format!("tag {tag} is valid at v{v} in {}", build.releases[defining].0));
            }
            let by_api = api_of(name).map(|(api, kind)| (api.key(), kind.to_string()));
            let java_spec = by_api.as_ref().map_or_else(|| ctx.jar_index.by_name.get(name), |k| ctx.jar_index.by_api.get(k));
            let old = java_spec.and_then(|s| struct_fields(s, &path)).ok_or(format!("{name}: no struct {path:?} in the jar's spec"))?;
            match old.iter().find(|f| field_tag(f) == Some(tag)) {
                Some(f) => Err(format!("the jar's spec has tag {tag} in {path:?}: {}", f["name"])),
                None => Ok(()),
            }
        });
        return Some(("newer-tag", check));
    }
    if failures.iter().all(|f| f.starts_with("JSON differs only by renamed fields: ")) {
        let newest = (0..build.releases.len()).rev().find(|&i| build.spec(i, name).is_some())?;
        let check = failures.iter().try_for_each(|f| {
            for r in f.trim_start_matches("JSON differs only by renamed fields: ").split(", ") {
                // "<path>.<new> is Java's <path>.<old>"
                let (ours, theirs) = r.split_once(" is Java's ").ok_or(format!("cannot read {r}"))?;
                let (path, new) = ours.rsplit_once('.').ok_or(format!("cannot read {r}"))?;
                let old = theirs.rsplit_once('.').map(|(_, o)| o).ok_or(format!("cannot read {r}"))?;
                let path: Vec<String> = path.split('.').filter(|p| !p.is_empty()).map(|p| p.trim_end_matches("[]").to_string()).collect();
                // The same struct in the jar's release, under its names (a renamed parent).
                let mut prefix = String::new();
                let mut old_path = Vec::new();
                for seg in &path {
                    let renamed_parent = renames_in(f).into_iter().find(|(p, n, _)| *p == prefix && n == seg);
                    old_path.push(renamed_parent.map_or(seg.clone(), |(_, _, o)| o));
                    prefix = format!("{prefix}.{seg}[]");
                }
                let named = |fields: &[Value], n: &str| fields.iter().find(|f| f["name"].as_str().is_some_and(|x| camel(x) == n)).cloned();
                let jar_fields =
                    build.spec(jar, name).and_then(|s| struct_fields(s, &old_path)).ok_or(format!("no struct {old_path:?} in {}", build.releases[jar].0))?;
                let new_fields =
                    build.spec(newest, name).and_then(|s| struct_fields(s, &path)).ok_or(format!("no struct {path:?} in {}", build.releases[newest].0))?;
                let (o, n) = match (named(&jar_fields, old), named(&jar_fields, new), named(&new_fields, new), named(&new_fields, old)) {
                    (Some(o), None, Some(n), None) => (o, n),
                    x => {
                        return Err(format!(
                            "{r}: {} has {old}: {}, {new}: {}; {} has {new}: {}, {old}: {}",
                            build.releases[jar].0,
                            x.0.is_some(),
                            x.1.is_some(),
                            build.releases[newest].0,
                            x.2.is_some(),
                            x.3.is_some()
                        ))
                    }
                };
                let wire_type = |t: &Value| {
                    let t = t.as_str().unwrap_or_default();
                    let inner = t.trim_start_matches("[]");
                    let primitive = inner.starts_with(|c: char| c.is_ascii_lowercase());
                    (t.len() - inner.len(), if primitive { inner.to_string() } else { "struct".into() })
                };
                if wire_type(&o["type"]) != wire_type(&n["type"]) {
                    return Err(format!("{r}: type {} vs {}", o["type"], n["type"]));
                }
            }
            Ok(())
        });
        return Some(("renamed-field", check));
    }
    None
}

/// The renames a "JSON differs only by renamed fields" failure lists: (path, new, old).
fn renames_in(failure: &str) -> Vec<(String, String, String)> {
    failure
        .trim_start_matches("JSON differs only by renamed fields: ")
        .split(", ")
        .filter_map(|r| {
            let (ours, theirs) = r.split_once(" is Java's ")?;
            let (path, new) = ours.rsplit_once('.')?;
            Some((path.to_string(), new.to_string(), theirs.rsplit_once('.')?.1.to_string()))
        })
        .collect()
}

/// Kafka's JSON name of a spec field (`ReplicaEpoch` -> `replicaEpoch`).
fn camel(name: &str) -> String {
    let mut c = name.chars();
    c.next().map_or_else(String::new, |f| f.to_lowercase().chain(c).collect())
}

/// A field's `tag` (a number or a string in Kafka's specs).
fn field_tag(f: &Value) -> Option<i64> {
    f["tag"].as_i64().or_else(|| f["tag"].as_str()?.parse().ok())
}

/// The fields of the struct at `path` (field names, spec or JSON spelling) in a spec: inline
/// `fields`, else the common struct its type names.
fn struct_fields(spec: &Value, path: &[String]) -> Option<Vec<Value>> {
    let mut fields = spec["fields"].as_array()?.clone();
    for seg in path {
        let f = fields.iter().find(|f| f["name"].as_str().is_some_and(|n| n == seg || camel(n) == *seg))?.clone();
        fields = match f["fields"].as_array() {
            Some(inner) => inner.clone(),
            None => {
                let t = f["type"].as_str()?.trim_start_matches("[]");
                spec["commonStructs"].as_array()?.iter().find(|s| s["name"] == t)?["fields"].as_array()?.clone()
            }
        };
    }
    Some(fields)
}

/// The versions of `valid` where `set` holds, as Kafka writes a range ("0-6", "none").
fn shown_versions(valid: VersionRange, set: &[bool]) -> String {
    let on: Vec<i16> = valid.iter().zip(set).filter(|(_, &s)| s).map(|(v, _)| v).collect();
    match (on.first(), on.last()) {
        (Some(lo), Some(hi)) if on.len() == (hi - lo + 1) as usize => {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        }
        (Some(_), _) => format!("{on:?}"),
        _ => "none".into(),
    }
}

/// One matrix cell: what was checked and whether the two sides agreed.
#[derive(Default)]
struct Cell {
    checks: usize,
    failures: Vec<String>,
}

#[derive(Default)]
struct Matrix {
    cells: BTreeMap<(String, String), Cell>,
    /// What kwire has and the jar does not, where the jar's release does not define it
    /// either (a merged build's versions of other releases): not sent to Java, not counted as
    /// cells, listed with where they come from.
    only: BTreeMap<(String, String), String>,
}

impl Matrix {
    fn record(&mut self, row: &str, column: &str, result: Result<(), String>) {
        let cell = self.cells.entry((row.to_string(), column.to_string())).or_default();
        cell.checks += 1;
        if let Err(e) = result {
            cell.failures.push(e);
        }
    }
}

fn hex_bytes(v: &Value) -> Bytes {
    Bytes::from(hex::decode(v.as_str().unwrap_or_default()).expect("hex from Java"))
}

/// kwire refuses `bytes` at `version`: an error, or bytes left over.
fn refuses<M: Message>(mut bytes: Bytes, version: i16) -> bool {
    M::decode(&mut bytes, version).is_err() || !bytes.is_empty()
}

fn row(name: &str, version: i64) -> String {
    format!("{name} v{version}")
}

/// Short, readable first difference of two JSON values.
fn json_diff(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    None => return Some(format!("{path}.{k}: only kwire has it ({v})")),
                    Some(w) => {
                        if let Some(d) = json_diff(&format!("{path}.{k}"), v, w) {
                            return Some(d);
                        }
                    }
                }
            }
            y.iter().find(|(k, _)| !x.contains_key(*k)).map(|(k, w)| format!("{path}.{k}: only Java has it ({w})"))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (v, w))| json_diff(&format!("{path}[{i}]"), v, w))
        }
        _ if a == b => None,
        _ => Some(format!("{path}: kwire {a}, Java {b}")),
    }
}

/// A field kwire's JSON names `new` where Java's names it `old`, in the objects at `path`
/// (array indexes left out: `.topics[].partitions[]`).
#[derive(Clone, Debug, PartialEq)]
struct Rename {
    path: String,
    old: String,
    new: String,
}

enum JsonDiff {
    /// The JSON differs (the first difference).
    Differs(String),
    /// The JSON is the same but for these field names.
    Renamed(Vec<Rename>),
}

impl std::fmt::Display for JsonDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonDiff::Differs(d) => write!(f, "JSON differs at {d}"),
            JsonDiff::Renamed(r) => {
                let r: Vec<String> = r.iter().map(|r| format!("{}.{} is Java's {}.{}", r.path, r.new, r.path, r.old)).collect();
                write!(f, "JSON differs only by renamed fields: {}", r.join(", "))
            }
        }
    }
}

/// kwire's JSON against Java's: equal, equal but for renamed fields (in an object, the one
/// key only kwire has and the one only Java has), or the first difference.
fn compare_json(ours: &Value, java: &Value) -> Result<(), JsonDiff> {
    let Some(d) = json_diff("", ours, java) else { return Ok(()) };
    let mut renames = Vec::new();
    find_renames("", ours, java, &mut renames);
    if !renames.is_empty() && json_diff("", ours, &renamed(java, &renames)).is_none() {
        return Err(JsonDiff::Renamed(renames));
    }
    Err(JsonDiff::Differs(d))
}

fn find_renames(path: &str, ours: &Value, java: &Value, out: &mut Vec<Rename>) {
    match (ours, java) {
        (Value::Object(x), Value::Object(y)) => {
            let mut only_ours: Vec<&String> = x.keys().filter(|k| !y.contains_key(*k)).collect();
            let mut only_java: Vec<&String> = y.keys().filter(|k| !x.contains_key(*k)).collect();
            // Pairs: by equal values first (several renamed fields in one object), then the
            // one left on each side (a renamed struct whose insides differ by renames too).
            let mut pairs = Vec::new();
            only_ours.retain(|n| match only_java.iter().position(|o| y[*o] == x[*n]) {
                Some(i) => {
                    pairs.push((*n, only_java.remove(i)));
                    false
                }
                None => true,
            });
            if let ([new], [old]) = (only_ours.as_slice(), only_java.as_slice()) {
                pairs.push((new, old));
            }
            for (new, old) in pairs {
                let r = Rename { path: path.to_string(), old: old.to_string(), new: new.to_string() };
                if !out.contains(&r) {
                    out.push(r);
                }
                find_renames(&format!("{path}.{new}"), &x[new], &y[old], out);
            }
            for (k, v) in x {
                if let Some(w) = y.get(k) {
                    find_renames(&format!("{path}.{k}"), v, w, out);
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for (v, w) in x.iter().zip(y) {
                find_renames(&format!("{path}[]"), v, w, out);
            }
        }
        _ => {}
    }
}

/// kwire's JSON under Java's names (`renames` undone).
fn renamed_back(ours: &Value, renames: &[Rename]) -> Value {
    // Children first, while the path still has kwire's names.
    fn walk(path: &str, v: &mut Value, renames: &[Rename]) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    walk(&format!("{path}.{k}"), x, renames);
                }
                for r in renames.iter().filter(|r| r.path == path) {
                    if let Some(x) = m.remove(&r.new) {
                        m.insert(r.old.clone(), x);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(&format!("{path}[]"), x, renames)),
            _ => {}
        }
    }
    let mut out = ours.clone();
    walk("", &mut out, renames);
    out
}

/// Java's JSON with `renames` applied (its names replaced by kwire's).
fn renamed(java: &Value, renames: &[Rename]) -> Value {
    fn walk(path: &str, v: &mut Value, renames: &[Rename]) {
        match v {
            Value::Object(m) => {
                for r in renames.iter().filter(|r| r.path == path) {
                    if let Some(x) = m.remove(&r.old) {
                        m.insert(r.new.clone(), x);
                    }
                }
                for (k, x) in m.iter_mut() {
                    walk(&format!("{path}.{k}"), x, renames);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(&format!("{path}[]"), x, renames)),
            _ => {}
        }
    }
    let mut out = java.clone();
    if !renames.is_empty() {
        walk("", &mut out, renames);
    }
    out
}

fn cuts(len: usize) -> Vec<usize> {
    let mut c: Vec<usize> = [0, 1, len / 2, len.saturating_sub(1)].into_iter().filter(|&c| c < len).collect();
    c.dedup();
    c.sort_unstable();
    c.dedup();
    c
}

/// Visits every kwire message: checks Java's vectors for it (a, c) and writes its samples
/// for Java (b).
struct Visitor<'a> {
    java: &'a HashMap<String, Vec<Value>>,
    matrix: &'a mut Matrix,
    /// kwire's samples for Java, and what Java must answer.
    rust_vectors: Vec<(Value, RustExpect)>,
    seen: Vec<String>,
    /// The versions Java has of each message (kwire's names).
    jar_versions: HashMap<String, std::collections::BTreeSet<i16>>,
    /// kwire's name -> the jar's, where they differ (api 74, renamed in Kafka 4.1).
    java_names: HashMap<String, String>,
    build: &'a Build,
}

struct RustExpect {
    row: String,
    json: Value,
}

impl Visitor<'_> {
    fn check_java<M: Message + VersionedJson>(&mut self, line: &Value) {
        let version = line["version"].as_i64().unwrap_or(-1);
        let r = row(M::NAME, version);
        let v = version as i16;
        if let Some(e) = line.get("javaError") {
            self.matrix.record(&r, "a", Err(format!("Java could not build a value: {e}")));
            return;
        }
        let bytes = hex_bytes(&line["hex"]);
        // Java's JSON under kwire's field names, where a merged build names a field as the
        // newer release renamed it (found by comparing the JSON, reported, checked in `explain`).
        let mut renames = Vec::new();
        let result = (|| {
            let mut buf = bytes.clone();
            let value = M::decode(&mut buf, v).map_err(|e| format!("decode: {e}"))?;
            if !buf.is_empty() {
                return Err(format!("{} of {} bytes left after decode", buf.len(), bytes.len()));
            }
            let again = value.to_bytes(v).map_err(|e| format!("re-encode: {e}"))?;
            if again != bytes {
                return Err("re-encoding gave different bytes".into());
            }
            let ours = value.to_json(v).map_err(|e| format!("to_json: {e}"))?;
            let compared = compare_json(&ours, &line["json"]);
            if let Err(JsonDiff::Renamed(r)) = &compared {
                renames = r.clone();
            }
            // Read back under kwire's names, so a rename hides nothing else.
            let java_json = renamed(&line["json"], &renames);
            let read = M::from_json(&java_json, v).map_err(|e| format!("from_json of Java's JSON: {e}"))?;
            compared.map_err(|d| d.to_string())?;
            if read != value {
                return Err("Java's JSON read back to a different value".into());
            }
            Ok(())
        })();
        let java_json = &renamed(&line["json"], &renames);
        self.matrix.record(&r, "a", result.map_err(|e| format!("seed {}: {e}", line["seed"])));

        for c in line["truncated"].as_array().into_iter().flatten() {
            let len = c["len"].as_u64().unwrap_or(0) as usize;
            let java = c["javaRefuses"].as_bool() == Some(true);
            let ours = refuses::<M>(bytes.slice(..len), v);
            self.matrix.record(&r, "c", agree_refusal("truncated to {len} bytes", len, java, ours));
        }
        // Java's value written at other versions; kwire's value from Java's JSON at this one.
        if let Ok(value) = M::from_json(java_json, v) {
            for c in line["crossVersions"].as_array().into_iter().flatten() {
                let to = c["to"].as_i64().unwrap_or(-1) as i16;
                let ours = value.to_bytes(to);
                let result = match (c.get("javaRefuses"), ours) {
                    (Some(_), Err(_)) => Ok(()),
                    (None, Ok(b)) if b == hex_bytes(&c["hex"]) => Ok(()),
                    (None, Ok(_)) => Err(format!("written at v{to}: different bytes")),
                    (Some(j), Ok(_)) => Err(format!("written at v{to}: Java refuses ({j}), kwire writes it")),
                    (None, Err(e)) => Err(format!("written at v{to}: kwire refuses ({e}), Java writes it")),
                };
                self.matrix.record(&r, "c", result.map_err(|e| format!("seed {}: {e}", line["seed"])));
            }
        }
        for n in line["nulls"].as_array().into_iter().flatten() {
            // Refused: by the JSON reader, or by the writer of what it read (Java's reader takes a
            // null anywhere; its writer refuses one the version does not allow).
            let java = n["javaJsonRefuses"].as_bool() == Some(true);
            let ours = M::from_json(&renamed(&n["json"], &renames), v).map_or(true, |m| m.to_bytes(v).is_err());
            let what = format!("JSON with {} null", n["field"]);
            self.matrix.record(&r, "c", agree_refusal(&what, 0, java, ours));
            // Java's own value with the null must fare the same as its JSON.
            if n["javaWriteRefuses"].as_bool() != Some(java) {
                self.matrix.record(&r, "c", Err(format!("Java's writer and JSON reader disagree on {} null", n["field"])));
            }
        }
        for t in line["badTags"].as_array().into_iter().flatten() {
            let java = t["javaRefuses"].as_bool() == Some(true);
            let ours = refuses::<M>(hex_bytes(&t["hex"]), v);
            self.matrix.record(&r, "c", agree_refusal(&format!("tag {} of another version", t["tag"]), 0, java, ours));
        }
    }
}

fn agree_refusal(what: &str, len: usize, java: bool, ours: bool) -> Result<(), String> {
    let what = what.replace("{len}", &len.to_string());
    match (java, ours) {
        (true, true) | (false, false) => Ok(()),
        (true, false) => Err(format!("{what}: Java refuses, kwire accepts")),
        (false, true) => Err(format!("{what}: kwire refuses, Java accepts")),
    }
}

impl JsonMessageVisitor for Visitor<'_> {
    fn visit<M: Message + Sample + VersionedJson>(&mut self) {
        self.seen.push(M::NAME.to_string());
        for line in self.java.get(M::NAME).into_iter().flatten() {
            self.check_java::<M>(line);
        }
        let empty = std::collections::BTreeSet::new();
        let jar = self.jar_versions.get(M::NAME).unwrap_or(&empty);
        let java_name = self.java_names.get(M::NAME).map_or(M::NAME, String::as_str).to_string();
        for version in M::VERSIONS.iter() {
            let r = row(M::NAME, version.into());
            if !jar.contains(&version) {
                // The jar does not have this version: fine only where its release lacks it too.
                match self.build.kwire_only(M::NAME, version) {
                    Ok(why) => {
                        self.matrix.only.insert((r, "b".into()), why);
                    }
                    Err(e) => self.matrix.record(&r, "b", Err(format!("kafka-clients does not have it: {e}"))),
                }
                continue;
            }
            for seed in 0..RUST_SEEDS {
                let value = M::sample(version, &mut SampleRng::new(seed));
                let (bytes, json) = match (value.to_bytes(version), value.to_json(version)) {
                    (Ok(b), Ok(j)) => (b, j),
                    (b, j) => {
                        self.matrix.record(&r, "b", Err(format!("kwire's own sample fails: {:?} {:?}", b.err(), j.err())));
                        continue;
                    }
                };
                let prefixes = cuts(bytes.len());
                for &len in &prefixes {
                    if !refuses::<M>(bytes.slice(..len), version) {
                        self.matrix.record(&r, "c", Err(format!("kwire accepts its own sample cut to {len} bytes")));
                    }
                }
                // The value written at other versions: kwire's bytes or refusal, which Java
                // must match with its own value read from this version's bytes.
                // The jar's lowest and highest, as Java's own vectors do.
                let (lo, hi) = (*jar.first().unwrap_or(&version), *jar.last().unwrap_or(&version));
                let cross: Vec<Value> = [version - 1, version + 1, lo, hi]
                    .into_iter()
                    .filter(|&w| w != version && M::VERSIONS.contains(w) && jar.contains(&w))
                    .collect::<std::collections::BTreeSet<i16>>()
                    .into_iter()
                    .map(|w| match value.to_bytes(w) {
                        Ok(b) => json!({"to": w, "hex": hex::encode(&b)}),
                        Err(e) => json!({"to": w, "refused": e.to_string()}),
                    })
                    .collect();
                let id = self.rust_vectors.len();
                let line = json!({"id": id, "name": java_name, "version": version, "seed": seed,
                    "hex": hex::encode(&bytes), "json": json, "truncated": prefixes, "crossVersions": cross});
                self.rust_vectors.push((line, RustExpect { row: r.clone(), json }));
            }
        }
    }
}

/// Java's answers about kwire's samples.
/// `retried`: Java's answers for kwire's JSON under Java's field names, by vector index,
/// where the two differ only by renamed fields.
fn check_java_answers(matrix: &mut Matrix, vectors: &[(Value, RustExpect)], answers: &[Value], retried: &HashMap<usize, Value>) {
    assert_eq!(answers.len(), vectors.len(), "Java answered every kwire vector");
    for (i, ((line, expect), a)) in vectors.iter().zip(answers).enumerate() {
        let r = &expect.row;
        let seed = &line["seed"];
        let result = (|| {
            if let Some(e) = a.get("javaError").or_else(|| a.get("readError")) {
                return Err(format!("Java cannot read kwire's bytes: {e}"));
            }
            if a["rewriteEqual"].as_bool() != Some(true) {
                return Err("Java re-wrote different bytes".into());
            }
            let compared = compare_json(&expect.json, &a["json"]);
            if let Err(JsonDiff::Renamed(_)) = &compared {
                // Java's reading of kwire's JSON under Java's names.
                let again = retried.get(&i).ok_or("no answer for the renamed JSON")?;
                if let Some(e) = again.get("jsonReadError") {
                    return Err(format!("Java cannot read kwire's JSON under its names: {e}"));
                }
                if again["jsonReadEqual"].as_bool() != Some(true) {
                    return Err("Java read kwire's JSON under its names to a different object".into());
                }
                return Err(compared.unwrap_err().to_string());
            }
            compared.map_err(|d| d.to_string())?;
            if let Some(e) = a.get("jsonReadError") {
                return Err(format!("Java cannot read kwire's JSON: {e}"));
            }
            if a["jsonReadEqual"].as_bool() != Some(true) {
                return Err("Java read kwire's JSON to a different object".into());
            }
            Ok(())
        })();
        matrix.record(r, "b", result.map_err(|e| format!("seed {seed}: {e}")));
        let ours = line["crossVersions"].as_array().cloned().unwrap_or_default();
        let java = a["crossVersions"].as_array().cloned().unwrap_or_default();
        if ours.len() != java.len() {
            matrix.record(r, "c", Err(format!("seed {seed}: Java answered {} of {} cross-version writes", java.len(), ours.len())));
        }
        for (o, j) in ours.iter().zip(&java) {
            let to = &o["to"];
            let result = match (o.get("refused"), j.get("javaRefuses")) {
                (Some(_), Some(_)) => Ok(()),
                (None, None) if o["hex"] == j["hex"] => Ok(()),
                (None, None) => Err(format!("written at v{to}: different bytes")),
                (Some(e), None) => Err(format!("written at v{to}: kwire refuses ({e}), Java writes it")),
                (None, Some(e)) => Err(format!("written at v{to}: Java refuses ({e}), kwire writes it")),
            };
            matrix.record(r, "c", result.map_err(|e| format!("seed {seed}: {e}")));
        }
        for c in a["truncated"].as_array().into_iter().flatten() {
            // kwire refuses every cut of its own samples (checked when writing them).
            let java = c["javaRefuses"].as_bool() == Some(true);
            matrix.record(r, "c", agree_refusal("kwire's sample truncated to {len} bytes", c["len"].as_u64().unwrap_or(0) as usize, java, true));
        }
    }
}

// ---- records ----

fn b64(b: Option<&Bytes>) -> Value {
    use base64::Engine as _;
    b.map_or(Value::Null, |b| Value::String(base64::engine::general_purpose::STANDARD.encode(b)))
}

fn ts_name(t: TimestampType) -> &'static str {
    match t {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    }
}

/// A blob in the JSON shape of `Records.describe` on the Java side.
fn describe(blob: Bytes) -> Result<Value, String> {
    match describe_whole(blob)? {
        (batches, None) => Ok(batches),
        (_, Some(p)) => Err(format!("the last batch is partial ({p} bytes)")),
    }
}

/// The whole batches of a blob, and the size of a partial batch after them.
fn describe_whole(blob: Bytes) -> Result<(Value, Option<usize>), String> {
    let mut out = Vec::new();
    for (i, batch) in Batches::new(blob).enumerate() {
        let batch = batch.map_err(|e| format!("batch {i}: {e}"))?;
        let records = batch.records().map_err(|e| format!("batch {i} records: {e}"))?;
        let recs: Vec<Value> = records
            .iter()
            .map(|r| {
                let headers: Vec<Value> = r.headers.iter().map(|h| json!({"key": h.key.to_string(), "value": b64(h.value.as_ref())})).collect();
                json!({"offset": r.offset, "timestamp": r.timestamp, "key": b64(r.key.as_ref()), "value": b64(r.value.as_ref()), "headers": headers})
            })
            .collect();
        let o = match &batch {
            Batch::V2(b) => json!({
                "magic": 2, "baseOffset": b.base_offset(), "lastOffset": b.last_offset(),
                "compression": b.compression().name(), "timestampType": ts_name(b.timestamp_type()),
                "maxTimestamp": b.max_timestamp(), "producerId": b.producer_id(), "producerEpoch": b.producer_epoch(),
                "baseSequence": b.base_sequence(), "partitionLeaderEpoch": b.partition_leader_epoch(),
                "transactional": b.is_transactional(), "control": b.is_control(), "crc": b.crc(), "records": recs,
            }),
            Batch::Legacy(m) => json!({
                "magic": m.magic(), "baseOffset": records.first().map_or(m.offset(), |r| r.offset), "lastOffset": m.offset(),
                "compression": m.compression().name(),
                "timestampType": if m.magic() == 0 { "NoTimestampType" } else { ts_name(m.timestamp_type()) },
                "records": recs,
            }),
            Batch::Partial(p) => return Ok((Value::Array(out), Some(p.bytes.len()))),
        };
        out.push(o);
    }
    Ok((Value::Array(out), None))
}

/// Blobs kwire's builders write, for Java to read.
/// Each with the records that went in (none for control batches), which Java must read back.
fn rust_blobs() -> Vec<(String, Bytes, Vec<Record>)> {
    let records = |magic: i8, base: i64, n: i64| -> Vec<Record> {
        (0..n)
            .map(|i| {
                let key = (i % 3 != 1).then(|| Bytes::from(format!("k{i}")));
                let value = (i % 4 != 2).then(|| Bytes::from(format!("value-{i}")));
                let r = Record::new(base + i, 1_700_000_000_000 + 10 * i, key, value);
                if magic < 2 {
                    r
                } else {
                    r.with_header("h", Some(Bytes::from(format!("x{i}")))).with_header("h", None).with_header("é", Some(Bytes::from_static(&[1, 2])))
                }
            })
            .collect()
    };
    let codecs = [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];
    let mut out = Vec::new();
    for magic in [0i8, 1] {
        for codec in &codecs[..4] {
            let mut b = LegacyBuilder::new(magic).compression(*codec);
            let mut input = records(magic, 50, 3);
            for r in &input {
                b.append(r.clone()).expect("legacy append");
            }
            if magic == 0 {
                // Magic 0 has no timestamps; Java reads -1.
                input.iter_mut().for_each(|r| r.timestamp = -1);
            }
            out.push((format!("kwire magic {magic} {}", codec.name()), b.build().expect("legacy build"), input));
        }
    }
    let v2 = |codec: Compression, base: i64, n: i64, f: &dyn Fn(RecordBatchBuilder) -> RecordBatchBuilder| {
        let mut b = f(RecordBatchBuilder::new().base_offset(base).compression(codec));
        let input = records(2, base, n);
        for r in &input {
            b.append(r.clone()).expect("append");
        }
        (b.build().expect("build"), input)
    };
    let case = |name: &str, (blob, input): (Bytes, Vec<Record>)| (name.to_string(), blob, input);
    for codec in codecs {
        out.push(case(&format!("kwire magic 2 {}", codec.name()), v2(codec, 100, 4, &|b| b.partition_leader_epoch(3))));
    }
    out.push(case("kwire idempotent", v2(Compression::Lz4, 0, 3, &|b| b.producer(42, 3, 7))));
    out.push(case("kwire transactional", v2(Compression::Zstd, 1000, 4, &|b| b.producer(4242, 1, 0).transactional(true))));
    // Java reports a log-append-time batch's records at the batch's timestamp: compared apart.
    out.push(case("kwire log append time", v2(Compression::Gzip, 7, 2, &|b| b.timestamp_type(TimestampType::LogAppendTime))));
    let commit = RecordBatchBuilder::end_txn_marker(1004, 1_700_000_000_500, 4242, 1, true, 17).expect("marker");
    out.push(("kwire control commit".into(), commit.clone(), Vec::new()));
    out.push(("kwire control abort".into(), RecordBatchBuilder::end_txn_marker(2000, 1, 4243, 2, false, 18).expect("marker"), Vec::new()));
    let mut several = Vec::new();
    let mut input = Vec::new();
    for (blob, records) in [v2(Compression::None, 0, 2, &|b| b), v2(Compression::Snappy, 2, 3, &|b| b)] {
        several.extend_from_slice(&blob);
        input.extend(records);
    }
    several.extend_from_slice(&commit);
    out.push(("kwire several batches".into(), Bytes::from(several), input));
    out
}

fn check_records(dir: &Path, cp: &str, matrix: &mut Matrix) {
    for line in read_jsonl(&dir.join("java-records.jsonl")) {
        let case = line["case"].as_str().unwrap_or_default().to_string();
        let result = describe(hex_bytes(&line["hex"])).and_then(|ours| match json_diff("", &ours, &line["batches"]) {
            None => Ok(()),
            Some(d) => Err(format!("kwire reads it differently: {d}")),
        });
        matrix.record(&format!("records: {case}"), "a", result);
        // Rejections: a flipped byte fails a CRC on both sides; a blob cut short gives the same
        // whole batches on both, and kwire reports the rest as a partial batch.
        let java = line["corrupt"]["javaRefuses"].as_bool() == Some(true);
        let ours = describe(hex_bytes(&line["corrupt"]["hex"])).is_err();
        matrix.record(&format!("records: {case}"), "c", agree_refusal("a flipped last byte", 0, java, ours));
        let cut = &line["cut"];
        let result = describe_whole(hex_bytes(&cut["hex"])).and_then(|(whole, partial)| {
            if let Some(d) = json_diff("", &whole, &cut["batches"]) {
                return Err(format!("cut one byte short, the whole batches differ: {d}"));
            }
            let rest = hex_bytes(&cut["hex"]).len() - cut["validBytes"].as_u64().unwrap_or(0) as usize;
            match partial {
                Some(p) if p == rest => Ok(()),
                p => Err(format!("cut one byte short: kwire's partial batch is {p:?} bytes, Java leaves {rest}")),
            }
        });
        matrix.record(&format!("records: {case}"), "c", result);
    }
    let blobs = rust_blobs();
    // Each blob as built, with its last byte flipped, and cut one byte short.
    let variants = |b: &Bytes| {
        let mut flipped = b.to_vec();
        if let Some(last) = flipped.last_mut() {
            *last ^= 0x5a;
        }
        [b.clone(), Bytes::from(flipped), b.slice(..b.len() - 1)]
    };
    let input: String = blobs.iter().flat_map(|(case, b, _)| variants(b).map(|v| format!("{}\n", json!({"case": case, "hex": hex::encode(&v)})))).collect();
    let answers = run_java(cp, "records-check", dir, "rust-records.jsonl", &input);
    assert_eq!(answers.len(), 3 * blobs.len(), "Java answered every blob");
    for ((case, blob, input), a) in blobs.iter().zip(answers.chunks(3)) {
        let row = format!("records: {case}");
        let [_, flipped, cut] = variants(blob);
        let java = a[1].get("javaError").is_some();
        matrix.record(&row, "c", agree_refusal("a flipped last byte", 0, java, describe(flipped).is_err()));
        let result = describe_whole(cut.clone()).and_then(|(whole, partial)| {
            if let Some(e) = a[2].get("javaError") {
                return Err(format!("cut one byte short, Java refuses the whole batches: {e}"));
            }
            if let Some(d) = json_diff("", &whole, &a[2]["batches"]) {
                return Err(format!("cut one byte short, the whole batches differ: {d}"));
            }
            let rest = cut.len() - a[2]["validBytes"].as_u64().unwrap_or(0) as usize;
            match partial {
                Some(p) if p == rest => Ok(()),
                p => Err(format!("cut one byte short: kwire's partial batch is {p:?} bytes, Java leaves {rest}")),
            }
        });
        matrix.record(&row, "c", result);
        let a = &a[0];
        let result = (|| {
            if let Some(e) = a.get("javaError") {
                return Err(format!("Java: {e}"));
            }
            if a["validBytes"] != a["sizeInBytes"] {
                return Err(format!("Java reads {} of {} bytes as whole batches", a["validBytes"], a["sizeInBytes"]));
            }
            let ours = describe(blob.clone())?;
            if let Some(d) = json_diff("", &ours, &a["batches"]) {
                return Err(format!("Java reads it differently: {d}"));
            }
            if input.is_empty() {
                return Ok(());
            }
            // The records that went into kwire's builder come back out of Java.
            let append_time = a["batches"].as_array().into_iter().flatten().any(|b| b["timestampType"] == "LogAppendTime");
            let java: Vec<Value> = a["batches"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["control"] != true)
                .flat_map(|b| b["records"].as_array().cloned().unwrap_or_default())
                .map(|mut r| {
                    if append_time {
                        r["timestamp"] = Value::Null;
                    }
                    r
                })
                .collect();
            let expected: Vec<Value> = input
                .iter()
                .map(|r| {
                    let headers: Vec<Value> = r.headers.iter().map(|h| json!({"key": h.key.to_string(), "value": b64(h.value.as_ref())})).collect();
                    let ts = if append_time { Value::Null } else { json!(r.timestamp) };
                    json!({"offset": r.offset, "timestamp": ts, "key": b64(r.key.as_ref()), "value": b64(r.value.as_ref()), "headers": headers})
                })
                .collect();
            match json_diff("", &Value::Array(expected), &Value::Array(java)) {
                None => Ok(()),
                Some(d) => Err(format!("Java's records are not the ones built: {d}")),
            }
        })();
        matrix.record(&row, "b", result);
    }
}

// ---- tables ----

fn check_tables(dir: &Path, build: &Build, matrix: &mut Matrix) {
    let tables: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("java-tables.json")).expect("java-tables.json")).expect("JSON");
    let java_errors = tables["errors"].as_array().expect("errors");
    for e in java_errors {
        let code = e["code"].as_i64().unwrap_or(i64::MIN);
        let r = format!("Errors {code}");
        match ERROR_CODES.iter().find(|i| i64::from(i.code) == code) {
            None => matrix.record(&r, "table", Err(format!("kwire has no error code {code} ({})", e["name"]))),
            Some(i) => {
                // The message apart, so an explained message difference cannot hide another.
                let invalid = kwire::ErrorCode(i.code).invalidates_metadata();
                let ours = json!({"code": i.code, "name": i.name, "retriable": i.retriable, "invalidMetadata": invalid});
                let java = json!({"code": e["code"], "name": e["name"], "retriable": e["retriable"], "invalidMetadata": e["invalidMetadata"]});
                matrix.record(&r, "table", json_diff("", &ours, &java).map_or(Ok(()), |d| Err(format!("differs at {d}"))));
                let m = json_diff(".message", &json!(i.message), &e["message"]);
                matrix.record(&r, "table", m.map_or(Ok(()), |d| Err(format!("differs at {d}"))));
            }
        }
    }
    for i in ERROR_CODES.iter().filter(|i| !java_errors.iter().any(|e| e["code"].as_i64() == Some(i.code.into()))) {
        matrix.record(&format!("Errors {}", i.code), "table", Err(format!("Java has no error code {} ({})", i.code, i.name)));
    }
    let java_apis = tables["apis"].as_array().expect("apis");
    for a in java_apis {
        let key = a["key"].as_i64().unwrap_or(-1) as i16;
        let result = match ApiKey::from_i16(key) {
            None => Err(format!("kwire has no api key {key} ({})", a["name"])),
            Some(k) => (|| {
                let info = k.info();
                // A merged build against the versions of the jar's release (`info.releases`).
                let valid = build.versions_of(info)?;
                let unstable = if build.merged() {
                    info.releases.iter().find(|r| r.release == build.jar_release()).is_some_and(|r| r.latest_version_unstable)
                } else {
                    info.latest_version_unstable
                };
                let deprecated = info.deprecated.intersect(&valid);
                // Java says "none" as lowest 0, highest -1.
                let (lo, hi) = (a["lowestDeprecated"].as_i64().unwrap_or(0), a["highestDeprecated"].as_i64().unwrap_or(-1));
                let java_deprecated = if hi < lo { json!(null) } else { json!([lo, hi]) };
                let java = json!({
                    "name": a["name"], "lowest": a["lowest"], "highest": a["highest"],
                    "latestVersionUnstable": a["latestVersionUnstable"], "deprecated": java_deprecated,
                    // Java's enum names (ZK_BROKER) against the spec's (zkBroker).
                    "listeners": sorted(a["listeners"].as_array().into_iter().flatten().map(|l| l.as_str().unwrap_or_default().replace('_', "").to_lowercase())),
                    "requestHeaderVersions": a["requestHeaderVersions"], "responseHeaderVersions": a["responseHeaderVersions"],
                });
                let ours = json!({
                    "name": k.name(), "lowest": valid.lo, "highest": valid.hi,
                    "latestVersionUnstable": unstable,
                    "deprecated": if deprecated.is_empty() { json!(null) } else { json!([deprecated.lo, deprecated.hi]) },
                    "listeners": sorted(info.listeners.iter().map(|l| l.to_lowercase())),
                    "requestHeaderVersions": valid.iter().map(|v| k.request_header_version(v)).collect::<Vec<_>>(),
                    "responseHeaderVersions": valid.iter().map(|v| k.response_header_version(v)).collect::<Vec<_>>(),
                });
                // Deprecation apart, so an explained difference there cannot hide another.
                let (mut ours, mut java) = (ours, java);
                let (od, jd) = (ours["deprecated"].take(), java["deprecated"].take());
                let d = json_diff(".deprecated", &od, &jd).map_or(Ok(()), |d| Err(format!("differs at {d}")));
                // The name apart too (a merged build names a renamed api as the newest release).
                let (on, jn) = (ours["name"].take(), java["name"].take());
                let n = json_diff(".name", &on, &jn).map_or(Ok(()), |d| Err(format!("differs at {d}")));
                let rest = json_diff("", &ours, &java).map_or(Ok(()), |e| Err(format!("differs at {e}")));
                Ok([rest, d, n])
            })(),
        };
        // Each part's failure apart, so an explained one cannot hide another; one check if all agree.
        let r = format!("ApiKeys {key}");
        match result {
            Err(e) => matrix.record(&r, "table", Err(e)),
            Ok(parts) if parts.iter().all(Result::is_ok) => matrix.record(&r, "table", Ok(())),
            Ok(parts) => parts.into_iter().filter(Result::is_err).for_each(|p| matrix.record(&r, "table", p)),
        }
    }
    for k in ApiKey::ALL.iter().filter(|k| !java_apis.iter().any(|a| a["key"].as_i64() == Some(k.key().into()))) {
        let r = format!("ApiKeys {}", k.key());
        // Fine where the jar's release does not define the api either (a merged build's apis of
        // other releases): checked in `ApiKey::info().releases` and in that release's spec.
        let rel = build.jar_release();
        let info = k.info();
        let theirs = info.releases.iter().find(|r| r.release == rel).map_or(VersionRange::NONE, |r| r.valid);
        let spec = build.spec(build.jar_release, &format!("{}Request", k.name()));
        if build.merged() && theirs.is_empty() && spec.is_none_or(|s| spec_range(s["validVersions"].as_str()).is_none()) {
            let by: Vec<&str> = info.releases.iter().filter(|r| !r.valid.is_empty()).map(|r| r.release).collect();
            matrix.only.insert((r, "table".into()), format!("not in {rel}, defined by {}", by.join(", ")));
        } else {
            matrix.record(&r, "table", Err(format!("Java has no api key {} ({})", k.key(), k.name())));
        }
    }
}

// ---- plumbing ----

fn sorted(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = items.collect();
    v.sort();
    v
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

/// Writes `input` to `dir/name`, runs `Oracle <command> dir/name dir/name.answers`, reads the answers.
fn run_java(cp: &str, command: &str, dir: &Path, name: &str, input: &str) -> Vec<Value> {
    let inp = dir.join(name);
    let out = dir.join(format!("{name}.answers"));
    std::fs::write(&inp, input).expect("write vectors");
    let status = std::process::Command::new("java")
        .args(["-cp", cp, "oracle.Oracle", command])
        .arg(&inp)
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run java");
    assert!(status.success(), "java Oracle {command} failed: {status}");
    read_jsonl(&out)
}

#[test]
fn java_oracle() {
    let (Some(dir), Some(cp)) = (std::env::var_os("KWIRE_JAVA_ORACLE"), std::env::var("KWIRE_JAVA_CP").ok()) else {
        println!("skipped: set KWIRE_JAVA_ORACLE and KWIRE_JAVA_CP (scripts/java-oracle.sh does)");
        return;
    };
    let dir = PathBuf::from(dir);
    let tables: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("java-tables.json")).expect("java-tables.json")).expect("JSON");
    let version = tables["kafkaClients"].as_str().unwrap_or("?").to_string();

    let build = Build::new(&version);
    // Java's messages under kwire's names: an api by its key and direction (a merged build
    // names api 74 as Kafka 4.1 renamed it).
    let mut java: HashMap<String, Vec<Value>> = HashMap::new();
    let mut java_names = HashMap::new();
    let mut jar_versions: HashMap<String, std::collections::BTreeSet<i16>> = HashMap::new();
    for line in read_jsonl(&dir.join("java-vectors.jsonl")) {
        let java_name = line["name"].as_str().unwrap_or_default().to_string();
        let key = line["apiKey"].as_i64().unwrap_or(-1);
        let ours = (key >= 0)
            .then(|| ApiKey::from_i16(key as i16))
            .flatten()
            .map(|k| format!("{}{}", k.name(), if line["kind"] == "request" { "Request" } else { "Response" }))
            .unwrap_or_else(|| java_name.clone());
        if ours != java_name {
            java_names.insert(ours.clone(), java_name);
        }
        jar_versions.entry(ours.clone()).or_default().insert(line["version"].as_i64().unwrap_or(-1) as i16);
        java.entry(ours).or_default().push(line);
    }
    let mut matrix = Matrix::default();
    let mut visitor = Visitor { java: &java, matrix: &mut matrix, rust_vectors: Vec::new(), seen: Vec::new(), jar_versions, java_names, build: &build };
    visit_json_messages(&mut visitor);
    let Visitor { rust_vectors, seen, .. } = visitor;
    for (name, lines) in &java {
        if !seen.contains(name) {
            for l in lines {
                matrix.record(&row(name, l["version"].as_i64().unwrap_or(-1)), "a", Err(format!("kwire has no message {name}")));
            }
        }
    }
    let input: String = rust_vectors.iter().map(|(l, _)| format!("{l}\n")).collect();
    let answers = run_java(&cp, "check", &dir, "rust-vectors.jsonl", &input);
    // Where Java's JSON differs from kwire's only by renamed fields (a merged build names
    // them as the newest release does), Java reads kwire's JSON again under its own names.
    let retry: Vec<(usize, Value)> = rust_vectors
        .iter()
        .zip(&answers)
        .enumerate()
        .filter_map(|(i, ((line, expect), a))| match compare_json(&expect.json, &a["json"]) {
            Err(JsonDiff::Renamed(r)) => {
                let mut l = line.clone();
                l["json"] = renamed_back(&expect.json, &r);
                Some((i, l))
            }
            _ => None,
        })
        .collect();
    let retried: HashMap<usize, Value> = if retry.is_empty() {
        HashMap::new()
    } else {
        let input: String = retry.iter().map(|(_, l)| format!("{l}\n")).collect();
        let again = run_java(&cp, "check", &dir, "rust-vectors-renamed.jsonl", &input);
        assert_eq!(again.len(), retry.len(), "Java answered every renamed vector");
        retry.iter().map(|(i, _)| *i).zip(again).collect()
    };
    check_java_answers(&mut matrix, &rust_vectors, &answers, &retried);
    check_tables(&dir, &build, &mut matrix);
    check_records(&dir, &cp, &mut matrix);

    let ctx = Ctx { tables: tables.clone(), jar_index: SpecIndex::read(&dir.join("specs")), build };
    let report = report(&matrix, &version, &ctx);
    std::fs::write(dir.join("MATRIX.md"), &report.markdown).expect("write matrix");
    std::fs::write(dir.join("cells.json"), serde_json::to_string_pretty(&report.cells).expect("JSON")).expect("write cells");
    // One committed matrix per (kafka-clients version, spec set): the merged default build's
    // apart from the single-release build's.
    let suffix = if ctx.build.merged() { "-merged" } else { "" };
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/java/MATRIX-kafka-clients-{version}{suffix}.md"));
    if std::env::var_os("KWIRE_UPDATE_MATRIX").is_some() {
        std::fs::write(&committed, &report.markdown).expect("write tests/java matrix");
    }
    let stale_matrix = std::fs::read_to_string(&committed).map_or(true, |m| m != report.markdown);
    println!("{}", report.summary);
    assert!(report.unexplained.is_empty(), "{} cells disagree:\n{}", report.unexplained.len(), report.unexplained.join("\n"));
    assert!(report.stale.is_empty(), "explanations that match no disagreement any more: {:?}", report.stale);
    assert!(
        !stale_matrix,
        "{} is not this run's matrix ({}): rerun with KWIRE_UPDATE_MATRIX=1 and review the diff",
        committed.display(),
        dir.join("MATRIX.md").display()
    );
    if ctx.build.merged() {
        println!(
            "kwire only: {} message versions and api keys the jar's release ({}) does not define; not sent to Java, not cells",
            matrix.only.len(),
            ctx.build.jar_release()
        );
        println!("java oracle: {} of {} cells agree (kafka-clients {version}, {})", report.agree, report.total, ctx.build.label());
    } else {
        println!("java oracle: {} of {} cells agree (kafka-clients {version})", report.agree, report.total);
    }
}

struct Report {
    markdown: String,
    cells: Value,
    summary: String,
    unexplained: Vec<String>,
    stale: Vec<&'static str>,
    agree: usize,
    total: usize,
}

fn report(matrix: &Matrix, version: &str, ctx: &Ctx) -> Report {
    let mut unexplained = Vec::new();
    let mut used: Vec<&str> = Vec::new();
    let mut per_column: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut cells = Vec::new();
    // Row -> column -> short status, for the markdown.
    let mut grid: BTreeMap<(String, i64, String), BTreeMap<&str, String>> = BTreeMap::new();
    let mut notes: BTreeMap<&str, &str> = BTreeMap::new();
    let (mut agree, mut total) = (0, 0);
    for ((r, c), cell) in &matrix.cells {
        let key = format!("{r} ({c})");
        let (status, short) = if cell.failures.is_empty() {
            agree += 1;
            ("agree".to_string(), format!("agree ({})", cell.checks))
        } else {
            match explain(ctx, r, c, &cell.failures) {
                Some((id, Ok(()))) => {
                    used.push(id);
                    agree += 1;
                    notes.insert(id, EXPLAINED.iter().find(|e| e.0 == id).map_or("", |e| e.3));
                    (format!("explained ({id}): {}", cell.failures[0]), format!("explained ({id}): {}", cell.failures[0]))
                }
                Some((id, Err(e))) => {
                    unexplained.push(format!("{key}: explanation {id} no longer holds: {e}; {}", cell.failures.join("; ")));
                    (format!("DIFFER: {}", cell.failures[0]), format!("**DIFFER**: {}", cell.failures[0]))
                }
                None => {
                    unexplained.push(format!("{key}: {}", cell.failures.join("; ")));
                    (format!("DIFFER: {}", cell.failures[0]), format!("**DIFFER**: {}", cell.failures[0]))
                }
            }
        };
        total += 1;
        let e = per_column.entry(c.as_str()).or_default();
        e.0 += 1;
        if status == "agree" {
            e.1 += 1;
        } else if status.starts_with("explained") {
            e.2 += 1;
        }
        cells.push(json!({"row": r, "column": c, "checks": cell.checks, "status": status}));
        // Sort "Name v10" after "Name v9", "Errors 100" after "Errors 99".
        let (name, n) = match r.rsplit_once(' ') {
            Some((name, n)) => match n.trim_start_matches('v').parse::<i64>() {
                Ok(n) => (name.to_string(), n),
                Err(_) => (r.clone(), 0),
            },
            None => (r.clone(), 0),
        };
        grid.entry((name, n, r.clone())).or_default().insert(c.as_str(), short.replace('|', "\\|"));
    }
    let mut only_per_column: BTreeMap<&str, usize> = BTreeMap::new();
    for ((r, c), why) in &matrix.only {
        *only_per_column.entry(c.as_str()).or_default() += 1;
        cells.push(json!({"row": r, "column": c, "checks": 0, "status": format!("kwire only: {why}")}));
        let (name, n) = match r.rsplit_once(' ') {
            Some((name, n)) => (name.to_string(), n.trim_start_matches('v').parse::<i64>().unwrap_or(0)),
            None => (r.clone(), 0),
        };
        grid.entry((name, n, r.clone())).or_default().insert(c.as_str(), format!("kwire only: {why}"));
    }
    let stale = EXPLAINED.iter().filter(|e| explanation_applies(e, version, ctx.build.merged()) && !used.contains(&e.0)).map(|e| e.0).collect();
    let mut summary = String::new();
    let title = if ctx.build.merged() { format!("{version} ({})", ctx.build.label()) } else { version.to_string() };
    let mut md = format!(
        "# Java oracle matrix: kwire vs kafka-clients {title}\n\n\
         Generated by `scripts/java-oracle.sh` (`tests/java_oracle.rs`; `KWIRE_UPDATE_MATRIX=1` rewrites this file,\n\
         and the test fails while it differs from a run). Do not edit. Explanations are code in `tests/java_oracle.rs`\n\
         (`EXPLAINED`, `explain`), which checks each one still holds.\n\n\
         - **a**: Java builds the values (every field set, nulls, 0/1/several elements, tagged and unknown tagged fields); kwire decodes Java's bytes (every byte), re-encodes them identically, prints Java's JSON and reads it back to the same value. Records: Java's `MemoryRecordsBuilder` blobs read by kwire.\n\
         - **b**: kwire's schema-driven samples; Java reads them (every byte), writes identical bytes, prints kwire's JSON and reads kwire's JSON to an equal object. Records: kwire's builder blobs read by `MemoryRecords.readableRecords` (`ensureValid()` on every batch).\n\
         - **c**: rejections agree: truncated bodies (both directions), a null in a field not nullable at the version (JSON), a tag the message has only at other versions; a value written at neighbouring versions (both directions) gives the same bytes or is refused by both (a non-default value in a non-ignorable field the version lacks). Records: a flipped last byte fails a CRC on both sides; a blob cut one byte short gives the same whole batches, and the rest is a partial batch.\n\
         - **table**: `Errors` (name, retriable, message) and `ApiKeys` (versions, unstable latest, deprecation, listeners, header versions).\n\n\
         JSON: kwire keeps unknown tagged fields as `_unknownTaggedFields` and `records` as base64; Java's converter drops the first and writes the second as an empty binary. The Java side checks it did exactly that and adds kwire's form before comparing, so every other byte of the JSON is compared as is.\n\n"
    );
    if ctx.build.merged() {
        let _ = write!(
            md,
            "\n\
             This build is merged from several releases' specs (`kwire::SPEC_DIR`: {}), oldest first; each version\n\
             comes from the newest release that defines it (`ApiKey::info().origin`). Java is compared on every version\n\
             its jar has. What kwire has and the jar does not is listed as **kwire only**, not sent to Java and\n\
             not counted as cells, where the jar's release ({}) does not define it either (checked in its spec and in\n\
             `ApiKey::info().releases`; otherwise the cell fails). The `ApiKeys` table compares the versions, unstable\n\
             flag, deprecation and header versions of {} (`ApiKey::info().releases`).\n\n",
            ctx.build.releases.iter().map(|r| r.0.as_str()).collect::<Vec<_>>().join(", "),
            ctx.build.jar_release(),
            ctx.build.jar_release()
        );
        md.push_str("| column | cells | agree | explained | kwire only (not cells) |\n| --- | ---: | ---: | ---: | ---: |\n");
    } else {
        md.push_str("| column | cells | agree | explained |\n| --- | ---: | ---: | ---: |\n");
    }
    for (c, (n, a, x)) in &per_column {
        if ctx.build.merged() {
            let _ = writeln!(md, "| {c} | {n} | {a} | {x} | {} |", only_per_column.get(c).unwrap_or(&0));
        } else {
            let _ = writeln!(md, "| {c} | {n} | {a} | {x} |");
        }
        let _ = writeln!(summary, "  ({c}) {a} agree + {x} explained of {n}");
    }
    for (c, o) in &only_per_column {
        let _ = writeln!(summary, "  ({c}) kwire only: {o}");
    }
    if !notes.is_empty() {
        md.push_str("\n## Explanations\n\n");
        for (id, why) in &notes {
            let _ = writeln!(md, "- **{id}**: {why}");
        }
    }
    md.push_str("\n## Cells\n\n| row | a | b | c | table |\n| --- | --- | --- | --- | --- |\n");
    for ((_, _, r), cols) in &grid {
        let get = |c: &str| cols.get(c).map_or("–", String::as_str);
        let _ = writeln!(md, "| {r} | {} | {} | {} | {} |", get("a"), get("b"), get("c"), get("table"));
    }
    Report { markdown: md, cells: Value::Array(cells), summary, unexplained, stale, agree, total }
}
