//! DescribeUserScramCredentials (API 50, KIP-554): which SCRAM mechanisms
//! and iteration counts each user has, from this broker's image. Never
//! the salt or the keys. Kafka's rule: DESCRIBE on the cluster, else the
//! request answers CLUSTER_AUTHORIZATION_FAILED.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_user_scram_credentials::*;
use crate::server::handlers::access::{Access, AUTHORIZATION_FAILED};
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeUserScramCredentialsRequest,
    access: &Access<'_>,
) -> DescribeUserScramCredentialsResponse {
    let image = BrokerState::of(shard).image();
    if !access.allows_cluster(&image, matrix::DESCRIBE_USER_SCRAM_CREDENTIALS) {
        return DescribeUserScramCredentialsResponse {
            throttle_time_ms: 0,
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            error_message: Some(AUTHORIZATION_FAILED.into()),
            results: Vec::new(),
        };
    }
    let mut by_user: BTreeMap<&str, Vec<CredentialInfo>> = BTreeMap::new();
    for ((user, mechanism), c) in &image.scram_credentials {
        by_user.entry(user).or_default().push(CredentialInfo {
            mechanism: *mechanism,
            iterations: c.iterations,
        });
    }
    let results = match req.users.filter(|u| !u.is_empty()) {
        // No user named: every user with a credential.
        None => by_user
            .into_iter()
            .map(|(user, infos)| DescribeUserScramCredentialsResult {
                user: user.to_string(),
                error_code: error_code::NONE,
                error_message: None,
                credential_infos: infos,
            })
            .collect(),
        Some(users) => {
            let mut seen = BTreeSet::new();
            let duplicates: BTreeSet<&String> =
                users.iter().filter(|u| !seen.insert(u.as_str())).collect();
            let mut reported = BTreeSet::new();
            users
                .iter()
                .filter(|u| reported.insert(u.as_str()))
                .map(|user| {
                    let (code, message, infos) = if duplicates.contains(user) {
                        (
                            error_code::DUPLICATE_RESOURCE,
                            Some("Cannot describe SCRAM credentials for the same user twice in a single request".to_string()),
                            Vec::new(),
                        )
                    } else {
                        match by_user.get(user.as_str()) {
                            Some(infos) => (error_code::NONE, None, infos.clone()),
                            None => (
                                error_code::RESOURCE_NOT_FOUND,
                                Some(format!("Attempt to describe a user credential that does not exist: {user}")),
                                Vec::new(),
                            ),
                        }
                    };
                    DescribeUserScramCredentialsResult {
                        user: user.clone(),
                        error_code: code,
                        error_message: message,
                        credential_infos: infos,
                    }
                })
                .collect()
        }
    };
    DescribeUserScramCredentialsResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        results,
    }
}
