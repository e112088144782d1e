//! Stage 2: the validated model. Lowering checks every invariant Kafka's generator enforces,
//! clamps open-ended ranges to the message's highest version, and precomputes per field the
//! ranges emission needs (present, regular, tagged, nullable, compact), so that emission never
//! validates and never fails.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::Error;
use crate::plan::{FieldPlan, StructPlan};
use crate::spec::{FieldSpec, MessageSpec, StructSpec};
use crate::version::VersionRange;
use crate::wire::{DefaultKind, Fixed};

/// What a message spec describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// An api request.
    Request,
    /// An api response.
    Response,
    /// A request or response header.
    Header,
    /// A data structure carried inside other messages or records.
    Data,
}

/// The whole spec set.
#[derive(Debug, Clone)]
pub struct Model {
    /// Messages with at least one valid version, sorted by name.
    pub messages: Vec<Message>,
    /// Every api key, including those whose versions are all removed, sorted by key.
    pub apis: Vec<Api>,
}

impl Model {
    /// Keeps only the requests and responses of `keys` (headers and data messages stay), and
    /// only those apis; the apis' message indices follow.
    pub fn retain_api_keys(&mut self, keys: &BTreeSet<i16>) {
        let keep = |m: &Message| m.api_key.is_none_or(|k| keys.contains(&k));
        let mut new_index = Vec::with_capacity(self.messages.len());
        let mut next = 0usize;
        for m in &self.messages {
            new_index.push(keep(m).then(|| {
                next += 1;
                next - 1
            }));
        }
        self.messages.retain(keep);
        self.apis.retain(|a| keys.contains(&a.key));
        let remap = |i: Option<usize>| i.and_then(|i| new_index.get(i).copied().flatten());
        for a in &mut self.apis {
            a.request = remap(a.request);
            a.response = remap(a.response);
        }
    }
}

/// An api key and its request/response pair.
#[derive(Debug, Clone)]
pub struct Api {
    /// The key.
    pub key: i16,
    /// The name without `Request` (`Produce`).
    pub name: String,
    /// Index in [`Model::messages`] of the request, when it has valid versions.
    pub request: Option<usize>,
    /// Index of the response.
    pub response: Option<usize>,
    /// Valid versions, the unstable one included.
    pub valid: VersionRange,
    /// Flexible versions (within `valid`).
    pub flexible: VersionRange,
    /// Deprecated versions.
    pub deprecated: VersionRange,
    /// Whether the highest valid version is unstable.
    pub latest_unstable: bool,
    /// Listeners.
    pub listeners: Vec<String>,
    /// What each release of the build defines of this api, oldest first (see [`Release`]).
    pub releases: Vec<ReleaseApi>,
    /// The request spec's `headerVersions`, when it has them (see [`Message::header_versions`]).
    pub request_header: Vec<HeaderVersion>,
    /// The response spec's `headerVersions`.
    pub response_header: Vec<HeaderVersion>,
}

/// One release's spec set, as it was before merging: which versions of each api it defines.
#[derive(Debug, Clone)]
pub struct Release {
    /// Its name: the spec directory's or jar's name (`kafka-3.9.0`).
    pub name: String,
    /// Api key -> (valid versions, newest version unstable), from its request specs.
    pub apis: BTreeMap<i16, (VersionRange, bool)>,
}

impl Release {
    /// Reads the request specs of one release. Ranges that do not parse are left out here:
    /// lowering reports them.
    pub fn of(name: &str, specs: &[(String, MessageSpec)]) -> Release {
        let apis = specs
            .iter()
            .filter(|(_, s)| s.kind == "request")
            .filter_map(|(_, s)| {
                let valid = VersionRange::parse(&s.valid_versions)?;
                Some((s.api_key?, (valid, s.latest_version_unstable.unwrap_or(false) && !valid.is_empty())))
            })
            .collect();
        Release { name: name.to_string(), apis }
    }
}

/// What one release defines of one api.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseApi {
    /// The release's name.
    pub release: String,
    /// Its valid versions (empty where it removed or lacks the api).
    pub valid: VersionRange,
    /// Whether its newest version is unstable.
    pub latest_unstable: bool,
}

/// One entry of a spec's `headerVersions`: the header version of the messages in `versions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderVersion {
    /// Ascending and contiguous from 0 across a message's entries; the last is open-ended.
    pub versions: VersionRange,
    /// The header version.
    pub header: i16,
}

/// A message with its structs.
#[derive(Debug, Clone)]
pub struct Message {
    /// The spec file name.
    pub file: String,
    /// The message name.
    pub name: String,
    /// Request, response, header or data.
    pub kind: MessageKind,
    /// The api key of requests and responses.
    pub api_key: Option<i16>,
    /// Valid versions.
    pub valid: VersionRange,
    /// Flexible versions, clamped to `valid`.
    pub flexible: VersionRange,
    /// Deprecated versions.
    pub deprecated: VersionRange,
    /// Whether the highest valid version is unstable.
    pub latest_unstable: bool,
    /// Listeners.
    pub listeners: Vec<String>,
    /// `headerVersions` of a request or response spec (Kafka after 4.3), validated as Kafka's
    /// `HeaderVersions` does; empty when the spec leaves header versions to the flexible rule.
    pub header_versions: Vec<HeaderVersion>,
    /// The top-level struct first (named like the message), then nested and common structs.
    pub structs: Vec<Struct>,
}

