//! The tool's errors and their exit codes.
//!
//! Errors stay typed until they are printed: a decode failure keeps its [`DecodeError`] (message,
//! field path, offset), a bad capture its `pcap-file` error, so callers (and tests) can match on
//! what failed; the text is made once, by `Display`.

use std::fmt;
use std::path::PathBuf;

use kwire::runtime::json::serde_json;
use kwire::{DecodeError, EncodeError, JsonError};

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// The arguments do not make sense together (exit 2).
    Usage(String),
    /// The input is bad: malformed hex or JSON, bytes that do not decode (exit 1).
    Input(InputError),
    /// Some lines of a batch failed; each was answered with its error (exit 1).
    BatchFailures(usize),
    /// Reading or writing failed (exit 1).
    Io(std::io::Error),
    /// Stdout was closed (`| head`): stop quietly.
    BrokenPipe,
    /// A connection setting is unknown or unusable (exit 2): names the setting.
    Settings(SettingsError),
    /// Kafka refused or failed an operation (exit 1), or the cluster could not be reached or
    /// authenticated to (exit 3).
    Kafka {
        /// What was being done (`producing to orders`).
        action: String,
        /// The client's error.
        source: kwire_client::Error,
    },
    /// Some of the work was not done (exit 1): records not acknowledged, a `check` step that
    /// failed, a group that must be inactive.
    Incomplete(String),
    /// `kwire tap` could not start its proxy (exit 1): a port taken, an address not local.
    Proxy(kwire_proxy::ProxyError),
}

/// A connection setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// Where it came from: `-X`, `client.properties:3`.
    pub origin: String,
    /// The setting's name (empty when the line has none).
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.origin, self.problem)
        } else {
            write!(f, "{}: {}: {}", self.origin, self.key, self.problem)
        }
    }
}

/// What is wrong with the input.
#[derive(Debug)]
pub enum InputError {
    /// Hex that does not parse.
    Hex(hex::FromHexError),
    /// Text that is not JSON (stdin or a batch line).
    Json(serde_json::Error),
    /// Stdin could not be read.
    Stdin(std::io::Error),
    /// A batch line could not be read.
    Line {
        /// 1-based.
        number: usize,
        /// Why.
        source: std::io::Error,
    },
    /// A required field of a batch line is missing or of the wrong type.
    Field {
        /// The field (`apiKey`).
        name: String,
        /// What it must be (`a valid integer`).
        expected: &'static str,
    },
    /// A required field of a batch line is missing.
    Missing(&'static str),
    /// A batch line's `kind` is neither `request` nor `response`.
    Kind(String),
    /// An api key this build does not know, by number.
    UnknownApiKey(i16),
    /// An api key this build does not know, by name.
    UnknownApiKeyName(String),
    /// Bytes that do not decode.
    Decode(DecodeError),
    /// A message that cannot be encoded at the version.
    Encode(EncodeError),
    /// JSON that is not the message's JSON form (or a message without one at the version).
    JsonForm(JsonError),
    /// A body with bytes after it.
    TrailingBytes {
        /// How many.
        left: usize,
        /// Where they start.
        offset: usize,
    },
    /// A request payload shorter than a request header's fixed part.
    ShortRequest(usize),
    /// A frame shorter than its 4-byte size.
    FrameTooShort(usize),
    /// A frame whose size prefix disagrees with its bytes.
    FrameSize {
        /// The size prefix.
        size: i32,
        /// Bytes after the prefix.
        payload: usize,
    },
    /// A frame's body failed, after its header.
    Body {
        /// Header bytes before the body.
        header_len: usize,
        /// What failed.
        source: Box<InputError>,
    },
    /// One batch of a records blob failed.
    Batch {
        /// 0-based.
        index: usize,
        /// What failed.
        source: DecodeError,
    },
    /// A capture file could not be opened or read.
    Capture {
        /// The file.
        path: PathBuf,
        /// What failed.
        what: CaptureError,
    },
}

/// What is wrong with a capture file.
#[derive(Debug)]
pub enum CaptureError {
    /// It cannot be opened.
    Open(std::io::Error),
    /// It is shorter than a file header's magic.
    TooShort,
    /// It cannot be rewound after the magic was read.
    Rewind(std::io::Error),
    /// Its pcapng header does not parse.
    PcapNgHeader(pcap_file::PcapError),
    /// Its pcap header does not parse (or it is neither format).
    PcapHeader(pcap_file::PcapError),
    /// A packet or block does not parse.
    Corrupt(pcap_file::PcapError),
    /// A pcapng packet names an interface that no block declared.
    UndeclaredInterface(u32),
    /// The capture parser panicked on malformed data.
    ParserPanicked,
}

impl CliError {
    /// Wraps an I/O error, recognising a closed pipe.
    pub fn io(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            CliError::BrokenPipe
        } else {
            CliError::Io(e)
        }
    }

