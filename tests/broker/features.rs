//! Finalized feature levels with Kafka's own tool, `kafka-features.sh`
//! (Kafka 4.4's `FeatureCommand`, through Kafka's Admin client: ApiVersions
//! to describe, UpdateFeatures to change), against one real `pinlog
//! serve`. One broker serves every step, in order:
//!
//! - a new cluster finalizes `transaction.version` at its new-cluster
//!   level, and pinlog supports 0-2;
//! - `downgrade` to 1 and `upgrade` to 2 take effect at once on the broker
//!   that answered, each under a higher epoch;
//! - an upgrade past what pinlog supports, and a downgrade asked as an
//!   upgrade, fail with Kafka's message and change nothing;
//! - a level survives a restart, and so does its removal (`disable`): a
//!   cluster that already has an id is not given the new-cluster levels
//!   again.
//!
//! Loopback only, a free port, bounded waits. Like the other client tests,
//! a missing JDK or Kafka jars fail the test with what to install, and
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips it.

use crate::support;

use pinlog::metadata::features::{
    TRANSACTION_VERSION, TRANSACTION_VERSION_LEVEL_MAX, TRANSACTION_VERSION_LEVEL_MIN,
    TRANSACTION_VERSION_LEVEL_NEW_CLUSTER,
};
use support::{described_feature, kafka_features, which, Broker, BrokerOpts, DescribedFeature};

fn skipped() -> bool {
    let skip = std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("*** SKIPPED (PINLOG_SKIP_CLIENT_TESTS=1): kafka-features.sh was NOT run ***");
    }
    skip
}

/// `kafka-features.sh describe`'s row of `transaction.version`.
fn describe(broker: &Broker) -> DescribedFeature {
    let out = kafka_features(&broker.bootstrap(), &["describe"]);
    if !out.success() {
        broker.fail(&format!("kafka-features.sh describe failed:\n{out}"));
    }
    described_feature(&out.stdout, TRANSACTION_VERSION)
        .unwrap_or_else(|| broker.fail(&format!("no {TRANSACTION_VERSION} in:\n{out}")))
}

/// Runs an update that must succeed and print `says`.
fn update(broker: &Broker, args: &[&str], says: &str) {
    let out = kafka_features(&broker.bootstrap(), args);
    if !out.success() || !out.stdout.contains(says) {
        broker.fail(&format!(
            "kafka-features.sh {args:?} should say {says:?}:\n{out}"
        ));
    }
}

/// Runs an update that must fail and print `says`.
fn refused(broker: &Broker, args: &[&str], says: &str) {
    let out = kafka_features(&broker.bootstrap(), args);
    if out.success() || !out.stdout.contains(says) {
        broker.fail(&format!(
            "kafka-features.sh {args:?} should fail saying {says:?}:\n{out}"
        ));
    }
}

#[test]
fn kafka_features_tool_describes_downgrades_upgrades_and_levels_survive_restart() {
    if skipped() {
        return;
    }
    assert!(
        which("java").is_some(),
        "a JDK (java, 17+) is needed: apt-get install openjdk-17-jdk-headless (CI does)"
    );
    let mut broker = Broker::start(BrokerOpts::new());
    let tv = |level: i16| format!("{TRANSACTION_VERSION}={level}");

    let fresh = describe(&broker);
    assert_eq!(
        (fresh.supported_min, fresh.supported_max),
        (TRANSACTION_VERSION_LEVEL_MIN, TRANSACTION_VERSION_LEVEL_MAX),
        "{fresh:?}"
    );
    assert_eq!(
        fresh.finalized_level, TRANSACTION_VERSION_LEVEL_NEW_CLUSTER,
        "a new cluster's level: {fresh:?}"
    );
    assert!(fresh.epoch >= 0, "Java clients ignore a negative epoch");

    update(
        &broker,
        &["downgrade", "--feature", &tv(1)],
        "transaction.version was downgraded to 1.",
    );
    let downgraded = describe(&broker);
    assert_eq!(downgraded.finalized_level, 1, "{downgraded:?}");
    update(
        &broker,
        &["upgrade", "--feature", &tv(2)],
        "transaction.version was upgraded to 2.",
    );
    let upgraded = describe(&broker);
    assert_eq!(upgraded.finalized_level, 2, "{upgraded:?}");
    assert!(
        fresh.epoch < downgraded.epoch && downgraded.epoch < upgraded.epoch,
        "every change moves the epoch on: {fresh:?} {downgraded:?} {upgraded:?}"
    );

    refused(
        &broker,
        &["upgrade", "--feature", &tv(3)],
        "Invalid update version 3 for feature transaction.version. pinlog supports versions 0-2",
    );
    refused(
        &broker,
        &["upgrade", "--feature", &tv(1)],
        "Can't downgrade the version of this feature without setting the upgrade type",
    );
    assert_eq!(
        describe(&broker),
        upgraded,
        "a refused update writes nothing"
    );

    // A level survives a restart.
    update(
        &broker,
        &["downgrade", "--feature", &tv(1)],
        "transaction.version was downgraded to 1.",
    );
    broker.restart();
    assert_eq!(describe(&broker).finalized_level, 1, "after a restart");

    // So does its removal: the restarted cluster has an id, so it is not
    // given the new-cluster levels again.
    update(
        &broker,
        &["disable", "--feature", TRANSACTION_VERSION],
        "transaction.version was disabled.",
    );
    assert_eq!(describe(&broker).finalized_level, 0);
    broker.restart();
    let restarted = describe(&broker);
    assert_eq!(
        restarted.finalized_level, 0,
        "after a restart: {restarted:?}"
    );
    assert_eq!(
        (restarted.supported_min, restarted.supported_max),
        (TRANSACTION_VERSION_LEVEL_MIN, TRANSACTION_VERSION_LEVEL_MAX),
        "a feature at level 0 is still supported: {restarted:?}"
    );
    broker.stop();
}

