//! Generic access to generated messages without knowing their shape: the fields that name
//! Kafka entities (topics by name and by id, groups, transactional ids, brokers, producers), the
//! broker endpoints (host and port) a message carries, the error-code fields of responses, and
//! lookups in `mapKey` arrays.

use std::collections::HashMap;
use std::hash::Hash;

use bytestring::ByteString;

use crate::error_code::ErrorCode;
use crate::uuid::Uuid;

/// What a field names, from the spec's `entityType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntityType {
    /// `topicName`: a topic name.
    TopicName,
    /// `groupId`: a consumer or share group id.
    GroupId,
    /// `transactionalId`: a producer's transactional id.
    TransactionalId,
    /// `producerId`: a producer id.
    ProducerId,
    /// `brokerId`: a broker (node) id.
    BrokerId,
    /// A topic id: a `uuid` field named `TopicId` (the specs give these no `entityType`, so the
    /// generator goes by name; an `entityType` of `topicId` counts too).
    TopicId,
}

/// A read-only view of one entity field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntityValue<'a> {
    /// A string entity (topic, group, transactional id). Null strings are not visited.
    Str(&'a str),
    /// A 32-bit id (broker).
    Int32(i32),
    /// A 64-bit id (producer).
    Int64(i64),
    /// A UUID (topic id). The zero UUID (unset) is visited too.
    Uuid(Uuid),
}

