//! The tool's errors and their exit codes.

use std::fmt;

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// The arguments do not make sense together (exit 2).
    Usage(String),
    /// The input is bad: malformed hex or JSON, bytes that do not decode (exit 1).
    Input(String),
    /// Some lines of a batch failed; each was answered with its error (exit 1).
    BatchFailures(usize),
    /// Reading or writing failed (exit 1).
    Io(std::io::Error),
    /// Stdout was closed (`| head`): stop quietly.
    BrokenPipe,
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

    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::BrokenPipe => 0,
            _ => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Input(m) => f.write_str(m),
            CliError::BatchFailures(n) => write!(f, "{n} input line(s) failed; see their answers"),
            CliError::Io(e) => write!(f, "{e}"),
            CliError::BrokenPipe => f.write_str("broken pipe"),
        }
    }
}