impl Message {
    /// The versions in which some struct of the message holding a broker endpoint
    /// ([`Struct::endpoint`]) can be on the wire: their hull, so never fewer than that.
    pub fn endpoint_versions(&self) -> VersionRange {
        self.structs.iter().filter_map(|s| s.endpoint().map(|e| s.reach.intersect(&e.host.versions))).fold(VersionRange::NONE, |a, r| a.hull(&r))
    }

    /// The structs that hold an endpoint or reach one through their fields: the only ones the
    /// endpoint walker descends into (a Produce request's partitions need no walk).
    pub fn structs_reaching_endpoints(&self) -> BTreeSet<&str> {
        let mut out: BTreeSet<&str> = self.structs.iter().filter(|s| s.endpoint().is_some()).map(|s| s.name.as_str()).collect();
        // To a fixed point: structs nest a few levels deep.
        loop {
            let before = out.len();
            for s in &self.structs {
                if s.fields.iter().any(|f| f.ty.struct_name().is_some_and(|n| out.contains(n))) {
                    out.insert(s.name.as_str());
                }
            }
            if out.len() == before {
                return out;
            }
        }
    }
}

/// A struct: the message body, an inline struct or a common struct.
#[derive(Debug, Clone)]
pub struct Struct {
    /// Its name.
    pub name: String,
    /// Documentation (the `about` of the field that defines it).
    pub about: String,
    /// Fields in wire order.
    pub fields: Vec<Field>,
    /// Versions in which the struct can be reached from the message.
    pub reach: VersionRange,
    /// Flexible versions within `reach`.
    pub flexible: VersionRange,
    /// The decisions emission takes for the whole struct (see [`crate::internal::plan`]).
    pub plan: StructPlan,
}

impl Struct {
    /// True when some reachable version is flexible, so the struct has a tagged section.
    pub fn has_tagged_section(&self) -> bool {
        !self.flexible.is_empty()
    }

    /// The struct's broker endpoint, when it holds one: a non-nullable string `<P>Host` beside an
    /// int32 or uint16 `<P>Port` of the same prefix (`Host`/`Port`, UpdateMetadata v0's
    /// `V0Host`/`V0Port`), with the optional siblings the specs name alike. Names, not a list of
    /// structs, so a new api's endpoint is found without anyone adding it.
    pub fn endpoint(&self) -> Option<EndpointFields<'_>> {
        let named = |name: &str| self.fields.iter().find(|f| f.name == name);
        let (host, port) = self.fields.iter().find_map(|host| {
            let prefix = host.name.strip_suffix("Host")?;
            if host.ty != FieldType::String || host.is_option() {
                return None;
            }
            let port = named(&format!("{prefix}Port")).filter(|f| matches!(f.ty, FieldType::Fixed(Fixed::Int32 | Fixed::Uint16)))?;
            Some((host, port))
        })?;
        let node_id = ["NodeId", "BrokerId", "LeaderId"]
            .iter()
            .find_map(|n| named(n))
            .or_else(|| self.fields.iter().find(|f| f.entity == Some(Entity::BrokerId)))
            .filter(|f| f.ty == FieldType::Fixed(Fixed::Int32));
        // Racks are nullable in every spec; a non-nullable one would need another view type.
        let rack = named("Rack").filter(|f| f.ty == FieldType::String && f.is_option());
        let listener = ["Name", "Listener"].iter().find_map(|n| named(n)).filter(|f| f.ty == FieldType::String && !f.is_option());
        Some(EndpointFields { host, port, node_id, rack, listener })
    }
}

/// The fields of a struct that make up a broker endpoint (see [`Struct::endpoint`]).
#[derive(Debug, Clone, Copy)]
pub struct EndpointFields<'a> {
    /// `Host` (or `<P>Host`): a non-nullable string.
    pub host: &'a Field,
    /// `Port` (or `<P>Port`): int32 or uint16.
    pub port: &'a Field,
    /// `NodeId`, `BrokerId`, `LeaderId` or a `brokerId` entity (int32), when present.
    pub node_id: Option<&'a Field>,
    /// `Rack` (nullable string), when present.
    pub rack: Option<&'a Field>,
    /// `Name` or `Listener` (the listener name of listener structs), when present.
    pub listener: Option<&'a Field>,
}

/// A field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// A fixed-width type (`bool`, `int8` ... `uuid`): see [`crate::internal::wire`].
    Fixed(Fixed),
    /// `string`
    String,
    /// `bytes`
    Bytes,
    /// `records`
    Records,
    /// A struct, by name.
    Struct(String),
    /// `[]T`
    Array(Box<FieldType>),
}

