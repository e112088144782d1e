//! `--html FILE` for `kwire tap` and `kwire pcap`: one self-contained page (no network: styles,
//! script and data inline, a content security policy that allows nothing else) with the
//! timeline of responses per connection, latency histograms per api, the clients with their
//! bytes, errors and throttles, and with `--report` the upgrade findings.
//!
//! Fed with the same JSON lines as the output (secrets already withheld); the data goes into the
//! page as JSON that its script reads and draws with DOM calls (text, never markup), so no
//! client id or topic name can inject anything.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use kwire::runtime::json::serde_json::{self, json, Map, Value};

use crate::error::CliError;
use crate::talkers::{Talkers, Target};
use crate::tap::api_name;

/// The page, with `/*DATA*/` where the JSON goes.
const TEMPLATE: &str = include_str!("report.html");
/// Responses drawn on the timeline; later ones are counted.
const MAX_EVENTS: usize = 50_000;
/// Requests awaiting their response, for the latency.
const MAX_PENDING: usize = 65_536;
/// Latencies kept per api (the first ones).
const MAX_LATENCIES: usize = 100_000;
/// Upper edges of the latency histogram's buckets, in ms; the last bucket is open.
const BUCKET_EDGES: [f64; 10] = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];

/// One response: connection, when its request went (ms since the first frame), api, latency,
/// error codes in it.
type Event = (u64, f64, i16, Option<f64>, u32);

/// What the page shows, gathered frame by frame.
#[derive(Default)]
pub struct HtmlReport {
    events: Vec<Event>,
    dropped: u64,
    responses: u64,
    first_ms: Option<f64>,
    last_ms: f64,
    pending: HashMap<(u64, i64), f64>,
    connections: BTreeSet<u64>,
    latencies: BTreeMap<i16, Vec<f64>>,
}

fn errors_in(v: &Value) -> u32 {
    match v {
        Value::Object(o) => o.iter().map(|(k, v)| if k == "errorCode" { u32::from(v.as_i64().is_some_and(|c| c != 0)) } else { errors_in(v) }).sum(),
        Value::Array(a) => a.iter().map(errors_in).sum(),
        _ => 0,
    }
}

impl HtmlReport {
    /// Takes in one printed frame of `connection`, seen at `at_ms` (ms since the epoch, or since
    /// the capture's start).
    pub fn observe(&mut self, connection: u64, at_ms: f64, line: &Map<String, Value>) {
        let first = *self.first_ms.get_or_insert(at_ms);
        self.last_ms = self.last_ms.max(at_ms - first);
        self.connections.insert(connection);
        let (Some(api), Some(corr)) = (line.get("apiKey").and_then(Value::as_i64), line.get("correlationId").and_then(Value::as_i64)) else { return };
        let Ok(api) = i16::try_from(api) else { return };
        if line.get("direction").and_then(Value::as_str) == Some("request") {
            if self.pending.len() >= MAX_PENDING {
                self.pending.clear();
            }
            self.pending.insert((connection, corr), at_ms);
            return;
        }
        self.responses += 1;
        let sent = self.pending.remove(&(connection, corr));
        let latency = sent.map(|s| (at_ms - s).max(0.0));
        if let Some(ms) = latency {
            let l = self.latencies.entry(api).or_default();
            if l.len() < MAX_LATENCIES {
                l.push(ms);
            }
        }
        if self.events.len() >= MAX_EVENTS {
            self.dropped += 1;
            return;
        }
        let errors = line.get("body").map_or(0, errors_in);
        self.events.push((connection, sent.unwrap_or(at_ms) - first, api, latency, errors));
    }

