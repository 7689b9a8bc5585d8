//! A data directory written by the release before the cluster work starts
//! on this one with all its topics, records, settings, groups and
//! committed offsets, and keeps them across a restart; like an upgraded
//! Kafka cluster, it finalizes no feature level.
//!
//! The fixture, `tests/fixtures/data-dir-0.1.tar.gz`, was written by that
//! release (`main` at f64b463) with `tests/fixtures/make-upgrade-fixture.sh`:
//! a 3-partition topic with 300 records and a retention setting, a
//! compacted topic, and a group with offset 40 committed on every partition
//! of the first topic, stopped cleanly. Its metadata log is the single-node
//! controller's local `__cluster_metadata-0`.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pinlog::metadata::features::TRANSACTION_VERSION;
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use serde_json::Value;
use support::kafka_conn::Conn;
use support::{run_command, Broker, BrokerOpts};

const PINLOG_BIN: &str = env!("CARGO_BIN_EXE_pinlog");
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/data-dir-0.1.tar.gz"
);
const CLI_TIMEOUT: Duration = Duration::from_secs(60);

/// The operator CLI's JSON answer to `args`.
fn cli(broker: &Broker, args: &[&str]) -> Value {
    let out = run_command(
        Command::new(PINLOG_BIN).args(args).args([
            "--bootstrap-server",
            &broker.bootstrap(),
            "--json",
        ]),
        None,
        CLI_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("pinlog {args:?} failed:\n{out}"));
    }
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| broker.fail(&format!("pinlog {args:?} printed no JSON ({e}):\n{out}")))
}

/// The broker's ApiVersions v4 answer.
fn api_versions(broker: &Broker) -> ApiVersionsResponse {
    const VERSION: i16 = 4;
    let addr = broker.bootstrap().parse().expect("a socket address");
    let mut conn = Conn::open(addr, "upgrade-test", CLI_TIMEOUT)
        .unwrap_or_else(|e| broker.fail(&format!("connect: {e}")));
    let mut r = conn.call(ApiKey::ApiVersions, VERSION, |w| {
        ApiVersionsRequest::default().encode(w, VERSION)
    });
    ApiVersionsResponse::decode(&mut r, VERSION)
        .unwrap_or_else(|e| broker.fail(&format!("ApiVersions v{VERSION}: {e}")))
}

fn topic<'a>(described: &'a Value, name: &str) -> &'a Value {
    described["topics"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no topic {name} in {described}"))
}

#[test]
fn a_data_directory_of_the_previous_release_starts_with_everything() {
    assert!(Path::new(FIXTURE).is_file(), "missing {FIXTURE}");
    let mut broker = Broker::start(BrokerOpts::new().seed_data(FIXTURE));
    for round in ["first start", "restart"] {
        let described = cli(&broker, &["topic", "describe"]);
        let events = topic(&described, "upgrade-events");
        assert_eq!(events["partition_count"], 3, "{round}: {events}");
        assert_eq!(
            events["configs"]["retention.ms"], "604800000",
            "{round}: {events}"
        );
        let end_offsets: i64 = events["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["end_offset"].as_i64().unwrap())
            .sum();
        assert_eq!(
            end_offsets, 300,
            "{round}: every record is still there: {events}"
        );
        let compacted = topic(&described, "upgrade-compacted");
        assert_eq!(
            compacted["configs"]["cleanup.policy"], "compact",
            "{round}: {compacted}"
        );
        // Internal topics are described only when named.
        let offsets = cli(&broker, &["topic", "describe", "__consumer_offsets"]);
        assert_eq!(
            topic(&offsets, "__consumer_offsets")["partition_count"],
            3,
            "{round}: {offsets}"
        );
        let group = cli(&broker, &["group", "describe", "upgrade-group"]);
        let committed: Vec<(i64, i64)> = group["offsets"]
            .as_array()
            .unwrap_or_else(|| panic!("{round}: no offsets: {group}"))
            .iter()
            .map(|o| {
                (
                    o["partition"].as_i64().unwrap(),
                    o["current_offset"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            committed,
            vec![(0, 40), (1, 40), (2, 40)],
            "{round}: {group}"
        );
        // An upgraded cluster finalizes no feature (its first registration
        // agreed the cluster id on a log that already held topics), as an
        // upgraded Kafka cluster stays at level 0; it still supports them.
        let features = api_versions(&broker);
        assert!(
            features.finalized_features.is_empty(),
            "{round}: {features:?}"
        );
        assert!(
            features
                .supported_features
                .iter()
                .any(|f| f.name == TRANSACTION_VERSION),
            "{round}: {features:?}"
        );
        broker.restart();
    }
}
