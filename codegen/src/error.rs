//! Generator errors: every problem names the spec file and, where it has one, the field path.

use std::fmt;
use std::path::PathBuf;

/// Why a spec set could not be turned into code.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// No spec directory was found or given.
    NoSpecs(String),
    /// A file could not be read or written.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A spec file is not valid JSON, or has a key or value of the wrong shape.
    Json {
        /// The spec file name.
        file: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// A spec breaks one of the invariants Kafka's generator enforces.
    Invalid {
        /// The spec file name.
        file: String,
        /// The field path inside it (`Topics[].Partitions[].Tag 3`); empty for the message.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A [`Config`](crate::Config) setting is not usable (a runtime path or derive that is no
    /// Rust path, an empty feature name).
    Config(String),
    /// Generated tokens did not parse as Rust (a generator bug, reported instead of panicking).
    Emit {
        /// The output file.
        file: String,
        /// The parser's message.
        message: String,
    },
}

impl Error {
    pub(crate) fn invalid(file: &str, path: &str, message: impl Into<String>) -> Self {
        Error::Invalid { file: file.to_string(), path: path.to_string(), message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoSpecs(msg) => f.write_str(msg),
            Error::Config(msg) => write!(f, "config: {msg}"),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Json { file, source } => write!(f, "{file}: {source}"),
            Error::Invalid { file, path, message } if path.is_empty() => write!(f, "{file}: {message}"),
            Error::Invalid { file, path, message } => write!(f, "{file}: {path}: {message}"),
            Error::Emit { file, message } => write!(f, "{file}: generated code does not parse: {message}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Json { source, .. } => Some(source),
            _ => None,
        }
    }
}