impl FieldType {
    fn parse(text: &str) -> Option<FieldType> {
        if let Some(t) = Fixed::parse(text) {
            return Some(FieldType::Fixed(t));
        }
        Some(match text {
            "string" => FieldType::String,
            "bytes" => FieldType::Bytes,
            "records" => FieldType::Records,
            _ => {
                if let Some(inner) = text.strip_prefix("[]") {
                    let inner = FieldType::parse(inner)?;
                    if matches!(inner, FieldType::Array(_) | FieldType::Records) {
                        return None;
                    }
                    return Some(FieldType::Array(Box::new(inner)));
                }
                let mut chars = text.chars();
                let first = chars.next()?;
                if !first.is_ascii_uppercase() || !chars.all(|c| c.is_ascii_alphanumeric()) {
                    return None;
                }
                FieldType::Struct(text.to_string())
            }
        })
    }

    /// The struct this type names, directly or as array elements.
    pub fn struct_name(&self) -> Option<&str> {
        match self {
            FieldType::Struct(n) => Some(n),
            FieldType::Array(inner) => inner.struct_name(),
            FieldType::Fixed(_) | FieldType::String | FieldType::Bytes | FieldType::Records => None,
        }
    }

    /// Whether Kafka allows the type to be nullable.
    pub fn can_be_nullable(&self) -> bool {
        match self {
            FieldType::String | FieldType::Bytes | FieldType::Records | FieldType::Struct(_) | FieldType::Array(_) => true,
            FieldType::Fixed(_) => false,
        }
    }

    /// The fixed-width type, if it is one.
    pub fn fixed(&self) -> Option<Fixed> {
        match self {
            FieldType::Fixed(t) => Some(*t),
            FieldType::String | FieldType::Bytes | FieldType::Records | FieldType::Struct(_) | FieldType::Array(_) => None,
        }
    }

    /// Wire size of fixed-size types.
    pub fn fixed_size(&self) -> Option<usize> {
        self.fixed().map(Fixed::size)
    }
}

/// A field's default value.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// The type's natural default: 0, false, empty, zero UUID, default struct.
    Natural,
    /// `"null"`.
    Null,
    /// A bool.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
}

/// A field with its version ranges, all clamped to the message's valid versions.
#[derive(Debug, Clone)]
pub struct Field {
    /// Spec name (PascalCase).
    pub name: String,
    /// Documentation.
    pub about: String,
    /// Type.
    pub ty: FieldType,
    /// Versions in which the field exists.
    pub versions: VersionRange,
    /// Versions in which it is written in place (versions minus tagged versions).
    pub regular: VersionRange,
    /// Versions in which it is a tagged field.
    pub tagged: VersionRange,
    /// The tag, for tagged fields.
    pub tag: Option<u32>,
    /// Versions in which it may be null (within `versions`).
    pub nullable: VersionRange,
    /// Versions in which strings/bytes/arrays use compact lengths.
    pub compact: VersionRange,
    /// Whether a non-default value in a version lacking the field is dropped silently.
    pub ignorable: bool,
    /// Default value.
    pub default: DefaultValue,
    /// Whether this is the map key of its struct's array.
    pub map_key: bool,
    /// The entity type, when given (as the spec spells it).
    pub entity_type: Option<String>,
    /// The entity type, when it is a known one.
    pub entity: Option<Entity>,
    /// Every version check emission needs, resolved against the struct's reachable versions.
    pub plan: FieldPlan,
}

impl Field {
    /// True when the Rust type is `Option<_>` (nullable in some version).
    pub fn is_option(&self) -> bool {
        !self.nullable.is_empty()
    }
}

const RESERVED_STRUCT_NAMES: &[&str] = &["Option", "Some", "None", "Vec", "Result", "Ok", "Err", "Default", "Self", "Box", "String"];

/// Lowers and validates a spec set that is one release.
pub fn lower(specs: &[(String, MessageSpec)]) -> Result<Model, Error> {
    lower_releases(specs, &[Release::of("", specs)])
}