    /// The data the page draws.
    fn data(&self, talkers: &Talkers, target: Option<&Target>) -> Value {
        let mut apis: BTreeSet<i16> = self.events.iter().map(|e| e.2).collect();
        apis.extend(self.latencies.keys());
        let index: HashMap<i16, usize> = apis.iter().enumerate().map(|(i, a)| (*a, i)).collect();
        let api_rows: Vec<Value> = apis
            .iter()
            .map(|api| {
                let mut l = self.latencies.get(api).cloned().unwrap_or_default();
                l.sort_by(f64::total_cmp);
                let q = |q: f64| crate::format::quantile(&l, q);
                let mut buckets = vec![0u64; BUCKET_EDGES.len() + 1];
                for ms in &l {
                    let b = BUCKET_EDGES.iter().position(|edge| ms < edge).unwrap_or(BUCKET_EDGES.len());
                    if let Some(n) = buckets.get_mut(b) {
                        *n += 1;
                    }
                }
                let count = self.events.iter().filter(|e| e.2 == *api).count();
                json!({"name": api_name(*api), "count": count, "p50": q(0.5), "p99": q(0.99), "buckets": buckets})
            })
            .collect();
        let events: Vec<Value> = self
            .events
            .iter()
            .map(|(c, at, api, ms, errors)| json!([c, (at * 1000.0).round() / 1000.0, index.get(api).copied().unwrap_or(0), ms, errors]))
            .collect();
        let connections: Vec<Value> = self.connections.iter().map(|c| json!({"id": c, "client": talkers.connection_label(*c)})).collect();
        let mut edges: Vec<Value> = BUCKET_EDGES.iter().map(|e| json!(e)).collect();
        edges.push(Value::Null);
        json!({
            "responses": self.responses, "dropped": self.dropped, "span_ms": self.last_ms,
            "apis": api_rows, "events": events, "connections": connections, "bucket_edges": edges,
            "clients": talkers.json(target), "target": target.map(|t| t.name.clone()),
        })
    }

    /// Writes the page to `path`.
    pub fn write(&self, path: &Path, talkers: &Talkers, target: Option<&Target>) -> Result<(), CliError> {
        // `<` escaped: no `</script>` can end the data early.
        let data = serde_json::to_string(&self.data(talkers, target)).map_err(|e| CliError::Io(e.into()))?.replace('<', "\\u003c");
        let page = TEMPLATE.replacen("/*DATA*/", &data, 1);
        std::fs::write(path, page).map_err(|e| CliError::Io(std::io::Error::new(e.kind(), format!("writing {}: {e}", path.display()))))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn line(direction: &str, api: i16, corr: i64, body: Value) -> Map<String, Value> {
        json!({"direction": direction, "apiKey": api, "apiVersion": 9, "correlationId": corr, "header": {"clientId": "</script><b>x"}, "body": body})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn the_page_holds_its_data_and_nothing_can_break_out_of_it() {
        let (mut report, mut talkers) = (HtmlReport::default(), Talkers::default());
        for (at, l) in [
            (1000.0, line("request", 0, 1, json!({}))),
            (1003.0, line("response", 0, 1, json!({"responses": [{"partitionResponses": [{"errorCode": 6}]}]}))),
            (1004.0, line("request", 3, 2, json!({}))),
            (1005.5, line("response", 3, 2, json!({}))),
        ] {
            report.observe(7, at, &l);
            talkers.observe(7, &l);
        }
        let data = report.data(&talkers, None);
        assert_eq!(data["responses"], 2);
        assert_eq!(data["events"], json!([[7, 0.0, 0, 3.0, 1], [7, 4.0, 1, 1.5, 0]]));
        assert_eq!(data["apis"][0]["buckets"][2], 1, "3 ms falls in 2-5");
        let path = std::env::temp_dir().join(format!("kwire-report-{}.html", std::process::id()));
        report.write(&path, &talkers, None).unwrap();
        let page = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(page.matches("</script>").count(), 2, "the client id's </script> is escaped");
        assert!(page.contains("\\u003c/script>\\u003cb>x"));
        // The SVG namespace is the one URL, and it is never fetched.
        assert!(!page.contains("https:") && page.match_indices("http:").all(|(i, _)| page[i..].starts_with("http://www.w3.org/2000/svg")), "nothing links out");
    }
}
