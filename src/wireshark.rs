//! Kafka's protocol as a Wireshark dissector in Lua, generated at build time from the same specs
//! as the types: every api key and version, requests and responses, flexible versions and tagged
//! fields, record batches summarised. `kwire wireshark` writes it with chosen ports.
//!
//! ```
//! let lua = kwire::wireshark::DISSECTOR;
//! assert!(lua.contains("Proto(\"kwire\""));
//! // Its settings are single lines a tool may replace before writing the file.
//! assert!(lua.lines().any(|l| l == kwire::wireshark::PORTS_LINE));
//! ```

/// The dissector (protocol `kwire`, fields `kwire.*`), for
/// `tshark -X lua_script:kwire.lua -Y kwire -r capture.pcap`.
pub const DISSECTOR: &str = include_str!(concat!(env!("OUT_DIR"), "/kwire.lua"));

/// The line that sets the TCP ports it registers for (a Wireshark port range: `9092,19092-19094`).
pub const PORTS_LINE: &str = "local PORTS = \"9092\"";

/// The line that sets whether secrets are shown by default (a preference in Wireshark).
pub const SHOW_SECRETS_LINE: &str = "local SHOW_SECRETS = false";

/// The line that sets where secrets are carried: `SECRETS[api_key].request` (or `.response`) is a
/// list of `{ path = { json names }, bytes = "field" }` (a string or bytes field withheld) and
/// `{ path = ..., config = { "name", "value" } }` (`value` withheld when `name` looks secret).
pub const SECRETS_LINE: &str = "local SECRETS = {}";
