//! Output of consumed records, human tables and delimiters: kcat's format strings (`-f`),
//! JSON lines (`--json`), and the escapes (`\n`, `\t`, ...) that `-D`, `-K` and `-f` take.

use std::io::Write;

use base64::Engine;
use kwire::runtime::json::serde_json::{json, Map, Value};
use kwire_client::ConsumerRecord;

use crate::error::CliError;

/// Turns `\n`, `\t`, `\r`, `\0`, `\\` and `\xHH` into their bytes, as kcat does for `-D`, `-K`
/// and `-f`; other text stays as it is.
pub fn unescape(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let esc = bytes.get(i + 1).copied();
        let simple = match esc {
            Some(b'n') => Some(b'\n'),
            Some(b't') => Some(b'\t'),
            Some(b'r') => Some(b'\r'),
            Some(b'0') => Some(0),
            Some(b'\\') => Some(b'\\'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
            continue;
        }
        if esc == Some(b'x') {
            let hex = bytes.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(c) = hex {
                out.push(c);
                i += 4;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

/// One piece of a format string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(Vec<u8>),
    Value,
    ValueLen,
    Key,
    KeyLen,
    Topic,
    Partition,
    Offset,
    Timestamp,
    Headers,
}

/// A kcat format string, compiled: `%s` value, `%S` its length, `%k` key, `%K` its length,
/// `%t` topic, `%p` partition, `%o` offset, `%T` timestamp (ms), `%h` headers
/// (`k1=v1,k2=v2`), `%%` a percent sign; escapes as [`unescape`]. A null key or value prints
/// nothing and its length -1, as kcat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format(Vec<Piece>);

impl Format {
    /// Compiles `spec`, or names the unknown `%` directive.
    pub fn parse(spec: &str) -> Result<Format, CliError> {
        let raw = unescape(spec);
        let mut pieces = Vec::new();
        let mut literal = Vec::new();
        let mut it = raw.iter().copied();
        while let Some(b) = it.next() {
            if b != b'%' {
                literal.push(b);
                continue;
            }
            let piece = match it.next() {
                Some(b'%') => {
                    literal.push(b'%');
                    continue;
                }
                Some(b's') => Piece::Value,
                Some(b'S') => Piece::ValueLen,
                Some(b'k') => Piece::Key,
                Some(b'K') => Piece::KeyLen,
                Some(b't') => Piece::Topic,
                Some(b'p') => Piece::Partition,
                Some(b'o') => Piece::Offset,
                Some(b'T') => Piece::Timestamp,
                Some(b'h') => Piece::Headers,
                Some(other) => return Err(CliError::Usage(format!("-f: unknown directive %{} (known: %s %S %k %K %t %p %o %T %h %%)", char::from(other)))),
                None => return Err(CliError::Usage("-f: the format ends with a lone %".into())),
            };
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(piece);
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(Format(pieces))
    }

    /// kcat's default: the value then the delimiter, or with `-K` the key, the key delimiter,
    /// the value and the delimiter.
    pub fn default_for(delimiter: &str, key_delimiter: Option<&str>) -> Format {
        let mut pieces = Vec::new();
        if let Some(k) = key_delimiter {
            pieces.push(Piece::Key);
            pieces.push(Piece::Literal(unescape(k)));
        }
        pieces.push(Piece::Value);
        pieces.push(Piece::Literal(unescape(delimiter)));
        Format(pieces)
    }

    /// Writes one record.
    pub fn write(&self, out: &mut impl Write, r: &ConsumerRecord) -> std::io::Result<()> {
        let len = |b: &Option<kwire::Bytes>| b.as_ref().map_or(-1, |b| b.len() as i64);
        for piece in &self.0 {
            match piece {
                Piece::Literal(l) => out.write_all(l)?,
                Piece::Value => out.write_all(r.value.as_deref().unwrap_or_default())?,
                Piece::ValueLen => write!(out, "{}", len(&r.value))?,
                Piece::Key => out.write_all(r.key.as_deref().unwrap_or_default())?,
                Piece::KeyLen => write!(out, "{}", len(&r.key))?,
                Piece::Topic => out.write_all(r.topic.as_bytes())?,
                Piece::Partition => write!(out, "{}", r.partition)?,
                Piece::Offset => write!(out, "{}", r.offset)?,
                Piece::Timestamp => write!(out, "{}", r.timestamp)?,
                Piece::Headers => {
                    for (i, h) in r.headers.iter().enumerate() {
                        if i > 0 {
                            out.write_all(b",")?;
                        }
                        out.write_all(h.key.as_bytes())?;
                        out.write_all(b"=")?;
                        out.write_all(h.value.as_deref().unwrap_or_default())?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Bytes as JSON: a string when they are UTF-8, else `{"base64": "..."}`; null stays null.
pub fn bytes_json(b: Option<&[u8]>) -> Value {
    match b {
        None => Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => Value::String(s.to_owned()),
            Err(_) => json!({"base64": base64::engine::general_purpose::STANDARD.encode(b)}),
        },
    }
}

/// A record as one JSON object: topic, partition, offset, timestamp, timestampType, key,
/// value, headers (`[{"key", "value"}]`, in wire order).
pub fn record_json(r: &ConsumerRecord) -> Value {
    let headers: Vec<Value> = r.headers.iter().map(|h| json!({"key": h.key.to_string(), "value": bytes_json(h.value.as_deref())})).collect();
    let mut m = Map::new();
    m.insert("topic".into(), Value::String(r.topic.to_string()));
    m.insert("partition".into(), json!(r.partition));
    m.insert("offset".into(), json!(r.offset));
    m.insert("timestamp".into(), json!(r.timestamp));
    let ts_type = match r.timestamp_type {
        kwire::runtime::records::TimestampType::LogAppendTime => "LogAppendTime",
        _ => "CreateTime",
    };
    m.insert("timestampType".into(), json!(ts_type));
    m.insert("key".into(), bytes_json(r.key.as_deref()));
    m.insert("value".into(), bytes_json(r.value.as_deref()));
    m.insert("headers".into(), Value::Array(headers));
    Value::Object(m)
}

/// A table for people: columns padded to their widest cell, two spaces apart.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headings.
    pub fn new(headings: &[&str]) -> Table {
        Table { rows: vec![headings.iter().map(|h| h.to_string()).collect()] }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Writes it.
    pub fn write(&self, out: &mut impl Write) -> Result<(), CliError> {
        let mut widths: Vec<usize> = Vec::new();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                match widths.get_mut(i) {
                    Some(w) => *w = (*w).max(cell.chars().count()),
                    None => widths.push(cell.chars().count()),
                }
            }
        }
        for row in &self.rows {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    let w = widths.get(i).copied().unwrap_or(0);
                    line.push_str(&format!("{cell:<w$}  "));
                }
            }
            writeln!(out, "{}", line.trim_end()).map_err(CliError::io)?;
        }
        Ok(())
    }
}

/// The value at quantile `q` (0-1) of `sorted` (ascending; nearest rank), if it has any.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let i = ((sorted.len() as f64 * q).ceil() as usize).saturating_sub(1);
    sorted.get(i.min(sorted.len().saturating_sub(1))).copied()
}

/// Prints a JSON value on one line.
pub fn print_json(out: &mut impl Write, v: &Value) -> Result<(), CliError> {
    writeln!(out, "{v}").map_err(CliError::io)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;
    use kwire::runtime::records::{Header, Headers, TimestampType};
    use kwire::Bytes;

    fn record() -> ConsumerRecord {
        let mut headers = Headers::new();
        headers.push(Header::new("h1", Some(Bytes::from_static(b"v1"))));
        headers.push(Header::new("h2", None));
        ConsumerRecord {
            topic: "orders".into(),
            partition: 2,
            offset: 41,
            timestamp: 1_700_000_000_123,
            timestamp_type: TimestampType::CreateTime,
            key: Some(Bytes::from_static(b"k")),
            value: Some(Bytes::from_static(b"hello")),
            headers,
            leader_epoch: None,
        }
    }

    fn render(f: &Format, r: &ConsumerRecord) -> String {
        let mut out = Vec::new();
        f.write(&mut out, r).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn kcat_directives() {
        let f = Format::parse("%t/%p@%o %T k=%k(%K) v=%s(%S) [%h] 100%%\\n").unwrap();
        assert_eq!(render(&f, &record()), "orders/2@41 1700000000123 k=k(1) v=hello(5) [h1=v1,h2=] 100%\n");
        let mut r = record();
        r.key = None;
        r.value = None;
        assert_eq!(render(&Format::parse("%k|%K|%s|%S").unwrap(), &r), "|-1||-1");
    }

    #[test]
    fn format_errors() {
        assert!(Format::parse("%x").unwrap_err().to_string().contains("unknown directive %x"));
        assert!(Format::parse("abc%").unwrap_err().to_string().contains("lone %"));
    }

    #[test]
    fn defaults_and_escapes() {
        assert_eq!(render(&Format::default_for("\\n", None), &record()), "hello\n");
        assert_eq!(render(&Format::default_for("\\x00", Some("\\t")), &record()), "k\thello\0");
        assert_eq!(unescape("a\\\\b\\q\\x4"), b"a\\b\\q\\x4");
        assert_eq!(unescape("::"), b"::");
    }

    #[test]
    fn json_lines() {
        let mut r = record();
        r.key = Some(Bytes::from_static(&[0xff, 0x00]));
        let v = record_json(&r);
        assert_eq!(v["key"], json!({"base64": "/wA="}));
        assert_eq!(v["value"], "hello");
        assert_eq!(v["headers"], json!([{"key": "h1", "value": "v1"}, {"key": "h2", "value": null}]));
        assert_eq!(v["offset"], 41);
    }
}
