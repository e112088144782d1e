//! Generic access to generated messages without knowing their shape: the fields that name
//! Kafka entities (topics, groups, transactional ids, brokers, producers), the error-code
//! fields of responses, and lookups in `mapKey` arrays.

use std::collections::HashMap;
use std::hash::Hash;

use bytestring::ByteString;

use crate::error_code::ErrorCode;

/// What a field names, from the spec's `entityType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
}

/// A read-only view of one entity field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityValue<'a> {
    /// A string entity (topic, group, transactional id). Null strings are not visited.
    Str(&'a str),
    /// A 32-bit id (broker).
    Int32(i32),
    /// A 64-bit id (producer).
    Int64(i64),
}

/// A mutable reference to one entity field, for rewriting (renaming topics, mapping ids).
#[derive(Debug)]
pub enum EntityMut<'a> {
    /// A non-nullable string.
    Str(&'a mut ByteString),
    /// A string that may be null.
    NullableStr(&'a mut Option<ByteString>),
    /// A 32-bit id.
    Int32(&'a mut i32),
    /// A 64-bit id.
    Int64(&'a mut i64),
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