/// Lowers and validates a spec set merged from `releases` (oldest first), recording on each
/// api what every release defines of it.
pub fn lower_releases(specs: &[(String, MessageSpec)], releases: &[Release]) -> Result<Model, Error> {
    let mut messages = Vec::new();
    let mut apis: BTreeMap<i16, Api> = BTreeMap::new();
    let mut requests: BTreeMap<i16, String> = BTreeMap::new();
    let mut responses: BTreeMap<i16, String> = BTreeMap::new();
    let mut names = BTreeSet::new();

    for (file, spec) in specs {
        let msg = lower_message(file, spec)?;
        if !names.insert(msg.name.clone()) {
            return Err(Error::invalid(file, "", format!("message name {} is used by another spec", msg.name)));
        }
        if let Some(key) = msg.api_key {
            let seen = match msg.kind {
                MessageKind::Request => requests.insert(key, file.clone()),
                _ => responses.insert(key, file.clone()),
            };
            if let Some(other) = seen {
                return Err(Error::invalid(file, "", format!("api key {key} is also used by {other}")));
            }
            if msg.kind == MessageKind::Request {
                apis.insert(
                    key,
                    Api {
                        key,
                        name: msg.name.trim_end_matches("Request").to_string(),
                        request: None,
                        response: None,
                        valid: msg.valid,
                        flexible: msg.flexible,
                        deprecated: msg.deprecated,
                        latest_unstable: msg.latest_unstable,
                        listeners: msg.listeners.clone(),
                        releases: releases
                            .iter()
                            .map(|r| {
                                let (valid, latest_unstable) = r.apis.get(&key).copied().unwrap_or((VersionRange::NONE, false));
                                ReleaseApi { release: r.name.clone(), valid, latest_unstable }
                            })
                            .collect(),
                        request_header: msg.header_versions.clone(),
                        response_header: Vec::new(),
                    },
                );
            }
        }
        messages.push(msg);
    }
    for (key, file) in &requests {
        if !responses.contains_key(key) {
            return Err(Error::invalid(file, "", format!("no response spec has api key {key}")));
        }
    }
    for (key, file) in &responses {
        if !requests.contains_key(key) {
            return Err(Error::invalid(file, "", format!("no request spec has api key {key}")));
        }
    }

    // Messages without any valid version keep their api key but generate no types.
    messages.retain(|m| !m.valid.is_empty());
    messages.sort_by(|a, b| a.name.cmp(&b.name));
    for (i, m) in messages.iter().enumerate() {
        if let (Some(key), Some(api)) = (m.api_key, m.api_key.and_then(|k| apis.get_mut(&k))) {
            let _ = key;
            match m.kind {
                MessageKind::Request => api.request = Some(i),
                _ => {
                    api.response = Some(i);
                    api.response_header = m.header_versions.clone();
                }
            }
        }
    }
    for (file, spec) in specs {
        if spec.kind == "response" {
            if let Some(api) = spec.api_key.and_then(|k| apis.get(&k)) {
                // Emission pairs a request with its response by the api's index; the names must
                // agree as well as the key, as in Kafka's specs (`ApiKey` variants and the
                // dispatch enums name both after the api).
                let expected = format!("{}Response", api.name);
                if spec.name != expected {
                    return Err(Error::invalid(file, "", format!("the response to {}Request must be named {expected}", api.name)));
                }
                let valid = parse_range(file, "", "validVersions", &spec.valid_versions)?;
                if valid.clamp_hi(i16::MAX) != api.valid && !(valid.is_empty() && api.valid.is_empty()) {
                    return Err(Error::invalid(file, "", format!("validVersions {valid} differ from the request's {}", api.valid)));
                }
            }
        }
    }
    Ok(Model { messages, apis: apis.into_values().collect() })
}

fn parse_range(file: &str, path: &str, what: &str, text: &str) -> Result<VersionRange, Error> {
    VersionRange::parse(text).ok_or_else(|| Error::invalid(file, path, format!("invalid {what} \"{text}\"")))
}

