//! Nodes that are not voters (`process.roles=broker`): they learn the
//! metadata log without voting, as KRaft's observers do.
//!
//! KRaft's observers fetch the log from the leader. openraft's leader
//! pushes it to learners instead, so an observer listens on its
//! `controller.listen` (an ephemeral port unless set) and asks the voters
//! to add it as a learner at that address; the active controller does so
//! with a membership entry. A learner never votes and never leads, and the
//! quorum's majority stays the voters'. An observer that restarts on
//! another port asks again, and the leader re-adds it at that address.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use openraft::impls::BasicNode;
use openraft::rt::watch::WatchReceiver;
use openraft::{ChangeMembers, ServerState};

use crate::node::stop::StopHandle;
use crate::quorum::network::{PeerConnection, PeerRequest, PeerResponse};
use crate::quorum::types::Raft;

/// Pause between rounds of asking the voters to add this observer.
const JOIN_RETRY: Duration = Duration::from_millis(200);
/// How often a node still not added says so.
const JOIN_WARN_EVERY: Duration = Duration::from_secs(10);

/// Asks the voters, one after another, until the active controller has
/// added this node as an observer at `address`.
pub async fn join(
    raft: Raft,
    node_id: i32,
    address: String,
    voters: BTreeMap<i32, String>,
    request_timeout_ms: u64,
    tls: Option<std::sync::Arc<crate::security::controller_channel::ControllerChannelTls>>,
    stop: StopHandle,
) {
    let started = Instant::now();
    let mut last_warning = Instant::now();
    let timeout = Duration::from_millis(request_timeout_ms.max(1));
    let request = PeerRequest::AddObserver {
        node_id,
        address: address.clone(),
    };
    loop {
        // The leader the log names first: it is the one that can add us.
        let leader = raft
            .metrics()
            .borrow_watched()
            .current_leader
            .and_then(|l| voters.get(&(l as i32)).cloned());
        let mut last_error = String::from("no voter answered");
        for voter in leader.iter().chain(voters.values()) {
            if stop.is_requested() {
                return;
            }
            let mut connection = PeerConnection::new(voter.clone(), tls.clone());
            match connection.call(&request, timeout).await {
                Ok(PeerResponse::ObserverAdded) => {
                    tracing::info!(
                        address = %address,
                        waited_ms = started.elapsed().as_millis() as u64,
                        "the controller quorum sends this broker-only node the metadata log"
                    );
                    return;
                }
                Ok(PeerResponse::Error(why)) => last_error = format!("{voter}: {why}"),
                Ok(_) => last_error = format!("{voter}: an unexpected answer"),
                Err(e) => last_error = format!("{voter}: {e}"),
            }
        }
        if last_warning.elapsed() >= JOIN_WARN_EVERY {
            last_warning = Instant::now();
            tracing::warn!(
                waited_s = started.elapsed().as_secs(),
                "no active controller has added this broker-only node to the quorum yet \
                 ({last_error}); check controller.quorum.voters and that a majority of the \
                 voters run"
            );
        }
        glommio::timer::sleep(JOIN_RETRY).await;
    }
}

/// On the active controller: makes `node_id` a learner at `address`, or
/// updates the address of the learner it already is. Refuses a voter's id
/// (two processes with one `node.id`) and answers with the leader's id
/// when this node does not lead.
pub async fn add(raft: &Raft, node_id: i32, address: String) -> Result<(), String> {
    let metrics = raft.metrics().borrow_watched().clone();
    if metrics.state != ServerState::Leader {
        return Err(match metrics.current_leader {
            Some(l) => format!("not the active controller; node {l} is"),
            None => "no active controller yet".into(),
        });
    }
    let id = node_id as u64;
    let membership = metrics.membership_config.membership();
    if membership.voter_ids().any(|v| v == id) {
        return Err(format!(
            "node.id {node_id} is a voter of the quorum; a broker-only node needs a node.id \
             that is not in controller.quorum.voters"
        ));
    }
    let node = BasicNode {
        addr: address.clone(),
    };
    match membership.get_node(&id) {
        Some(known) if known.addr == address => return Ok(()),
        Some(_) => {
            // It restarted on another port. The leader's replication
            // stream to a node keeps the connection it was created with
            // (SetNodes was tried: the stream went on to the old address),
            // so remove the learner and add it again at its new address.
            raft.change_membership(ChangeMembers::RemoveNodes(BTreeSet::from([id])), true)
                .await
                .map_err(|e| format!("cannot move observer {node_id} to {address}: {e}"))?;
        }
        None => {}
    }
    raft.add_learner(id, node, false)
        .await
        .map_err(|e| format!("cannot add node {node_id} as an observer: {e}"))?;
    tracing::info!(node = node_id, address = %address, "added a broker-only node to the quorum as an observer");
    Ok(())
}

/// On the active controller: removes `node_id` from the learners, if it is
/// one. A voter's id, or a node the membership does not list, is left
/// alone.
pub async fn remove(raft: &Raft, node_id: i32) -> Result<(), String> {
    let id = node_id as u64;
    let is_learner = raft
        .metrics()
        .borrow_watched()
        .membership_config
        .membership()
        .learner_ids()
        .any(|l| l == id);
    if !is_learner {
        return Ok(());
    }
    raft.change_membership(ChangeMembers::RemoveNodes(BTreeSet::from([id])), true)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!(
        node = node_id,
        "removed an unregistered broker from the quorum's observers"
    );
    Ok(())
}
