//! AlterUserScramCredentials (API 51, KIP-554): sets or deletes users'
//! SCRAM credentials. The client sends the salt and the salted password
//! (its PBKDF2 already done); this broker checks each change, derives the
//! stored and server keys (two HMACs and a hash) and forwards the result
//! to the active controller, which writes it to the metadata log. The
//! password never reaches the broker, and the salted password never
//! leaves it. Kafka's rule: ALTER on the cluster, else every user named
//! answers CLUSTER_AUTHORIZATION_FAILED.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::scram::ScramChange;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_user_scram_credentials::*;
use crate::sasl::scram_credential::{
    ScramCredential, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS,
};
use crate::server::controller;
use crate::server::handlers::access::{Access, AUTHORIZATION_FAILED};
use crate::shard::shard::Shard;

type Refusal = (i16, String);

fn unacceptable(message: &str) -> Refusal {
    (error_code::UNACCEPTABLE_CREDENTIAL, message.to_string())
}

fn check_upsert(u: &ScramCredentialUpsertion) -> Result<ScramChange, Refusal> {
    let m = ScramMechanism::from_kafka_type(u.mechanism).ok_or_else(|| {
        (
            error_code::UNSUPPORTED_SASL_MECHANISM,
            "Unknown SCRAM mechanism".to_string(),
        )
    })?;
    if u.iterations < MIN_ITERATIONS as i32 {
        return Err(unacceptable(&format!(
            "Too few iterations: at least {MIN_ITERATIONS}"
        )));
    }
    if u.iterations > MAX_ITERATIONS as i32 {
        return Err(unacceptable(&format!(
            "Too many iterations: at most {MAX_ITERATIONS}"
        )));
    }
    let credential =
        ScramCredential::from_salted_password(m, &u.salt, &u.salted_password, u.iterations as u32)
            .map_err(|e| unacceptable(&e.to_string()))?;
    Ok(ScramChange::Upsert {
        mechanism: u.mechanism,
        salt: credential.salt,
        stored_key: credential.stored_key,
        server_key: credential.server_key,
        iterations: u.iterations,
    })
}

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: AlterUserScramCredentialsRequest,
    access: &Access<'_>,
) -> AlterUserScramCredentialsResponse {
    if !access.allows_cluster(
        &BrokerState::of(shard).image(),
        matrix::ALTER_USER_SCRAM_CREDENTIALS,
    ) {
        // Each user once, in order, as Kafka answers a refused request.
        let users: BTreeSet<&String> = req
            .deletions
            .iter()
            .map(|d| &d.name)
            .chain(req.upsertions.iter().map(|u| &u.name))
            .collect();
        return AlterUserScramCredentialsResponse {
            throttle_time_ms: 0,
            results: users
                .into_iter()
                .map(|user| AlterUserScramCredentialsResult {
                    user: user.clone(),
                    error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
                    error_message: Some(AUTHORIZATION_FAILED.into()),
                })
                .collect(),
        };
    }
    // Every user in the order first named; a user's changes go together.
    let mut order: Vec<String> = Vec::new();
    let mut changes: BTreeMap<String, Result<Vec<ScramChange>, Refusal>> = BTreeMap::new();
    let mut seen: BTreeSet<(String, i8)> = BTreeSet::new();
    let ops = req
        .deletions
        .iter()
        .map(|d| (d.name.clone(), d.mechanism, None))
        .chain(
            req.upsertions
                .iter()
                .map(|u| (u.name.clone(), u.mechanism, Some(u))),
        );
    for (name, mech, upsert) in ops {
        if !changes.contains_key(&name) {
            order.push(name.clone());
            changes.insert(name.clone(), Ok(Vec::new()));
        }
        let entry = changes.get_mut(&name).expect("inserted above");
        let change = if name.is_empty() {
            Err(unacceptable("Username must not be empty"))
        } else if !seen.insert((name.clone(), mech)) {
            Err((
                error_code::DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request".to_string(),
            ))
        } else {
            match upsert {
                Some(u) => check_upsert(u),
                None if ScramMechanism::from_kafka_type(mech).is_none() => Err((
                    error_code::UNSUPPORTED_SASL_MECHANISM,
                    "Unknown SCRAM mechanism".to_string(),
                )),
                None => Ok(ScramChange::Delete { mechanism: mech }),
            }
        };
        match (entry, change) {
            (Ok(list), Ok(c)) => list.push(c),
            (entry @ Ok(_), Err(refusal)) => *entry = Err(refusal),
            (Err(_), _) => {}
        }
    }
    let valid: Vec<(String, Vec<ScramChange>)> = order
        .iter()
        .filter_map(|n| match &changes[n] {
            Ok(list) => Some((n.clone(), list.clone())),
            Err(_) => None,
        })
        .collect();
    let mut outcomes: BTreeMap<String, Result<(), Refusal>> = BTreeMap::new();
    if !valid.is_empty() {
        match controller::alter_scram_credentials(shard, access.caller(), valid.clone()).await {
            Ok(results) => outcomes.extend(results),
            Err(e) => {
                for (name, _) in &valid {
                    outcomes.insert(name.clone(), Err((e.code, e.message.clone())));
                }
            }
        }
    }
    let results = order
        .iter()
        .map(|name| {
            let outcome = match &changes[name] {
                Err(refusal) => Err(refusal.clone()),
                Ok(_) => outcomes.remove(name).unwrap_or(Ok(())),
            };
            let (error_code, error_message) = match outcome {
                Ok(()) => (error_code::NONE, None),
                Err((code, message)) => (code, Some(message)),
            };
            AlterUserScramCredentialsResult {
                user: name.clone(),
                error_code,
                error_message,
            }
        })
        .collect();
    AlterUserScramCredentialsResponse {
        throttle_time_ms: 0,
        results,
    }
}
