//! Which api versions the brokers advertise: those a chosen Kafka release's brokers advertise,
//! read from the releases kwire was built from (every api a broker listener takes, its valid
//! versions without an unstable newest one, as a broker with `unstable.api.versions.enable`
//! off advertises them).

use std::fmt;
use std::str::FromStr;

use kwire::{ApiKey, VersionRange};

/// A Kafka release whose brokers the fake cluster imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Release {
    /// Kafka 3.9, the last release with ZooKeeper and every old version.
    V3_9,
    /// Kafka 4.4.
    V4_4,
}

impl Release {
    /// Every release, oldest first.
    pub const ALL: [Release; 2] = [Release::V3_9, Release::V4_4];

    /// The spec set's name prefix in kwire's build (`kafka-3.9`).
    fn spec_prefix(self) -> &'static str {
        match self {
            Release::V3_9 => "kafka-3.9",
            Release::V4_4 => "kafka-4.4",
        }
    }

    /// The versions of `api` its brokers advertise, `None` for an api they do not serve (one
    /// for controllers only, or the release lacks it).
    pub fn versions(self, api: ApiKey) -> Option<VersionRange> {
        let info = api.info();
        // A KRaft broker's apis (the merged build keeps the newest release's listeners).
        if !info.listeners.contains(&"broker") {
            return None;
        }
        let release = info.releases.iter().find(|r| r.release.starts_with(self.spec_prefix()))?;
        let mut range = release.valid;
        if release.latest_version_unstable && !range.is_empty() {
            range = VersionRange::new(range.lo, range.hi - 1);
        }
        (!range.is_empty()).then_some(range)
    }

    /// Whether the build has this release's specs.
    pub fn in_build(self) -> bool {
        ApiKey::Produce.info().releases.iter().any(|r| r.release.starts_with(self.spec_prefix()))
    }

    /// The feature levels its brokers finalize by default: `metadata.version` at the release's
    /// (3.9-IV0 is 21, 4.4-IV2 33, `MetadataVersion.LATEST_PRODUCTION`), and on 4.x
    /// `transaction.version` 2 (transactions V2, KIP-890) and `group.version` 1 (KIP-848).
    pub fn features(self) -> &'static [(&'static str, i16)] {
        match self {
            Release::V3_9 => &[("metadata.version", 21)],
            Release::V4_4 => &[("metadata.version", 33), ("transaction.version", 2), ("group.version", 1)],
        }
    }

    /// The lowest level of a feature its brokers support: `metadata.version` from 3.0-IV1 (1)
    /// on 3.9 and from 3.3-IV3 (7, `MetadataVersion.MINIMUM_VERSION`) on 4.x; 0 for the others.
    pub fn min_feature_level(self, feature: &str) -> i16 {
        match (self, feature) {
            (Release::V3_9, "metadata.version") => 1,
            (Release::V4_4, "metadata.version") => 7,
            _ => 0,
        }
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Release::V3_9 => "3.9",
            Release::V4_4 => "4.4",
        })
    }
}

impl FromStr for Release {
    type Err = String;

    fn from_str(s: &str) -> Result<Release, String> {
        let release = match s.trim_start_matches('v') {
            "3.9" | "3.9.0" | "3.9.1" | "3.9.2" => Release::V3_9,
            "4.4" | "4.4.0" => Release::V4_4,
            other => return Err(format!("unknown release {other} (this build imitates {})", Release::ALL.map(|r| r.to_string()).join(", "))),
        };
        if !release.in_build() {
            return Err(format!("this build of kwire has no Kafka {release} specs"));
        }
        Ok(release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brokers_advertise_their_release_and_no_controller_api() {
        assert_eq!(Release::V4_4.versions(ApiKey::Produce).map(|r| r.lo), Some(3), "4.x removed Produce v0-2");
        assert_eq!(Release::V3_9.versions(ApiKey::Produce).map(|r| r.lo), Some(0));
        assert_eq!(Release::V4_4.versions(ApiKey::Vote), None, "controllers only");
        assert!(Release::V4_4.versions(ApiKey::ConsumerGroupHeartbeat).is_some());
        assert_eq!("4.4".parse(), Ok(Release::V4_4));
        assert!("2.1".parse::<Release>().is_err());
    }
}