fn lower_message(file: &str, spec: &MessageSpec) -> Result<Message, Error> {
    let kind = match spec.kind.as_str() {
        "request" => MessageKind::Request,
        "response" => MessageKind::Response,
        "header" => MessageKind::Header,
        "data" => MessageKind::Data,
        other => return Err(Error::invalid(file, "", format!("unknown message type \"{other}\""))),
    };
    let suffix = match kind {
        MessageKind::Request => Some("Request"),
        MessageKind::Response => Some("Response"),
        _ => None,
    };
    if let Some(suffix) = suffix {
        if !spec.name.ends_with(suffix) {
            return Err(Error::invalid(file, "", format!("a {} name must end with {suffix}", spec.kind)));
        }
        match spec.api_key {
            None => return Err(Error::invalid(file, "", "a request or response needs an apiKey")),
            Some(k) if k < 0 => return Err(Error::invalid(file, "", format!("invalid apiKey {k}"))),
            _ => {}
        }
    } else if spec.api_key.is_some() {
        return Err(Error::invalid(file, "", format!("a {} spec cannot have an apiKey", spec.kind)));
    }
    check_struct_name(file, "", &spec.name)?;

    let declared = parse_range(file, "", "validVersions", &spec.valid_versions)?;
    if declared.is_open_ended() {
        return Err(Error::invalid(file, "", "validVersions must be a closed range"));
    }
    let valid = declared;
    let flexible_raw = match &spec.flexible_versions {
        Some(t) => parse_range(file, "", "flexibleVersions", t)?,
        // Releases before flexible versions existed (Kafka < 2.4) omit the key.
        None => VersionRange::NONE,
    };
    if !flexible_raw.is_empty() && !flexible_raw.is_open_ended() {
        return Err(Error::invalid(file, "", "flexibleVersions must be open-ended (N+) or none"));
    }
    let max = valid.hi;
    let flexible = flexible_raw.clamp_hi(max).intersect(&valid);
    let deprecated = match &spec.deprecated_versions {
        Some(t) => parse_range(file, "", "deprecatedVersions", t)?.clamp_hi(max),
        None => VersionRange::NONE,
    };
    let latest_unstable = spec.latest_version_unstable.unwrap_or(false);
    // Kafka's MessageSpec checks these only for messages with valid versions: a removed api keeps
    // whatever it had. The response follows its request's stability, so only requests say it.
    if !valid.is_empty() {
        if latest_unstable && kind != MessageKind::Request {
            return Err(Error::invalid(file, "", "latestVersionUnstable is only valid for requests"));
        }
        if spec.listeners.as_ref().is_some_and(|l| !l.is_empty()) && kind != MessageKind::Request {
            return Err(Error::invalid(file, "", "listeners are only valid for requests"));
        }
    }
    let header_versions = match &spec.header_versions {
        None => Vec::new(),
        Some(_) if valid.is_empty() => return Err(Error::invalid(file, "", "headerVersions must not be given for a message with no valid versions")),
        Some(_) if !matches!(kind, MessageKind::Request | MessageKind::Response) => {
            return Err(Error::invalid(file, "", "headerVersions are only valid for requests and responses"))
        }
        Some(map) => lower_header_versions(file, map, valid, kind == MessageKind::Response && spec.api_key == Some(18))?,
    };

    let ctx = Lowering { file, max, flexible_raw, flexible, common: spec.common_structs.iter().map(|s| (s.name.clone(), s)).collect() };
    let mut structs = Vec::new();
    // The message's own struct takes its name too: no nested or common struct may reuse it.
    let mut defined = HashMap::from([(spec.name.clone(), ())]);
    let top = ctx.lower_struct(&spec.name, "", &spec.fields, "", &mut structs, &mut defined)?;
    structs.insert(0, top);
    for common in &spec.common_structs {
        // Kafka's StructRegistry: a struct name is what a field's type names, so it must parse as one.
        if !matches!(FieldType::parse(&common.name), Some(FieldType::Struct(_))) {
            return Err(Error::invalid(file, &common.name, "a struct name must start with an uppercase letter and hold only letters and digits"));
        }
        parse_range(file, &common.name, "versions", &common.versions)?;
        if let Some(t) = &common.deprecated_versions {
            parse_range(file, &common.name, "deprecatedVersions", t)?;
        }
        if defined.contains_key(&common.name) {
            return Err(Error::invalid(file, &common.name, "struct is defined more than once"));
        }
        check_struct_name(file, &common.name, &common.name)?;
        defined.insert(common.name.clone(), ());
        let s = ctx.lower_struct(&common.name, "", &common.fields, &common.name, &mut structs, &mut defined)?;
        structs.push(s);
    }
    // Every struct-typed field must name a struct of this message.
    for s in &structs {
        for f in &s.fields {
            if let Some(n) = f.ty.struct_name() {
                if !structs.iter().any(|t| t.name == n) {
                    return Err(Error::invalid(file, &format!("{}.{}", s.name, f.name), format!("unknown struct type {n}")));
                }
            }
        }
    }
    compute_reach(&mut structs, valid, flexible);
    structs.iter_mut().for_each(crate::plan::plan_struct);
    Ok(Message {
        file: file.to_string(),
        name: spec.name.clone(),
        kind,
        api_key: spec.api_key,
        valid,
        flexible,
        deprecated,
        latest_unstable,
        listeners: spec.listeners.clone().unwrap_or_default(),
        header_versions,
        structs,
    })
}

/// Kafka's `HeaderVersions.parse`: ranges sorted by their lowest version must start at 0, be
/// contiguous, end open-ended, and none may start above the highest valid version (they cover
/// removed versions too). ApiVersionsResponse keeps header v0 everywhere (KIP-511).
fn lower_header_versions(file: &str, map: &BTreeMap<String, String>, valid: VersionRange, api_versions_response: bool) -> Result<Vec<HeaderVersion>, Error> {
    let err = |msg: String| Error::invalid(file, "headerVersions", msg);
    if map.is_empty() {
        return Err(err("the map is empty".into()));
    }
    let mut entries = Vec::with_capacity(map.len());
    for (key, value) in map {
        let versions = VersionRange::parse(key).filter(|r| !r.is_empty()).ok_or_else(|| err(format!("invalid version range \"{key}\"")))?;
        let header: i16 = value.trim().parse().map_err(|_| err(format!("invalid header version \"{value}\" for range \"{key}\"")))?;
        if header < 0 {
            return Err(err(format!("negative header version \"{value}\" for range \"{key}\"")));
        }
        entries.push(HeaderVersion { versions, header });
    }
    entries.sort_by_key(|e| e.versions.lo);
    if let Some(first) = entries.first().filter(|e| e.versions.lo != 0) {
        return Err(err(format!("the first range starts at version {}, not 0", first.versions.lo)));
    }
    for pair in entries.windows(2) {
        let [prev, next] = pair else { continue };
        if prev.versions.is_open_ended() {
            return Err(err(format!("only the last range may be open-ended ({} is followed by {})", prev.versions, next.versions)));
        }
        if next.versions.lo != prev.versions.hi.saturating_add(1) {
            return Err(err(format!("non-contiguous ranges: {} then {}", prev.versions, next.versions)));
        }
    }
    if let Some(last) = entries.last().filter(|e| !e.versions.is_open_ended()) {
        return Err(err(format!("the last range {} is not open-ended", last.versions)));
    }
    if let Some(e) = entries.iter().find(|e| e.versions.lo > valid.hi) {
        return Err(err(format!("range {} starts above the highest valid version {}", e.versions, valid.hi)));
    }
    if api_versions_response && entries.iter().any(|e| e.header != 0) {
        return Err(err("ApiVersionsResponse must use response header v0 at every version (KIP-511)".into()));
    }
    Ok(entries)
}

