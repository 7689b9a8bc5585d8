//! Kafka's controlled shutdown (seed 003): on SIGTERM a broker first asks
//! the active controller, with BrokerHeartbeat's `want_shut_down`, to move
//! its leaderships to other in-sync replicas and take it out of every ISR,
//! and stops only once it leads nothing. Clients then move to the new
//! leaders at once, and an acks=all produce waiting here is answered
//! NOT_LEADER_OR_FOLLOWER and retried there, instead of hanging until the
//! connection closes while the partition has a leader that is going away.
//!
//! Found by the fault suite's rolling restart: without it a stopping leader
//! kept accepting appends it could never commit, every partition it led was
//! unavailable until the controller fenced it, and an idempotent producer's
//! retries piled up against it.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::metadata::image::MetadataImage;
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::server::lifecycle::registration::{self, JoinRefused, Lifecycle};
use crate::shard::shard::Shard;

/// How often the watcher looks for a shutdown request: on the shard's
/// common 50 ms ticks (`crate::ticks`). It was 10 ms, a hundred wake-ups a
/// second of an idle shard 0 for a signal that comes once.
const WATCH_EVERY: Duration = Duration::from_millis(50);
/// How often the local image is checked while a heartbeat's effect is
/// awaited.
const IMAGE_POLL: Duration = Duration::from_millis(5);
/// The longest wait for the local image to change between two shutdown
/// heartbeats.
const HEARTBEAT_RETRY: Duration = Duration::from_millis(200);
/// How long the broker waits, once the controller agreed, for the local
/// image to show its leaderships gone (so that requests waiting on them are
/// answered before the connections close).
const LOCAL_HANDOVER_WAIT: Duration = Duration::from_secs(2);

/// Runs on shard 0 from the broker's start: turns a shutdown request into
/// a stop, after a controlled shutdown when this broker is registered and
/// another live broker can take over.
pub async fn watch(shard: Rc<Shard>, stop: StopHandle) {
    while !stop.is_shutdown_requested() {
        crate::ticks::sleep_to_next_tick(WATCH_EVERY).await;
    }
    if !stop.is_requested() {
        if let Some(lifecycle) = shard.extension::<Lifecycle>() {
            hand_over_leaderships(&shard, &lifecycle, &stop).await;
        }
    }
    stop.request();
}

/// The partitions `broker` leads in `image`.
fn leaderships(image: &MetadataImage, broker: i32) -> usize {
    image
        .topics
        .values()
        .flat_map(|t| t.partitions.values())
        .filter(|p| p.leader == broker)
        .count()
}

async fn hand_over_leaderships(shard: &Rc<Shard>, lifecycle: &Lifecycle, stop: &StopHandle) {
    let broker = BrokerState::of(shard);
    let me = broker.node_id();
    let image = broker.image();
    let another_live = image
        .brokers
        .values()
        .any(|b| b.id != me && !b.fenced && !b.in_controlled_shutdown);
    if !another_live {
        // Nobody could lead in its place: moving leaderships would only
        // take every partition offline a moment sooner.
        tracing::debug!("no other live broker: stopping without a controlled shutdown");
        return;
    }
    let started = Instant::now();
    // Kafka's controller fences a broker whose session ran out anyway;
    // waiting longer gains nothing.
    let bound = Duration::from_millis(broker.config.cluster.session_timeout_ms);
    tracing::info!(
        leaderships = leaderships(&image, me),
        "controlled shutdown: asking the controller to move this broker's leaderships to \
         other in-sync replicas (a second signal stops at once)"
    );
    // Without an active controller nothing can move: a broker that lost
    // the quorum does not wait out the whole bound for one.
    let unanswered_bound = Duration::from_millis(broker.config.cluster.heartbeat_interval_ms);
    let mut last_answer = Instant::now();
    loop {
        if stop.is_requested() {
            return;
        }
        let seen = broker.image().offset;
        match registration::shutdown_heartbeat(shard, lifecycle, stop).await {
            Ok(Some(resp)) if resp.should_shut_down => break,
            Ok(Some(_)) => last_answer = Instant::now(),
            Ok(None) if last_answer.elapsed() >= unanswered_bound => {
                tracing::warn!(
                    "controlled shutdown abandoned: no active controller answered within \
                     broker.heartbeat.interval.ms ({} ms); stopping without it",
                    unanswered_bound.as_millis()
                );
                return;
            }
            Ok(None) => {}
            Err(JoinRefused(why)) => {
                tracing::warn!("controlled shutdown abandoned: {why}; stopping without it");
                return;
            }
        }
        if started.elapsed() >= bound {
            tracing::warn!(
                leaderships = leaderships(&broker.image(), me),
                "controlled shutdown did not finish within broker.session.timeout.ms ({} ms); \
                 stopping anyway: the controller moves the rest when this broker's session ends",
                bound.as_millis()
            );
            return;
        }
        wait_for_image_after(&broker, seen, HEARTBEAT_RETRY).await;
    }
    let deadline = Instant::now() + LOCAL_HANDOVER_WAIT;
    while leaderships(&broker.image(), me) > 0 && Instant::now() < deadline {
        glommio::timer::sleep(IMAGE_POLL).await;
    }
    tracing::info!(
        waited_ms = started.elapsed().as_millis() as u64,
        "controlled shutdown done: this broker leads no partition"
    );
}

/// Returns once the local image is newer than `offset`, or after `at_most`.
async fn wait_for_image_after(broker: &BrokerState, offset: i64, at_most: Duration) {
    let deadline = Instant::now() + at_most;
    while broker.image().offset <= offset && Instant::now() < deadline {
        glommio::timer::sleep(IMAGE_POLL).await;
    }
}
