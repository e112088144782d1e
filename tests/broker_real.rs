//! Conformance sweep against a real Apache Kafka broker (started by `scripts/kafka.sh`, run by
//! `scripts/broker-sweep.sh`): for every api the broker advertises and every version both sides
//! support, a valid request built from kafka-wire's types goes out through the connection codec;
//! the answer must decode, re-encode to the same bytes, and carry exactly the error codes
//! expected (none where the request is valid). Versions this build knows and the broker does
//! not advertise must be refused as kafka-wire predicts.
//!
//! Reads `KAFKA_WIRE_BROKER` (the env file `scripts/kafka.sh start` writes, or a PLAINTEXT
//! `host:port`); skips when unset unless `KAFKA_WIRE_REQUIRE_BROKER=1`. Writes the table of
//! (api, version, result) to `target/broker-sweep/<kafka version>.txt`.
//! `KAFKA_WIRE_SWEEP_ONLY=refusals` checks only the refusals (for a build from another release's
//! specs), into `<kafka version>-refusals.txt`.

#[path = "real/mod.rs"]
mod sweep;

use sweep::{Broker, Sweep};

#[test]
fn every_advertised_api_version() {
    let Some(broker) = Broker::from_env() else { return };
    let mut sweep = Sweep::new(broker);
    if std::env::var("KAFKA_WIRE_SWEEP_ONLY").is_ok_and(|v| v == "refusals") {
        sweep.run_refusals();
    } else {
        sweep.run();
    }
    let (passed, exercised) = sweep.write_table();
    let failed: Vec<String> = sweep.failures();
    assert!(failed.is_empty(), "{} of {exercised} api versions failed:\n{}", exercised - passed, failed.join("\n"));
}
