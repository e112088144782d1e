//! Static facts about an api key, as generated from its spec.

use crate::version::VersionRange;

/// What the spec of one api key says: its versions, flexibility, deprecation and listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiInfo {
    /// The api key.
    pub key: i16,
    /// The api name (`Produce`, `Metadata`).
    pub name: &'static str,
    /// Every valid version, the unstable newest one included.
    pub valid: VersionRange,
    /// Flexible versions.
    pub flexible: VersionRange,
    /// Deprecated versions.
    pub deprecated: VersionRange,
    /// Whether the newest valid version is unstable (still under development in Kafka).
    pub latest_version_unstable: bool,
    /// The listeners that accept this api (`broker`, `controller`, `zkBroker`).
    pub listeners: &'static [&'static str],
}

impl ApiInfo {
    /// The versions to advertise and use by default: the valid versions without an unstable
    /// newest one.
    pub const fn stable_versions(&self) -> VersionRange {
        if self.latest_version_unstable && !self.valid.is_empty() {
            VersionRange::new(self.valid.lo, self.valid.hi - 1)
        } else {
            self.valid
        }
    }

    /// The versions to advertise, with the unstable newest one only when `include_unstable`.
    pub const fn versions(&self, include_unstable: bool) -> VersionRange {
        if include_unstable {
            self.valid
        } else {
            self.stable_versions()
        }
    }

    /// True when the api has no valid version left (`"validVersions": "none"`).
    pub const fn is_removed(&self) -> bool {
        self.valid.is_empty()
    }
}
