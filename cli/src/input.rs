//! Reading input (hex, raw stdin, JSON) and printing JSON.

use std::io::{Read, Write};

use kwire::runtime::json::serde_json::{self, Value};
use kwire::ApiKey;

use crate::error::{CliError, InputError};

/// Parses an api key given as a number or a name (case-insensitive).
pub fn parse_api_key(s: &str) -> Result<i16, InputError> {
    if let Ok(k) = s.parse::<i16>() {
        return Ok(k);
    }
    ApiKey::ALL.iter().find(|k| k.name().eq_ignore_ascii_case(s)).map(|k| k.key()).ok_or_else(|| InputError::UnknownApiKeyName(s.to_string()))
}

/// Decodes hex, ignoring whitespace, naming the offset of a bad digit.
pub fn parse_hex(s: &str) -> Result<Vec<u8>, CliError> {
    let digits: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    Ok(hex::decode(&digits).map_err(InputError::Hex)?)
}

/// The input bytes: `--hex` when given, else raw stdin.
pub fn bytes(hex: Option<&str>) -> Result<Vec<u8>, CliError> {
    match hex {
        Some(h) => parse_hex(h),
        None => {
            let mut buf = Vec::new();
            std::io::stdin().lock().read_to_end(&mut buf).map_err(CliError::io)?;
            Ok(buf)
        }
    }
}

/// One JSON document from stdin.
pub fn stdin_json() -> Result<Value, CliError> {
    let mut text = String::new();
    std::io::stdin().lock().read_to_string(&mut text).map_err(InputError::Stdin)?;
    Ok(serde_json::from_str(&text).map_err(InputError::Json)?)
}

/// Prints a JSON value on one line, or indented.
pub fn print_json(out: &mut impl Write, json: &Value, pretty: bool) -> Result<(), CliError> {
    let text = if pretty { serde_json::to_string_pretty(json) } else { serde_json::to_string(json) }.map_err(|e| CliError::Io(e.into()))?;
    writeln!(out, "{text}").map_err(CliError::io)
}

/// Runs a batch: each non-blank line of `input` is parsed as JSON and answered with
/// `{"ok":true, <key>: ...}` or `{"ok":false,"error":"..."}`. Fails at the end when any line did.
pub fn jsonl(input: impl std::io::BufRead, out: &mut impl Write, key: &str, mut handle: impl FnMut(&Value) -> Result<Value, CliError>) -> Result<(), CliError> {
    let mut failures = 0;
    for (n, line) in input.lines().enumerate() {
        let line = line.map_err(|source| InputError::Line { number: n + 1, source })?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = serde_json::from_str::<Value>(&line).map_err(|e| CliError::Input(InputError::Json(e))).and_then(|v| handle(&v));
        let answer = match answer {
            Ok(v) => serde_json::json!({"ok": true, key: v}),
            Err(e) => {
                failures += 1;
                serde_json::json!({"ok": false, "error": e.to_string()})
            }
        };
        writeln!(out, "{answer}").map_err(CliError::io)?;
    }
    if failures > 0 {
        Err(CliError::BatchFailures(failures))
    } else {
        Ok(())
    }
}

/// A required integer field of a batch line.
pub fn int_field<T: TryFrom<i64>>(v: &Value, key: &str) -> Result<T, CliError> {
    v.get(key)
        .and_then(Value::as_i64)
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| InputError::Field { name: key.to_string(), expected: "a valid integer" }.into())
}

/// A required string field of a batch line.
pub fn str_field<'a>(v: &'a Value, key: &str) -> Result<&'a str, CliError> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| InputError::Field { name: key.to_string(), expected: "a string" }.into())
}
