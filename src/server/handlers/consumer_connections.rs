//! The KIP-848 members each client connection heartbeats for, kept on the
//! shard that holds the connection (as share sessions are). When a
//! connection closes, each of its members' coordinators is told, and a
//! dynamic member that does not heartbeat again on another connection is
//! fenced after its heartbeat interval and
//! `group.consumer.disconnect.grace.ms` instead of at the end of its
//! session: a consumer that crashed hands its partitions over in seconds.
//! The coordinator decides (`GroupCoordinator::consumer_connection_closed`),
//! as only it knows which connection a member used last.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use crate::group::coordinator::{on_coordinator, ConnectionId, GroupCoordinator};
use crate::shard::shard::Shard;

/// (group, member) pairs.
type Members = BTreeSet<(String, String)>;

#[derive(Default)]
pub struct ConsumerConnections {
    members: RefCell<HashMap<ConnectionId, Members>>,
}

impl ConsumerConnections {
    fn of(shard: &Shard) -> Rc<ConsumerConnections> {
        if let Some(c) = shard.extension::<ConsumerConnections>() {
            return c;
        }
        let c = Rc::new(ConsumerConnections::default());
        shard.set_extension(c.clone());
        c
    }
}

/// A dynamic member's heartbeat on `connection` was answered; `left` when
/// it was its leave.
pub fn heartbeat_answered(
    shard: &Shard,
    connection: ConnectionId,
    group_id: &str,
    member_id: &str,
    left: bool,
) {
    if connection == 0 {
        return;
    }
    let registry = ConsumerConnections::of(shard);
    let mut members = registry.members.borrow_mut();
    let key = (group_id.to_string(), member_id.to_string());
    if left {
        if let Some(set) = members.get_mut(&connection) {
            set.remove(&key);
            if set.is_empty() {
                members.remove(&connection);
            }
        }
    } else {
        members.entry(connection).or_default().insert(key);
    }
}

/// `connection` closed: the coordinators of the members it heartbeated for
/// are told.
pub async fn on_connection_closed(shard: &Rc<Shard>, connection: ConnectionId) {
    let Some(registry) = shard.extension::<ConsumerConnections>() else {
        return;
    };
    let Some(members) = registry.members.borrow_mut().remove(&connection) else {
        return;
    };
    for (group_id, member_id) in members {
        let group = group_id.clone();
        let told = on_coordinator(shard, &group, move |c: Rc<GroupCoordinator>, s, _| {
            c.consumer_connection_closed(s, group_id, member_id, connection)
        })
        .await;
        if let Err(code) = told {
            tracing::debug!(group = %group, code, "could not tell the coordinator that a member's connection closed");
        }
    }
}