/// `share.version` (KIP-932): a new cluster serves share groups at level
/// 1; `kafka-features.sh downgrade` to 0 switches them off, and a
/// ShareGroupHeartbeat is then answered UNSUPPORTED_VERSION with what to
/// do; an upgrade back to 1 serves it again.
#[test]
fn share_version_switches_share_groups_on_and_off() {
    use bytes::BytesMut;
    use pinlog::metadata::features::{SHARE_VERSION, SHARE_VERSION_LEVEL_NEW_CLUSTER};
    use pinlog::protocol::api::ApiKey;
    use pinlog::protocol::error_code;
    use pinlog::protocol::messages::share_group_heartbeat::*;
    use std::net::SocketAddr;
    use std::time::Duration;
    use support::kafka_conn::Conn;

    if skipped() {
        return;
    }
    let mut broker = Broker::start(BrokerOpts::new());
    let level = || {
        let out = kafka_features(&broker.bootstrap(), &["describe"]);
        described_feature(&out.stdout, SHARE_VERSION)
            .unwrap_or_else(|| broker.fail(&format!("no {SHARE_VERSION} in:\n{out}")))
    };
    let fresh = level();
    assert_eq!(
        fresh.finalized_level, SHARE_VERSION_LEVEL_NEW_CLUSTER,
        "{fresh:?}"
    );
    assert_eq!(
        (fresh.supported_min, fresh.supported_max),
        (0, 1),
        "{fresh:?}"
    );
    let heartbeat = || {
        let mut c = Conn::open(
            SocketAddr::from(([127, 0, 0, 1], broker.port())),
            "features-test",
            Duration::from_secs(30),
        )
        .expect("connect to the broker");
        let req = ShareGroupHeartbeatRequest {
            group_id: "queue".into(),
            member_id: "m-0000000000000000001".into(),
            member_epoch: 0,
            rack_id: None,
            subscribed_topic_names: Some(vec!["t".into()]),
        };
        let mut r = c.call(ApiKey::ShareGroupHeartbeat, 1, |w: &mut BytesMut| {
            req.encode(w, 1)
        });
        ShareGroupHeartbeatResponse::decode(&mut r, 1).expect("a ShareGroupHeartbeat answer")
    };
    // As a client does, find the coordinator first: that creates
    // __consumer_offsets. Then it may still be loading: retried, bounded.
    {
        use pinlog::protocol::messages::find_coordinator::FindCoordinatorRequest;
        let mut c = Conn::open(
            SocketAddr::from(([127, 0, 0, 1], broker.port())),
            "features-test",
            Duration::from_secs(30),
        )
        .expect("connect to the broker");
        let req = FindCoordinatorRequest {
            key: "queue".into(),
            key_type: 0,
            coordinator_keys: vec!["queue".into()],
        };
        c.call(ApiKey::FindCoordinator, 4, |w: &mut BytesMut| {
            req.encode(w, 4)
        });
    }
    let mut on = heartbeat();
    for _ in 0..50 {
        if on.error_code != error_code::COORDINATOR_LOAD_IN_PROGRESS
            && on.error_code != error_code::COORDINATOR_NOT_AVAILABLE
            && on.error_code != error_code::NOT_COORDINATOR
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        on = heartbeat();
    }
    assert_eq!(on.error_code, error_code::NONE, "{on:?}");
    update(
        &broker,
        &["downgrade", "--feature", &format!("{SHARE_VERSION}=0")],
        "share.version was downgraded to 0.",
    );
    let off = heartbeat();
    assert_eq!(off.error_code, error_code::UNSUPPORTED_VERSION, "{off:?}");
    assert!(
        off.error_message
            .as_deref()
            .is_some_and(|m| m.contains("upgrade --feature share.version=1")),
        "{off:?}"
    );
    update(
        &broker,
        &["upgrade", "--feature", &format!("{SHARE_VERSION}=1")],
        "share.version was upgraded to 1.",
    );
    assert_eq!(heartbeat().error_code, error_code::NONE);
    broker.stop();
}
