//! The wire-type table drives every emitter: a spec with a field (and an array field) of each
//! fixed-width type, built from `wire::Fixed::ALL`, generates code that reads, writes and sizes
//! each through its runtime module. A new row in the table is covered here without editing this
//! test; the root crate's round-trip tests then compile the module calls against the runtime.

use kwire_build::internal::wire::{DefaultKind, Fixed};

#[test]
fn every_fixed_type_is_coded_through_its_runtime_module() {
    let mut fields = Vec::new();
    for (i, t) in Fixed::ALL.iter().enumerate() {
        let row = t.row();
        let default = match row.literal {
            DefaultKind::Int { .. } => r#", "default": "-1""#.replace("-1", if row.spec.starts_with('u') { "7" } else { "-1" }),
            DefaultKind::Bool => r#", "default": "true""#.to_string(),
            DefaultKind::Float | DefaultKind::Uuid => String::new(),
        };
        fields.push(format!(r#"{{ "name": "Value{i}", "type": "{}", "versions": "0+"{default} }}"#, row.spec));
        fields.push(format!(r#"{{ "name": "Values{i}", "type": "[]{}", "versions": "1+" }}"#, row.spec));
    }
    let dir = std::env::temp_dir().join(format!("kwire-build-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = |kind: &str, name: &str| {
        format!(
            r#"{{ "apiKey": 1001, "type": "{kind}", "name": "{name}", "validVersions": "0-2", "flexibleVersions": "2+",
                 "fields": [{}] }}"#,
            fields.join(",\n")
        )
    };
    std::fs::write(dir.join("WireTypesRequest.json"), spec("request", "WireTypesRequest")).unwrap();
    std::fs::write(dir.join("WireTypesResponse.json"), spec("response", "WireTypesResponse")).unwrap();
    let files = kwire_build::generate(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let files = files.unwrap_or_else(|e| panic!("{e}"));
    let code = &files.iter().find(|f| f.name == "wire_types_request.rs").expect("request file").content;
    for (i, t) in Fixed::ALL.iter().enumerate() {
        let row = t.row();
        let (module, rust) = (row.module, row.rust);
        for func in ["read", "write"] {
            let call = format!("rt::encoding::{module}::{func}(");
            assert!(code.contains(&call), "{}: no {call}", row.spec);
        }
        assert!(code.contains(&format!("pub value{i}: {rust},")), "{}: field type", row.spec);
        let inline = 16 / row.size;
        assert!(code.contains(&format!("pub values{i}: rt::SmallVec<[{rust}; {inline}]>,")), "{}: array type", row.spec);
        // Sized from the table: the field's bytes, the array's element size.
        assert!(code.contains(&format!("rt::array::fixed_array_len(&self.values{i}, flexible, {}usize)", row.size)), "{}", row.spec);
    }
}
