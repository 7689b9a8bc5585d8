//! A classic group handing its members to a consumer group of the same id,
//! and taking them back (the online migration between the protocols,
//! decided in `consumer/classic.rs`).

use super::{Group, GroupLimits, GroupState};
use crate::protocol::error_code;

impl Group {
    /// The group's members moved to a consumer group of the same id (an
    /// online upgrade, or an empty group taken over): parked JoinGroup and
    /// SyncGroup calls are told to rejoin, which they will do against the
    /// consumer group, and what is left holds only the committed offsets.
    pub fn hand_over_members(&mut self, now_ms: i64) {
        self.abandon_waiters(error_code::REBALANCE_IN_PROGRESS);
        self.members.clear();
        self.pending_members.clear();
        self.static_members.clear();
        self.awaiting_sync.clear();
        self.sync_deadline_ms = None;
        self.join_timer = None;
        self.protocol_type = None;
        self.protocol = None;
        self.leader = None;
        self.set_state(GroupState::Empty, now_ms);
    }

    /// Starts a rebalance of a group that was just rebuilt from a consumer
    /// group (an online downgrade): its members learn of it from their
    /// next Heartbeat and join again.
    pub fn rebalance_after_downgrade(&mut self, now_ms: i64, limits: &GroupLimits) {
        self.prepare_rebalance(now_ms, limits, "converted from a consumer group");
    }
}
