//! What the proxy changes in a frame: broker endpoints and ApiVersions in responses, and with
//! a tenant, topic names and ids both ways. Each returns the new payload (header bytes as they
//! came, then the re-encoded body), or `None` when nothing changed, so the frame passes on as
//! the bytes that came.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use kwire::codec::{decode_response_body, RequestFrame};
use kwire::messages::ResponseHeader;
use kwire::negotiate::{mediate, NegotiateOptions};
use kwire::{ApiKey, Bytes, Decode, EntityMut, EntityType, RequestKind, ResponseKind, Uuid, Visit};

use crate::{ProxyError, Shared};

/// Kafka's `ConfigResource.Type.TOPIC`. Config resources name a topic by this type, not by an
/// `entityType`, so the entity walker does not see them; they are renamed here.
const TOPIC_RESOURCE: i8 = 2;

/// Calls `$f` on the name of every topic config resource in the listed variants of `$body`.
macro_rules! topic_resources {
    ($body:expr, $f:expr, $($kind:path => $list:ident),* $(,)?) => {
        match $body {
            $($kind(m) => {
                for r in m.$list.iter_mut().filter(|r| r.resource_type == TOPIC_RESOURCE) {
                    $f(&mut r.resource_name);
                }
            })*
            _ => {}
        }
    };
}

/// A tenant: its topic prefix and the ids of its topics, as the broker gave them.
pub(crate) struct Tenant {
    prefix: String,
    ids: Mutex<HashSet<Uuid>>,
}