/// Kafka's `EntityType`, the known ones (`unknown` is none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entity {
    /// `topicName`: a string.
    TopicName,
    /// `groupId`: a string.
    GroupId,
    /// `transactionalId`: a string.
    TransactionalId,
    /// `producerId`: an int64.
    ProducerId,
    /// `brokerId`: an int32.
    BrokerId,
    /// A topic id: a uuid named `TopicId` (no spec sets an entityType for them), or `topicId`.
    TopicId,
}

impl Entity {
    /// The entity a spec's `entityType` names; `Ok(None)` for `unknown`.
    fn parse(text: &str) -> Result<Option<Entity>, String> {
        Ok(Some(match text {
            "unknown" => return Ok(None),
            "topicName" => Entity::TopicName,
            "groupId" => Entity::GroupId,
            "transactionalId" => Entity::TransactionalId,
            "producerId" => Entity::ProducerId,
            "brokerId" => Entity::BrokerId,
            "topicId" => Entity::TopicId,
            other => return Err(format!("unknown entityType \"{other}\"")),
        }))
    }

    /// The type of the field (or of its array's elements).
    pub fn ty(self) -> FieldType {
        match self {
            Entity::TopicName | Entity::GroupId | Entity::TransactionalId => FieldType::String,
            Entity::ProducerId => FieldType::Fixed(Fixed::Int64),
            Entity::BrokerId => FieldType::Fixed(Fixed::Int32),
            Entity::TopicId => FieldType::Fixed(Fixed::Uuid),
        }
    }
}

/// Kafka's `EntityType`: the known entity types and the type each names (array elements included).
fn check_entity_type(ty: &FieldType, entity: &str) -> Result<Option<Entity>, String> {
    let Some(known) = Entity::parse(entity)? else { return Ok(None) };
    let base = known.ty();
    let base_name = match known {
        Entity::TopicName | Entity::GroupId | Entity::TransactionalId => "string",
        Entity::ProducerId => Fixed::Int64.row().spec,
        Entity::BrokerId => Fixed::Int32.row().spec,
        Entity::TopicId => Fixed::Uuid.row().spec,
    };
    let elem = match ty {
        FieldType::Array(inner) => inner.as_ref(),
        other => other,
    };
    if *elem != base {
        return Err(format!("entityType {entity} needs type {base_name} (or an array of it)"));
    }
    Ok(Some(known))
}

fn check_struct_name(file: &str, path: &str, name: &str) -> Result<(), Error> {
    if RESERVED_STRUCT_NAMES.contains(&name) {
        return Err(Error::invalid(file, path, format!("struct name {name} collides with a Rust name the generated code uses")));
    }
    Ok(())
}

/// Propagates the versions in which each struct is reachable, from the top-level struct down.
fn compute_reach(structs: &mut [Struct], valid: VersionRange, flexible: VersionRange) {
    let index: HashMap<String, usize> = structs.iter().enumerate().map(|(i, s)| (s.name.clone(), i)).collect();
    let mut stack = vec![(0usize, valid)];
    while let Some((i, reach)) = stack.pop() {
        let Some(s) = structs.get_mut(i) else { continue };
        let grown = s.reach.hull(&reach);
        if grown == s.reach {
            continue;
        }
        s.reach = grown;
        s.flexible = flexible.intersect(&grown);
        for f in &s.fields {
            if let Some(child) = f.ty.struct_name().and_then(|n| index.get(n)) {
                let r = grown.intersect(&f.versions);
                if !r.is_empty() {
                    stack.push((*child, r));
                }
            }
        }
    }
    // A common struct no field reaches still gets code that works at every valid version.
    for s in structs.iter_mut().filter(|s| s.reach.is_empty()) {
        s.reach = valid;
        s.flexible = flexible;
    }
}

struct Lowering<'a> {
    file: &'a str,
    max: i16,
    flexible_raw: VersionRange,
    flexible: VersionRange,
    common: HashMap<String, &'a StructSpec>,
}

