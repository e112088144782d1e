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
    /// What each release the build was generated from defines of this api, oldest first (one
    /// entry for a single spec set; `kafka-3.9.0` then `kafka-4.4.0` by default).
    pub releases: &'static [ReleaseVersions],
}

/// The versions of an api one release's spec set defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReleaseVersions {
    /// The release: the spec directory's or jar's name (`kafka-4.4.0`).
    pub release: &'static str,
    /// Its valid versions; empty where the release removed (or does not have) the api.
    pub valid: VersionRange,
    /// Whether its newest version is unstable there.
    pub latest_version_unstable: bool,
}

/// Where one version of an api comes from, in a build merged from several releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionOrigin {
    /// The newest release that defines the version: the build uses its definition.
    pub release: &'static str,
    /// Whether the newest release of the build still has it: `false` for a version that a
    /// newer release removed (Produce v0-v2 in Kafka 4), which a 4.x broker refuses.
    pub in_newest_release: bool,
    /// Whether the defining release marks it unstable (its newest version, still in development).
    pub unstable: bool,
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

    /// Where `version` comes from: which release defines it, whether the newest release still
    /// has it, whether it is unstable. `None` for a version the build does not have.
    pub fn origin(&self, version: i16) -> Option<VersionOrigin> {
        if !self.valid.contains(version) {
            return None;
        }
        let defining = self.releases.iter().rev().find(|r| r.valid.contains(version))?;
        let newest = self.releases.last()?;
        Some(VersionOrigin {
            release: defining.release,
            in_newest_release: newest.valid.contains(version),
            unstable: defining.latest_version_unstable && defining.valid.hi == version,
        })
    }
}
