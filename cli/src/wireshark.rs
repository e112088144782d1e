//! `kwire wireshark`: the build's Wireshark dissector with the ports and the places secrets are
//! carried filled in.

use kwire::wireshark::{DISSECTOR, PORTS_LINE, SECRETS_LINE, SHOW_SECRETS_LINE};

use crate::secrets;

/// The dissector registered for `ports`, withholding secrets unless `show_secrets` (a
/// preference a Wireshark user can still change).
pub fn dissector(ports: &[u16], show_secrets: bool) -> String {
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    let settings = [
        (PORTS_LINE, format!("local PORTS = \"{}\"", ports.join(","))),
        (SHOW_SECRETS_LINE, format!("local SHOW_SECRETS = {show_secrets}")),
        (SECRETS_LINE, secrets::lua_rules()),
    ];
    let mut out = String::with_capacity(DISSECTOR.len() + 4096);
    for line in DISSECTOR.split_inclusive('\n') {
        match settings.iter().find(|(from, _)| line.trim_end() == *from) {
            Some((_, to)) => {
                out.push_str(to);
                out.push('\n');
            }
            None => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_filled_in_once() {
        for line in [PORTS_LINE, SHOW_SECRETS_LINE, SECRETS_LINE] {
            assert_eq!(DISSECTOR.lines().filter(|l| *l == line).count(), 1, "{line}");
        }
        let lua = dissector(&[9092, 19092], true);
        assert!(lua.contains("\nlocal PORTS = \"9092,19092\"\n"));
        assert!(lua.contains("\nlocal SHOW_SECRETS = true\n"));
        assert!(lua.contains("[36] = { request = {"), "SaslAuthenticate's rules");
        assert!(!lua.contains(SECRETS_LINE));
    }
}