impl Lowering<'_> {
    fn err(&self, path: &str, msg: impl Into<String>) -> Error {
        Error::invalid(self.file, path, msg)
    }

    fn lower_struct(
        &self,
        name: &str,
        about: &str,
        fields: &[FieldSpec],
        path: &str,
        out: &mut Vec<Struct>,
        defined: &mut HashMap<String, ()>,
    ) -> Result<Struct, Error> {
        let mut lowered = Vec::new();
        let mut tags = BTreeMap::new();
        let mut field_names = BTreeSet::new();
        for f in fields {
            let fpath = if path.is_empty() { f.name.clone() } else { format!("{path}.{}", f.name) };
            if !field_names.insert(f.name.to_ascii_lowercase()) {
                return Err(self.err(&fpath, "duplicate field name"));
            }
            let field = self.lower_field(f, &fpath)?;
            // Kafka's MessageDataGenerator: the message itself is never an element of a keyed collection.
            if field.map_key && path.is_empty() {
                return Err(self.err(&fpath, "mapKey cannot be set on top-level fields"));
            }
            if let Some(tag) = field.tag {
                if tags.insert(tag, f.name.clone()).is_some() {
                    return Err(self.err(&fpath, format!("duplicate tag {tag}")));
                }
            }
            if let Some(sub) = &f.fields {
                let Some(sname) = field.ty.struct_name() else {
                    return Err(self.err(&fpath, format!("type {} cannot have fields", f.ty)));
                };
                if self.common.contains_key(sname) {
                    return Err(self.err(&fpath, format!("struct {sname} is defined both inline and in commonStructs")));
                }
                if defined.insert(sname.to_string(), ()).is_some() || sname == name {
                    return Err(self.err(&fpath, format!("struct {sname} is defined more than once")));
                }
                check_struct_name(self.file, &fpath, sname)?;
                let sub_path = if field.ty.struct_name().is_some() && matches!(field.ty, FieldType::Array(_)) { format!("{fpath}[]") } else { fpath.clone() };
                let s = self.lower_struct(sname, &field.about, sub, &sub_path, out, defined)?;
                out.push(s);
            } else if let Some(sname) = field.ty.struct_name() {
                if !self.common.contains_key(sname) {
                    return Err(self.err(&fpath, format!("struct {sname} has no fields and is not in commonStructs")));
                }
            }
            lowered.push(field);
        }
        // Kafka numbers tags contiguously from 0 within a struct.
        for (expected, (tag, fname)) in tags.iter().enumerate() {
            if *tag as usize != expected {
                let fpath = if path.is_empty() { fname.clone() } else { format!("{path}.{fname}") };
                return Err(self.err(&fpath, format!("tag {tag} leaves a gap: tags must be contiguous from 0")));
            }
        }
        Ok(Struct {
            name: name.to_string(),
            about: about.to_string(),
            fields: lowered,
            reach: VersionRange::NONE,
            flexible: VersionRange::NONE,
            plan: StructPlan::default(),
        })
    }

    fn lower_field(&self, f: &FieldSpec, path: &str) -> Result<Field, Error> {
        // Kafka's FieldSpec accepts `[A-Za-z][A-Za-z0-9]*`; the name becomes a Rust identifier.
        let mut chars = f.name.chars();
        if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) || !chars.all(|c| c.is_ascii_alphanumeric()) {
            let msg = format!("invalid field name \"{}\": use letters and digits, starting with a letter", f.name);
            return Err(self.err(path, msg));
        }
        let ty = FieldType::parse(&f.ty).ok_or_else(|| self.err(path, format!("invalid type \"{}\"", f.ty)))?;
        let tagged_raw = match &f.tagged_versions {
            Some(t) => parse_range(self.file, path, "taggedVersions", t)?,
            None => VersionRange::NONE,
        };
        // Like Kafka's FieldSpec, a tagged-only field may leave out `versions`: they are its tagged versions.
        let versions_raw = match &f.versions {
            Some(t) => parse_range(self.file, path, "versions", t)?,
            None if !tagged_raw.is_empty() => tagged_raw,
            None => return Err(self.err(path, "versions must be given")),
        };
        let versions = versions_raw.clamp_hi(self.max);
        let nullable_raw = match &f.nullable_versions {
            Some(t) => parse_range(self.file, path, "nullableVersions", t)?,
            None => VersionRange::NONE,
        };
        if !nullable_raw.is_empty() && !ty.can_be_nullable() {
            return Err(self.err(path, format!("type {} cannot be nullable", f.ty)));
        }
        let nullable = nullable_raw.clamp_hi(self.max).intersect(&versions);

        let tag = match &f.tag {
            None => None,
            Some(v) => match f.tag_number() {
                Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => Some(n as u32),
                _ => return Err(self.err(path, format!("invalid tag {v}"))),
            },
        };
        match (tag, tagged_raw.is_empty()) {
            (Some(t), true) => return Err(self.err(path, format!("tag {t} is given but taggedVersions is not"))),
            (None, false) => return Err(self.err(path, "taggedVersions is given but tag is not")),
            _ => {}
        }
        if !tagged_raw.is_empty() {
            // Kafka's FieldSpec: a tagged field is absent, not keyed, when its struct lacks it.
            if f.map_key.unwrap_or(false) {
                return Err(self.err(path, "a tagged field cannot be a mapKey"));
            }
            // Kafka's FieldSpec: nullability may not change across the tagged versions, since the
            // field's default (what "absent" decodes to) must be valid in every one of them.
            let nullable_tagged = nullable_raw.intersect(&tagged_raw);
            if !nullable_tagged.is_empty() && nullable_tagged != tagged_raw {
                let msg = format!(
                    "nullableVersions {nullable_raw} and taggedVersions {tagged_raw}: \
                     either every tagged version is nullable or none is"
                );
                return Err(self.err(path, msg));
            }
            if !tagged_raw.is_open_ended() {
                return Err(self.err(path, format!("taggedVersions {tagged_raw} must be open-ended (N+)")));
            }
            if !versions_raw.contains_range(&tagged_raw) {
                return Err(self.err(path, format!("taggedVersions {tagged_raw} are not inside versions {versions_raw}")));
            }
            if !self.flexible_raw.contains_range(&tagged_raw) {
                return Err(self.err(path, format!("taggedVersions {tagged_raw} are not inside the flexible versions {}", self.flexible_raw)));
            }
        }
        let tagged = tagged_raw.clamp_hi(self.max).intersect(&versions);
        let regular = versions.subtract(&tagged);

        let compact = match &f.flexible_versions {
            None => self.flexible,
            Some(t) => {
                if !matches!(ty, FieldType::String | FieldType::Bytes) {
                    return Err(self.err(path, "only string and bytes fields can override flexibleVersions"));
                }
                let r = parse_range(self.file, path, "flexibleVersions", t)?;
                if !r.is_empty() && !r.is_open_ended() {
                    return Err(self.err(path, "flexibleVersions must be open-ended (N+) or none"));
                }
                r.clamp_hi(self.max)
            }
        };
        if f.zero_copy.unwrap_or(false) && ty != FieldType::Bytes {
            return Err(self.err(path, "only bytes fields can be zeroCopy"));
        }
        if f.map_key.unwrap_or(false) && matches!(ty, FieldType::Array(_) | FieldType::Struct(_)) {
            return Err(self.err(path, "a mapKey cannot be an array or struct"));
        }
        let entity = match &f.entity_type {
            Some(e) => check_entity_type(&ty, e).map_err(|m| self.err(path, m))?,
            // Kafka's specs give topic ids no entityType: a uuid named `TopicId` is one.
            None if ty == FieldType::Fixed(Fixed::Uuid) && f.name == "TopicId" => Some(Entity::TopicId),
            None => None,
        };
        let default = self.lower_default(f, &ty, versions_raw, nullable_raw, path)?;
        Ok(Field {
            name: f.name.clone(),
            about: f.about.clone().unwrap_or_default(),
            ty,
            versions,
            regular,
            tagged,
            tag,
            nullable,
            compact,
            ignorable: f.ignorable.unwrap_or(false),
            default,
            map_key: f.map_key.unwrap_or(false),
            entity_type: f.entity_type.clone(),
            entity,
            plan: FieldPlan::default(),
        })
    }

    fn lower_default(&self, f: &FieldSpec, ty: &FieldType, versions: VersionRange, nullable: VersionRange, path: &str) -> Result<DefaultValue, Error> {
        let text = match &f.default {
            None => return Ok(DefaultValue::Natural),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(serde_json::Value::Bool(b)) => b.to_string(),
            Some(other) => return Err(self.err(path, format!("invalid default {other}"))),
        };
        let bad = || self.err(path, format!("invalid default \"{text}\" for type {}", f.ty));
        if text == "null" {
            if !ty.can_be_nullable() {
                return Err(bad());
            }
            if !nullable.contains_range(&versions) {
                return Err(self.err(path, "null cannot be the default: not every version of the field is nullable"));
            }
            return Ok(DefaultValue::Null);
        }
        let int = |lo: i64, hi: i64| -> Result<DefaultValue, Error> {
            let t = text.trim();
            let (neg, body) = match t.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, t),
            };
            let parsed = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
                Some(hex) => i64::from_str_radix(hex, 16).ok(),
                None => body.parse::<i64>().ok(),
            };
            match parsed.map(|v| if neg { -v } else { v }) {
                Some(v) if (lo..=hi).contains(&v) => Ok(DefaultValue::Int(v)),
                _ => Err(bad()),
            }
        };
        match ty {
            FieldType::Fixed(t) => match t.row().literal {
                // Kafka's FieldSpec compares bool defaults ignoring case.
                DefaultKind::Bool if text.eq_ignore_ascii_case("true") => Ok(DefaultValue::Bool(true)),
                DefaultKind::Bool if text.eq_ignore_ascii_case("false") => Ok(DefaultValue::Bool(false)),
                DefaultKind::Bool => Err(bad()),
                DefaultKind::Int { lo, hi } => int(lo, hi),
                DefaultKind::Float => text.trim().parse::<f64>().map(DefaultValue::Float).map_err(|_| bad()),
                DefaultKind::Uuid if text.is_empty() => Ok(DefaultValue::Natural),
                DefaultKind::Uuid => Err(bad()),
            },
            FieldType::String if text.is_empty() => Ok(DefaultValue::Natural),
            FieldType::String => Ok(DefaultValue::Str(text)),
            FieldType::Bytes | FieldType::Records | FieldType::Struct(_) if text.is_empty() => Ok(DefaultValue::Natural),
            FieldType::Array(_) if text.is_empty() || text == "[]" => Ok(DefaultValue::Natural),
            FieldType::Bytes | FieldType::Records | FieldType::Struct(_) | FieldType::Array(_) => Err(bad()),
        }
    }
}
