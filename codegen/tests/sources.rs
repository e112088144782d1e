//! Spec sets read from where users have them: a directory, a kafka-clients jar, or a Kafka
//! distribution's `libs/` folder. Jars are written here from the shared spec files, so the test
//! needs no download; `scripts/releases.sh` runs the generator on the real jars of every release.

use std::io::Write;
use std::path::{Path, PathBuf};

use kwire_build::internal::load_model;
use kwire_build::internal::model::Model;
use kwire_build::{find_source, release_name, SpecSource};

fn shared(release: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/message-specs").join(release)
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sources-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A jar holding `specs`' json files under `common/message/`, plus entries that are not specs.
fn write_jar(path: &Path, specs: &Path) {
    let mut jar = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    jar.start_file("META-INF/MANIFEST.MF", opts).unwrap();
    jar.write_all(b"Manifest-Version: 1.0\n").unwrap();
    jar.start_file("common/message/README.txt", opts).unwrap();
    jar.start_file("common/message/nested/Not.json", opts).unwrap();
    jar.write_all(b"not a spec").unwrap();
    for entry in std::fs::read_dir(specs).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "json") {
            jar.start_file(format!("common/message/{}", p.file_name().unwrap().to_str().unwrap()), opts).unwrap();
            jar.write_all(&std::fs::read(&p).unwrap()).unwrap();
        }
    }
    jar.finish().unwrap();
}

fn summary(m: &Model) -> Vec<(i16, String, String)> {
    m.apis.iter().map(|a| (a.key, a.name.clone(), a.valid.to_string())).collect()
}

#[test]
fn a_jar_and_a_libs_folder_read_like_the_directory() {
    let dir = shared("kafka-4.3.0");
    let from_dir = load_model(&dir).unwrap();
    let scratch = scratch("jar");
    let jar = scratch.join("kafka-clients-4.3.0.jar");
    write_jar(&jar, &dir);
    assert_eq!(find_source(&jar), Some(SpecSource::Jar(jar.clone())));
    let from_jar = load_model(&jar).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary(&from_jar), summary(&from_dir));
    assert_eq!(from_jar.messages.len(), from_dir.messages.len());
    assert_eq!(release_name(&jar), "kafka-clients-4.3.0");
    assert_eq!(from_jar.apis[0].releases[0].release, "kafka-clients-4.3.0");

    // libs/: the kafka-clients jar is picked, not its test jar nor other jars.
    let libs = scratch.join("libs");
    std::fs::create_dir_all(&libs).unwrap();
    std::fs::rename(&jar, libs.join("kafka-clients-4.3.0.jar")).unwrap();
    write_jar(&libs.join("kafka-clients-4.3.0-test.jar"), &shared("kafka-3.9.0"));
    std::fs::write(libs.join("kafka_2.13-4.3.0.jar"), b"not a zip").unwrap();
    assert_eq!(find_source(&libs), Some(SpecSource::Jar(libs.join("kafka-clients-4.3.0.jar"))));
    let from_libs = load_model(&libs).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary(&from_libs), summary(&from_dir));
}

#[test]
fn a_folder_without_specs_or_a_broken_jar_is_reported() {
    let empty = scratch("empty");
    assert_eq!(find_source(&empty), None);
    let err = load_model(&empty).unwrap_err().to_string();
    assert!(err.starts_with("no *.json spec files (nor a kafka-clients jar) in"), "{err}");
    let bad = empty.join("kafka-clients-9.9.9.jar");
    std::fs::write(&bad, b"PK not really").unwrap();
    let err = load_model(&bad).unwrap_err().to_string();
    assert!(err.contains("kafka-clients-9.9.9.jar"), "{err}");
}
