//! AlterUserScramCredentials (KIP-554) at the active controller: which
//! records a request's changes become. The broker that took the request
//! has already checked each change on its own (mechanism, iterations,
//! name, a user named twice) and derived the keys from the salted
//! password; what needs the image is decided here: a deletion must name a
//! credential that exists. A user's changes are applied all or none.

use serde::{Deserialize, Serialize};

use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::protocol::error_code;

/// One change of one user's credential for one mechanism (Kafka's
/// ScramMechanism type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScramChange {
    Upsert {
        mechanism: i8,
        salt: Vec<u8>,
        stored_key: Vec<u8>,
        server_key: Vec<u8>,
        iterations: i32,
    },
    Delete {
        mechanism: i8,
    },
}

/// A user's outcome: `Err((code, message))` refuses all of its changes.
pub type UserOutcome = (String, Result<(), (i16, String)>);

/// The records of the users whose changes all apply, and every user's
/// outcome, in the order given.
pub fn plan_scram_changes(
    image: &MetadataImage,
    users: &[(String, Vec<ScramChange>)],
) -> (Vec<MetadataRecord>, Vec<UserOutcome>) {
    let mut records = Vec::new();
    let mut outcomes = Vec::with_capacity(users.len());
    for (name, changes) in users {
        let missing = changes.iter().find_map(|c| match c {
            ScramChange::Delete { mechanism }
                if !image
                    .scram_credentials
                    .contains_key(&(name.clone(), *mechanism)) =>
            {
                Some(*mechanism)
            }
            _ => None,
        });
        if missing.is_some() {
            outcomes.push((
                name.clone(),
                Err((
                    error_code::RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist".to_string(),
                )),
            ));
            continue;
        }
        for change in changes {
            records.push(match change.clone() {
                ScramChange::Upsert {
                    mechanism,
                    salt,
                    stored_key,
                    server_key,
                    iterations,
                } => MetadataRecord::UserScramCredential {
                    name: name.clone(),
                    mechanism,
                    salt,
                    stored_key,
                    server_key,
                    iterations,
                },
                ScramChange::Delete { mechanism } => MetadataRecord::RemoveUserScramCredential {
                    name: name.clone(),
                    mechanism,
                },
            });
        }
        outcomes.push((name.clone(), Ok(())));
    }
    (records, outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upsert(mechanism: i8) -> ScramChange {
        ScramChange::Upsert {
            mechanism,
            salt: vec![1; 16],
            stored_key: vec![2; 32],
            server_key: vec![3; 32],
            iterations: 4096,
        }
    }

    #[test]
    fn a_users_changes_apply_all_or_none() {
        let mut image = MetadataImage::empty();
        let (records, outcomes) =
            plan_scram_changes(&image, &[("alice".into(), vec![upsert(1), upsert(2)])]);
        assert_eq!(records.len(), 2);
        assert_eq!(outcomes, vec![("alice".to_string(), Ok(()))]);
        for (i, r) in records.iter().enumerate() {
            image.apply(i as i64 + 1, r);
        }
        assert_eq!(image.scram_credentials.len(), 2);
        // Bob's deletion of a credential he does not have refuses his
        // upsert too; Alice's deletion goes through.
        let (records, outcomes) = plan_scram_changes(
            &image,
            &[
                (
                    "bob".into(),
                    vec![upsert(1), ScramChange::Delete { mechanism: 2 }],
                ),
                ("alice".into(), vec![ScramChange::Delete { mechanism: 2 }]),
            ],
        );
        assert_eq!(
            outcomes[0].1.as_ref().unwrap_err().0,
            error_code::RESOURCE_NOT_FOUND
        );
        assert_eq!(outcomes[1].1, Ok(()));
        assert_eq!(
            records,
            vec![MetadataRecord::RemoveUserScramCredential {
                name: "alice".into(),
                mechanism: 2
            }]
        );
        image.apply(10, &records[0]);
        assert!(image.scram_credentials.contains_key(&("alice".into(), 1)));
        assert!(!image.scram_credentials.contains_key(&("alice".into(), 2)));
    }
}