impl Tenant {
    /// A tenant whose topics are named `prefix` + the name its clients use.
    pub fn new(prefix: String) -> Tenant {
        Tenant { prefix, ids: Mutex::new(HashSet::new()) }
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<Uuid>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn owns(&self, name: Option<&str>, id: Uuid) -> bool {
        match name {
            Some(n) => n.starts_with(&self.prefix),
            None => self.ids().contains(&id),
        }
    }

    /// Remembers the ids of the tenant's topics from the responses that pair names with ids,
    /// and drops other tenants' topics from the listings.
    fn learn_and_filter(&self, body: &mut ResponseKind) -> bool {
        // Listings: learn the tenant's ids, then keep only its topics (by name, or by id where
        // the broker left the name null).
        macro_rules! listing {
            ($topics:expr) => {{
                for t in $topics.iter() {
                    self.learn(t.name.as_deref(), t.topic_id);
                }
                let before = $topics.len();
                $topics.retain(|t| self.owns(t.name.as_deref(), t.topic_id));
                before != $topics.len()
            }};
        }
        match body {
            ResponseKind::Metadata(m) => listing!(m.topics),
            ResponseKind::DescribeTopicPartitions(m) => {
                let filtered = listing!(m.topics);
                let foreign_cursor = m.next_cursor.as_ref().is_some_and(|c| !c.topic_name.starts_with(&self.prefix));
                if foreign_cursor {
                    m.next_cursor = None;
                }
                foreign_cursor || filtered
            }
            ResponseKind::CreateTopics(m) => {
                for t in &m.topics {
                    self.learn(Some(&t.name), t.topic_id);
                }
                false
            }
            _ => false,
        }
    }

    fn learn(&self, name: Option<&str>, id: Uuid) {
        if name.is_some_and(|n| n.starts_with(&self.prefix)) && id != Uuid::ZERO {
            self.ids().insert(id);
        }
    }
}

/// The tenant's view of a request: topic names prefixed, ids of other topics zeroed.
pub(crate) fn request(tenant: &Tenant, request: &RequestFrame, payload: &Bytes) -> Result<Option<Vec<u8>>, ProxyError> {
    let Ok(api) = request.api_key() else { return Ok(None) };
    let version = request.version();
    let mut body =
        RequestKind::decode(&mut request.body.clone(), api.key(), version).map_err(|source| ProxyError::Decode { what: "request", api, version, source })?;
    let mut changed = false;
    let ids = tenant.ids();
    body.visit_entities_mut(&mut |field, value| match (field.kind, value) {
        (EntityType::TopicName, EntityMut::Str(name)) | (EntityType::TopicName, EntityMut::NullableStr(Some(name))) => {
            *name = format!("{}{}", tenant.prefix, &**name).into();
            changed = true;
        }
        // Another tenant's topic (or one the proxy never saw listed): unknown to this one.
        (EntityType::TopicId, EntityMut::Uuid(id)) if *id != Uuid::ZERO && !ids.contains(id) => {
            *id = Uuid::ZERO;
            changed = true;
        }
        _ => {}
    });
    drop(ids);
    topic_resources!(&mut body, |name: &mut kwire::ByteString| {
        *name = format!("{}{}", tenant.prefix, &**name).into();
        changed = true;
    },
        RequestKind::DescribeConfigs => resources,
        RequestKind::AlterConfigs => resources,
        RequestKind::IncrementalAlterConfigs => resources,
    );
    if !changed {
        return Ok(None);
    }
    let header = header_bytes(payload, request.body.len())?;
    reencode(header, |out| body.encode(out, version))
}

/// The client's view of a response: endpoints pointing at the proxy, ApiVersions mediated, and
/// with a tenant, only its topics, unprefixed.
pub(crate) fn response(shared: &Arc<Shared>, api: ApiKey, version: i16, payload: &Bytes) -> Result<Option<Vec<u8>>, ProxyError> {
    let mut rest = payload.clone();
    ResponseHeader::decode(&mut rest, api.response_header_version(version)).map_err(|source| ProxyError::Decode {
        what: "response header",
        api,
        version,
        source,
    })?;
    let (version, mut body) = decode_response_body(api, version, &rest, |v, b| ResponseKind::decode(b, api.key(), v))
        .map_err(|(version, source)| ProxyError::Decode { what: "response", api, version, source })?;
    let mut changed = false;
    if let ResponseKind::ApiVersions(r) = &mut body {
        let mediated = mediate(r, NegotiateOptions::default());
        if mediated != *r {
            *r = mediated;
            changed = true;
        }
    }
    let advertise = shared.config.advertised();
    let mut failed = None;
    body.visit_endpoints_mut(&mut |mut e| {
        // Empty host and port 0: a struct the version does not have (see `visit_endpoints`).
        let Some(port) = u16::try_from(e.port.get()).ok().filter(|p| *p != 0) else { return };
        if e.host.is_empty() {
            return;
        }
        match shared.route(e.host, port) {
            Ok(local) if (&**e.host, port) != (advertise, local) => {
                *e.host = advertise.into();
                e.port.set(local);
                changed = true;
            }
            Ok(_) => {}
            Err(err) => failed = Some(err),
        }
    });
    if let Some(err) = failed {
        return Err(err);
    }
    if let Some(tenant) = &shared.tenant {
        changed |= tenant.learn_and_filter(&mut body);
        let mut strip = |name: &mut kwire::ByteString| {
            if let Some(ours) = name.strip_prefix(tenant.prefix.as_str()) {
                *name = ours.to_string().into();
                changed = true;
            }
        };
        body.visit_entities_mut(&mut |field, value| match (field.kind, value) {
            (EntityType::TopicName, EntityMut::Str(name)) | (EntityType::TopicName, EntityMut::NullableStr(Some(name))) => strip(name),
            _ => {}
        });
        topic_resources!(&mut body, strip,
            ResponseKind::DescribeConfigs => results,
            ResponseKind::AlterConfigs => responses,
            ResponseKind::IncrementalAlterConfigs => responses,
        );
    }
    if !changed {
        return Ok(None);
    }
    let header = header_bytes(payload, rest.len())?;
    reencode(header, |out| body.encode(out, version))
}

/// The header's bytes: the payload without its last `body_len` bytes.
fn header_bytes(payload: &Bytes, body_len: usize) -> Result<&[u8], ProxyError> {
    payload.get(..payload.len().saturating_sub(body_len)).ok_or(ProxyError::ShortResponse(payload.len()))
}

fn reencode(header: &[u8], encode: impl FnOnce(&mut Vec<u8>) -> Result<(), kwire::EncodeError>) -> Result<Option<Vec<u8>>, ProxyError> {
    let mut out = Vec::with_capacity(header.len() + 256);
    out.extend_from_slice(header);
    encode(&mut out).map_err(ProxyError::Encode)?;
    Ok(Some(out))
}