/// A mutable reference to one entity field, for rewriting (renaming topics, mapping ids).
#[derive(Debug)]
#[non_exhaustive]
pub enum EntityMut<'a> {
    /// A non-nullable string.
    Str(&'a mut ByteString),
    /// A string that may be null.
    NullableStr(&'a mut Option<ByteString>),
    /// A 32-bit id.
    Int32(&'a mut i32),
    /// A 64-bit id.
    Int64(&'a mut i64),
    /// A UUID (topic id).
    Uuid(&'a mut Uuid),
}

/// One visited field: its entity type and spec name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityField {
    /// What the field names.
    pub kind: EntityType,
    /// The field's spec name (`Name`, `GroupId`).
    pub field: &'static str,
}

/// Implemented by every generated struct: walks nested structs and arrays.
pub trait Visit {
    /// Calls `f` for every entity field (array elements one by one), in wire order.
    fn visit_entities(&self, f: &mut dyn FnMut(EntityField, EntityValue<'_>));

    /// Calls `f` with a mutable reference to every entity field, in wire order.
    fn visit_entities_mut(&mut self, f: &mut dyn FnMut(EntityField, EntityMut<'_>));

    /// Calls `f` for every broker endpoint, in wire order: each struct holding a string `Host`
    /// and an int32 or uint16 `Port` (or `<P>Host` and `<P>Port`, as UpdateMetadata v0's
    /// `V0Host`/`V0Port`) (Metadata brokers, coordinators, the `NodeEndpoints` of
    /// Produce and Fetch responses, quorum and registration listeners...). Fields are visited
    /// whatever the version, so a struct absent from the message's version shows its defaults
    /// (empty host, port 0), as FindCoordinator's top-level endpoint does from v4.
    fn visit_endpoints(&self, f: &mut dyn FnMut(Endpoint<'_>));

    /// Calls `f` with mutable references to every broker endpoint, in wire order (for proxies
    /// that advertise themselves in place of the brokers).
    fn visit_endpoints_mut(&mut self, f: &mut dyn FnMut(EndpointMut<'_>));

    /// Calls `f` for every error-code field (`ErrorCode`, `...ErrorCode`), in wire order.
    fn visit_error_codes(&self, f: &mut dyn FnMut(&'static str, ErrorCode));

    /// The error codes of every error-code field that is not `NONE`.
    fn errors(&self) -> Vec<(&'static str, ErrorCode)> {
        let mut out = Vec::new();
        self.visit_error_codes(&mut |field, code| {
            if !code.is_ok() {
                out.push((field, code));
            }
        });
        out
    }
}

/// A read-only view of one broker endpoint: a struct with `Host` and `Port` fields, with the
/// sibling fields that say whose and which it is when the struct has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint<'a> {
    /// The generated struct's name (`MetadataResponseBroker`, `NodeEndpoint`, `Coordinator`);
    /// the message's own name for a top-level endpoint (`FindCoordinatorResponse` up to v3).
    pub struct_name: &'static str,
    /// The node id beside the address (`NodeId`, `BrokerId`, `LeaderId` or a field the spec
    /// marks `brokerId`), if the struct has one.
    pub node_id: Option<i32>,
    /// `Host` (or `<P>Host`).
    pub host: &'a str,
    /// `Port` (int32 in client apis, uint16 in the KRaft ones).
    pub port: i32,
    /// `Rack`, if the struct has one and it is not null.
    pub rack: Option<&'a str>,
    /// The listener name (`Name` or `Listener`) of listener structs (KRaft and UpdateMetadata).
    pub listener: Option<&'a str>,
}

/// A mutable reference to a port field, whichever width the spec gives it.
#[derive(Debug)]
pub enum PortMut<'a> {
    /// An int32 port (Metadata, FindCoordinator, DescribeCluster, NodeEndpoints).
    Int32(&'a mut i32),
    /// A uint16 port (KRaft listeners and endpoints).
    Uint16(&'a mut u16),
}

impl PortMut<'_> {
    /// The port's value.
    pub fn get(&self) -> i32 {
        match self {
            PortMut::Int32(p) => **p,
            PortMut::Uint16(p) => i32::from(**p),
        }
    }

    /// Sets the port; every TCP port fits either width.
    pub fn set(&mut self, port: u16) {
        match self {
            PortMut::Int32(p) => **p = i32::from(port),
            PortMut::Uint16(p) => **p = port,
        }
    }
}

/// Mutable references to one broker endpoint's fields (see [`Endpoint`]).
#[derive(Debug)]
pub struct EndpointMut<'a> {
    /// The generated struct's name, as in [`Endpoint::struct_name`].
    pub struct_name: &'static str,
    /// The node id field, if the struct has one.
    pub node_id: Option<&'a mut i32>,
    /// `Host`.
    pub host: &'a mut ByteString,
    /// `Port`.
    pub port: PortMut<'a>,
    /// `Rack`, if the struct has a nullable one (as every spec's is).
    pub rack: Option<&'a mut Option<ByteString>>,
    /// The listener name (`Name` or `Listener`), read-only.
    pub listener: Option<&'a str>,
}

impl EndpointMut<'_> {
    /// A read-only copy of the current values.
    pub fn get(&self) -> Endpoint<'_> {
        Endpoint {
            struct_name: self.struct_name,
            node_id: self.node_id.as_deref().copied(),
            host: self.host,
            port: self.port.get(),
            rack: self.rack.as_deref().and_then(|r| r.as_deref()),
            listener: self.listener,
        }
    }
}

/// A struct that is an element of a `mapKey` array: its key is the tuple of its `mapKey`
/// fields. Arrays stay ordered `Vec`s (wire order and duplicates kept); [`KeyedSlice`] adds
/// lookups on top.
pub trait Keyed {
    /// The key, borrowed from the element (`&str`, `i32`, or a tuple of them).
    type Key<'a>: Eq + Hash + Copy
    where
        Self: 'a;

    /// This element's key.
    fn key(&self) -> Self::Key<'_>;
}

/// Lookups by key on a slice of [`Keyed`] elements.
pub trait KeyedSlice<T: Keyed> {
    /// The first element with `key`.
    fn find<'a>(&'a self, key: T::Key<'a>) -> Option<&'a T>;

    /// The position of the first element with `key` (index the slice to change it).
    fn position<'a>(&'a self, key: T::Key<'a>) -> Option<usize>;

    /// Every element with `key`, in order.
    fn find_all<'a>(&'a self, key: T::Key<'a>) -> impl Iterator<Item = &'a T>
    where
        T: 'a;

    /// An index from key to the position of its first element, for many lookups.
    fn index_by_key(&self) -> HashMap<T::Key<'_>, usize>;
}

impl<T: Keyed> KeyedSlice<T> for [T] {
    fn find<'a>(&'a self, key: T::Key<'a>) -> Option<&'a T> {
        self.iter().find(|e| e.key() == key)
    }

    fn position<'a>(&'a self, key: T::Key<'a>) -> Option<usize> {
        self.iter().position(|e| e.key() == key)
    }

    fn find_all<'a>(&'a self, key: T::Key<'a>) -> impl Iterator<Item = &'a T>
    where
        T: 'a,
    {
        self.iter().filter(move |e| e.key() == key)
    }

    fn index_by_key(&self) -> HashMap<T::Key<'_>, usize> {
        let mut map = HashMap::with_capacity(self.len());
        for (i, e) in self.iter().enumerate() {
            map.entry(e.key()).or_insert(i);
        }
        map
    }
}