    /// The error of a Kafka operation.
    pub fn kafka(action: impl Into<String>, source: kwire_client::Error) -> Self {
        CliError::Kafka { action: action.into(), source }
    }

    /// The process exit code: 0 success, 1 failure, 2 usage or settings, 3 the cluster could
    /// not be reached or authenticated to.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Settings(_) => 2,
            CliError::Kafka { source: kwire_client::Error::Config(_), .. } => 2,
            CliError::BrokenPipe => 0,
            CliError::Kafka { source, .. } if is_connect_failure(source) => 3,
            _ => 1,
        }
    }
}

/// Whether the error means the cluster was not reached or refused who we are: a transport
/// failure, a TLS handshake, SASL authentication.
pub fn is_connect_failure(e: &kwire_client::Error) -> bool {
    matches!(e, kwire_client::Error::Io { .. } | kwire_client::Error::Tls { .. } | kwire_client::Error::Authentication { .. })
}

impl From<SettingsError> for CliError {
    fn from(e: SettingsError) -> Self {
        CliError::Settings(e)
    }
}

impl From<InputError> for CliError {
    fn from(e: InputError) -> Self {
        CliError::Input(e)
    }
}

impl From<DecodeError> for InputError {
    fn from(e: DecodeError) -> Self {
        InputError::Decode(e)
    }
}

impl From<EncodeError> for InputError {
    fn from(e: EncodeError) -> Self {
        InputError::Encode(e)
    }
}

impl From<JsonError> for InputError {
    fn from(e: JsonError) -> Self {
        InputError::JsonForm(e)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) => f.write_str(m),
            CliError::Input(e) => fmt::Display::fmt(e, f),
            CliError::BatchFailures(n) => write!(f, "{n} input line(s) failed; see their answers"),
            CliError::Io(e) => write!(f, "{e}"),
            CliError::BrokenPipe => f.write_str("broken pipe"),
            CliError::Settings(e) => fmt::Display::fmt(e, f),
            CliError::Kafka { action, source } => write!(f, "{action}: {source}"),
            CliError::Incomplete(m) => f.write_str(m),
            CliError::Proxy(e) => write!(f, "starting the tap: {e}"),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Hex(e) => write!(f, "malformed hex: {e}"),
            InputError::Json(e) => write!(f, "invalid JSON: {e}"),
            InputError::Stdin(e) => write!(f, "reading stdin: {e}"),
            InputError::Line { number, source } => write!(f, "line {number}: {source}"),
            InputError::Field { name, expected } => write!(f, "\"{name}\" is missing or not {expected}"),
            InputError::Missing(name) => write!(f, "\"{name}\" is missing"),
            InputError::Kind(k) => write!(f, "\"kind\" must be \"request\" or \"response\", not \"{k}\""),
            InputError::UnknownApiKey(k) => write!(f, "unknown api key {k}"),
            InputError::UnknownApiKeyName(s) => {
                write!(f, "unknown api key \"{s}\" (a number or a name such as Metadata)")
            }
            InputError::Decode(e) => fmt::Display::fmt(e, f),
            InputError::Encode(e) => fmt::Display::fmt(e, f),
            InputError::JsonForm(e) => fmt::Display::fmt(e, f),
            InputError::TrailingBytes { left, offset } => {
                write!(f, "{left} trailing bytes after the body at offset {offset}")
            }
            InputError::ShortRequest(n) => write!(f, "request of {n} bytes is shorter than a header"),
            InputError::FrameTooShort(n) => write!(f, "truncated frame: {n} bytes, shorter than the 4-byte size"),
            InputError::FrameSize { size, payload } => {
                let cut = if *size >= 0 && (*size as usize) > *payload { " (truncated frame)" } else { "" };
                write!(f, "frame size {size} does not match the {payload} bytes after the size prefix{cut}")
            }
            InputError::Body { header_len, source } => write!(f, "body (after {header_len} header bytes): {source}"),
            InputError::Batch { index, source } => write!(f, "batch {index}: {source}"),
            InputError::Capture { path, what } => write!(f, "{}: {what}", path.display()),
        }
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Open(e) | CaptureError::Rewind(e) => write!(f, "{e}"),
            CaptureError::TooShort => f.write_str("not a pcap or pcapng file (too short)"),
            CaptureError::PcapNgHeader(e) => write!(f, "invalid pcapng: {e}"),
            CaptureError::PcapHeader(e) => write!(f, "not a pcap or pcapng file: {e}"),
            CaptureError::Corrupt(e) => write!(f, "corrupt capture: {e}"),
            CaptureError::UndeclaredInterface(i) => write!(f, "corrupt capture: packet on undeclared interface {i}"),
            CaptureError::ParserPanicked => f.write_str("corrupt capture: the capture parser failed on malformed data"),
        }
    }
}

impl std::error::Error for InputError {}
