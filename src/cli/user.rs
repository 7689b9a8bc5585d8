//! `pinlog user list|set-password|delete`: users' SCRAM credentials
//! (KIP-554), like `kafka-configs.sh --entity-type users
//! --add-config|--delete-config SCRAM-SHA-...`.
//!
//! DescribeUserScramCredentials lists each user's mechanisms and iteration
//! counts (never a salt or a key). AlterUserScramCredentials sets and
//! deletes. As Kafka's AdminClient does, the salt is drawn here and the
//! salted password (PBKDF2, with `sasl::scram_credential`'s function, the
//! broker's own) computed here: the password never leaves this process.
//!
//! The password comes from `--password-file` or, without it, from stdin,
//! never from the command line, where other users of the machine and the
//! shell's history would see it. There is no prompt: a terminal on stdin is
//! refused rather than echoing what is typed.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::cli::client::Client;
use crate::cli::error::{report_failures, CliError, CliResult};
use crate::cli::table::{json_text, Align, Table};
use crate::cli::{emit, ConnectArgs, UserCommand};
use crate::protocol::error_code;
use crate::protocol::messages::alter_user_scram_credentials::{
    AlterUserScramCredentialsRequest, ScramCredentialDeletion, ScramCredentialUpsertion,
};
use crate::protocol::messages::describe_user_scram_credentials::DescribeUserScramCredentialsRequest;
use crate::sasl::scram_credential::{ScramMechanism, MIN_ITERATIONS};
use crate::sasl::Mechanism;

/// `--iterations` when not given: Kafka's default for a new credential
/// (`kafka-configs.sh` without `iterations=`), which is also the least it
/// accepts.
pub const DEFAULT_ITERATIONS: u32 = MIN_ITERATIONS;
/// Random bytes of each salt. Kafka's AdminClient draws 130 bits (and
/// sends their base-36 text); SCRAM treats the salt as opaque bytes, so
/// the raw bytes of a little more do as well.
pub const SALT_RANDOM_BYTES: usize = 24;
/// The longest password read, in bytes: far above any real password, and
/// a bound on what a wrong `--password-file` (a log, a binary) makes us
/// read.
pub const PASSWORD_BYTES_MAX: usize = 1024;

const SEE_USERS: &str = "see the users and their mechanisms with `pinlog user list`";

/// `--mechanism`: SCRAM-SHA-256 or SCRAM-SHA-512.
pub fn parse_scram_mechanism(s: &str) -> Result<ScramMechanism, String> {
    Mechanism::from_name(s.trim())
        .and_then(ScramMechanism::from_mechanism)
        .ok_or_else(|| format!("{s:?}: the SCRAM mechanisms are SCRAM-SHA-256 and SCRAM-SHA-512"))
}

/// Kafka's name of a mechanism code, or the code when Kafka defines none.
fn mechanism_name(code: i8) -> String {
    ScramMechanism::from_kafka_type(code).map_or_else(
        || format!("UNKNOWN({code})"),
        |m| m.mechanism().name().to_string(),
    )
}

/// The password in `text` (a file's, or stdin's): all of it but one
/// trailing line break, which `echo` and editors add.
pub fn password_of(text: &[u8], from: &str) -> CliResult<String> {
    if text.len() > PASSWORD_BYTES_MAX {
        return Err(CliError::Usage(format!(
            "{from} holds more than {PASSWORD_BYTES_MAX} bytes; it should hold the password alone"
        )));
    }
    let text = std::str::from_utf8(text)
        .map_err(|_| CliError::Usage(format!("{from} is not UTF-8 text")))?;
    let password = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text);
    if password.is_empty() {
        return Err(CliError::Usage(format!(
            "{from} holds no password; give it with --password-file FILE or on stdin"
        )));
    }
    if password.contains(['\n', '\r']) {
        return Err(CliError::Usage(format!(
            "{from} holds more than one line; it should hold the password alone"
        )));
    }
    Ok(password.to_string())
}

/// Reads the password from `file`, or from stdin without one.
fn read_password(file: Option<&Path>) -> CliResult<String> {
    let limit = PASSWORD_BYTES_MAX as u64 + 1;
    let mut text = Vec::new();
    match file {
        Some(path) => {
            let from = format!("--password-file {}", path.display());
            std::fs::File::open(path)
                .and_then(|f| f.take(limit).read_to_end(&mut text))
                .map_err(|e| CliError::Usage(format!("cannot read {from}: {e}")))?;
            password_of(&text, &from)
        }
        None => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                return Err(CliError::Usage(
                    "give the password with --password-file FILE or on stdin \
                     (printf '%s' \"$PASSWORD\" | pinlog user set-password ...); \
                     pinlog does not prompt, so that it never echoes one"
                        .into(),
                ));
            }
            stdin
                .lock()
                .take(limit)
                .read_to_end(&mut text)
                .map_err(|e| {
                    CliError::Usage(format!("cannot read the password from stdin: {e}"))
                })?;
            password_of(&text, "stdin")
        }
    }
}

/// Each mechanism once, in the order given.
fn distinct(mechanisms: &[ScramMechanism]) -> Vec<ScramMechanism> {
    let mut out = Vec::with_capacity(mechanisms.len());
    for m in mechanisms {
        if !out.contains(m) {
            out.push(*m);
        }
    }
    out
}

/// The upsertion of `password` for `user`, salted here with `salt`.
pub fn upsertion(
    user: &str,
    mechanism: ScramMechanism,
    password: &str,
    salt: &[u8],
    iterations: u32,
) -> CliResult<ScramCredentialUpsertion> {
    let salted = mechanism
        .salted_password(password, salt, iterations)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(ScramCredentialUpsertion {
        name: user.to_string(),
        mechanism: mechanism.kafka_type(),
        iterations: iterations as i32,
        salt: Bytes::copy_from_slice(salt),
        salted_password: Bytes::from(salted),
    })
}

pub fn run(conn: &ConnectArgs, command: UserCommand, out: &mut dyn Write) -> CliResult<()> {
    match command {
        UserCommand::List { users } => {
            let mut cluster = conn.cluster()?;
            let (listed, failures) = list(cluster.any(), &users)?;
            // Users named and none found: the errors say so, and "no
            // users" would say something else.
            if conn.json || !listed.is_empty() || users.is_empty() {
                emit(out, &render_list(&listed, conn.json))?;
            }
            report_failures(failures, users.len().max(1))
        }
        UserCommand::SetPassword {
            user,
            mechanisms,
            iterations,
            password_file,
        } => {
            // The password is read (and a bad one refused) before
            // connecting.
            let password = read_password(password_file.as_deref())?;
            let mechanisms = distinct(&mechanisms);
            let upsertions = mechanisms
                .iter()
                .map(|m| {
                    let salt: [u8; SALT_RANDOM_BYTES] = rand::random();
                    upsertion(&user, *m, &password, &salt, iterations)
                })
                .collect::<CliResult<Vec<_>>>()?;
            let mut cluster = conn.cluster()?;
            alter(
                cluster.any(),
                &user,
                AlterUserScramCredentialsRequest {
                    deletions: Vec::new(),
                    upsertions,
                },
            )?;
            emit(out, &render_set(&user, &mechanisms, iterations, conn.json))
        }
        UserCommand::Delete { user, mechanisms } => {
            let mechanisms = distinct(&mechanisms);
            let mut cluster = conn.cluster()?;
            alter(
                cluster.any(),
                &user,
                AlterUserScramCredentialsRequest {
                    deletions: mechanisms
                        .iter()
                        .map(|m| ScramCredentialDeletion {
                            name: user.clone(),
                            mechanism: m.kafka_type(),
                        })
                        .collect(),
                    upsertions: Vec::new(),
                },
            )?;
            emit(out, &render_delete(&user, &mechanisms, conn.json))
        }
    }
}

/// One user's credentials: (mechanism code, iterations) each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCredentials {
    pub user: String,
    pub credentials: Vec<(i8, i32)>,
}

/// The users named (every user with a credential when none is), and an
/// error for each named user that has none.
fn list(client: &mut Client, users: &[String]) -> CliResult<(Vec<UserCredentials>, Vec<CliError>)> {
    let resp = client.send(&DescribeUserScramCredentialsRequest {
        users: (!users.is_empty()).then(|| users.to_vec()),
    })?;
    if resp.error_code != error_code::NONE {
        return Err(CliError::broker(
            "DescribeUserScramCredentials",
            resp.error_code,
            resp.error_message,
        ));
    }
    let mut listed = Vec::new();
    let mut failures = Vec::new();
    for r in resp.results {
        if r.error_code != error_code::NONE {
            let e = CliError::broker(user_label(&r.user), r.error_code, r.error_message);
            failures.push(if r.error_code == error_code::RESOURCE_NOT_FOUND {
                e.with_hint(format!(
                    "the user has no SCRAM credential; set one with \
                     `pinlog user set-password {} --mechanism SCRAM-SHA-512`",
                    r.user
                ))
            } else {
                e
            });
            continue;
        }
        let mut credentials: Vec<(i8, i32)> = r
            .credential_infos
            .iter()
            .map(|c| (c.mechanism, c.iterations))
            .collect();
        credentials.sort_unstable();
        listed.push(UserCredentials {
            user: r.user,
            credentials,
        });
    }
    listed.sort_by(|a, b| a.user.cmp(&b.user));
    Ok((listed, failures))
}

/// Sends one user's AlterUserScramCredentials and turns its answer into
/// an error with a next step.
fn alter(
    client: &mut Client,
    user: &str,
    request: AlterUserScramCredentialsRequest,
) -> CliResult<()> {
    let resp = client.send(&request)?;
    let result = resp
        .results
        .into_iter()
        .find(|r| r.user == user)
        .ok_or_else(|| CliError::Protocol {
            addr: client.addr().to_string(),
            detail: format!("AlterUserScramCredentials answered without user {user:?}"),
        })?;
    if result.error_code == error_code::NONE {
        return Ok(());
    }
    let e = CliError::broker(user_label(user), result.error_code, result.error_message);
    Err(match result.error_code {
        error_code::RESOURCE_NOT_FOUND => e.with_hint(SEE_USERS),
        _ => e,
    })
}

fn user_label(user: &str) -> String {
    format!("user {user:?}")
}

pub fn render_list(users: &[UserCredentials], as_json: bool) -> String {
    if as_json {
        let list: Vec<Value> = users
            .iter()
            .map(|u| {
                json!({
                    "name": u.user,
                    "credentials": u.credentials.iter().map(|(m, i)| json!({
                        "mechanism": mechanism_name(*m),
                        "iterations": i,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        return json_text(&json!({ "users": list }));
    }
    if users.is_empty() {
        return "No users with SCRAM credentials. Set one with \
                `pinlog user set-password USER --mechanism SCRAM-SHA-512`.\n"
            .into();
    }
    let mut table = Table::new(&[
        ("USER", Align::Left),
        ("MECHANISM", Align::Left),
        ("ITERATIONS", Align::Right),
    ]);
    for u in users {
        for (m, i) in &u.credentials {
            table.row(vec![u.user.clone(), mechanism_name(*m), i.to_string()]);
        }
    }
    table.render()
}

fn names(mechanisms: &[ScramMechanism]) -> Vec<&'static str> {
    mechanisms.iter().map(|m| m.mechanism().name()).collect()
}

pub fn render_set(
    user: &str,
    mechanisms: &[ScramMechanism],
    iterations: u32,
    as_json: bool,
) -> String {
    if as_json {
        return json_text(&json!({
            "user": user,
            "set": mechanisms.iter().map(|m| json!({
                "mechanism": m.mechanism().name(),
                "iterations": iterations,
            })).collect::<Vec<_>>(),
        }));
    }
    format!(
        "Set the {} password of user {user:?} ({iterations} iterations).\n",
        names(mechanisms).join(" and ")
    )
}

pub fn render_delete(user: &str, mechanisms: &[ScramMechanism], as_json: bool) -> String {
    if as_json {
        return json_text(&json!({ "user": user, "deleted": names(mechanisms) }));
    }
    format!(
        "Deleted the {} credential{} of user {user:?}.\n",
        names(mechanisms).join(" and "),
        if mechanisms.len() == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::scram_credential::ScramCredential;

    #[test]
    fn mechanisms_parse_by_their_sasl_names() {
        assert_eq!(
            parse_scram_mechanism("SCRAM-SHA-256"),
            Ok(ScramMechanism::Sha256)
        );
        assert_eq!(
            parse_scram_mechanism("SCRAM-SHA-512"),
            Ok(ScramMechanism::Sha512)
        );
        assert!(parse_scram_mechanism("PLAIN").is_err());
        assert!(parse_scram_mechanism("SHA-512").is_err());
        assert_eq!(mechanism_name(2), "SCRAM-SHA-512");
        assert_eq!(mechanism_name(7), "UNKNOWN(7)");
        assert_eq!(
            distinct(&[ScramMechanism::Sha512, ScramMechanism::Sha512]),
            vec![ScramMechanism::Sha512]
        );
    }

    #[test]
    fn a_password_is_its_text_less_one_line_break() {
        assert_eq!(password_of(b"s3cret\n", "f").unwrap(), "s3cret");
        assert_eq!(password_of(b"s3cret\r\n", "f").unwrap(), "s3cret");
        assert_eq!(password_of(b" with spaces ", "f").unwrap(), " with spaces ");
        for bad in [&b""[..], b"\n", b"a\nb\n", b"\xff\xfe"] {
            assert!(
                matches!(password_of(bad, "f"), Err(CliError::Usage(_))),
                "{bad:?}"
            );
        }
        let long = vec![b'x'; PASSWORD_BYTES_MAX + 1];
        assert!(password_of(&long, "f").is_err());
        assert!(password_of(&long[..PASSWORD_BYTES_MAX], "f").is_ok());
    }

    #[test]
    fn the_upsertion_carries_what_the_broker_derives_the_keys_from() {
        let salt = [7u8; SALT_RANDOM_BYTES];
        let u = upsertion("alice", ScramMechanism::Sha512, "pw", &salt, 8192).unwrap();
        assert_eq!((u.mechanism, u.iterations), (2, 8192));
        // The broker's derivation from what we send equals the credential
        // of the password itself.
        let from_request = ScramCredential::from_salted_password(
            ScramMechanism::Sha512,
            &u.salt,
            &u.salted_password,
            8192,
        )
        .unwrap();
        let direct =
            ScramCredential::from_password(ScramMechanism::Sha512, "pw", &salt, 8192).unwrap();
        assert_eq!(from_request, direct);
        assert!(upsertion("alice", ScramMechanism::Sha256, "pw", &salt, 100).is_err());
    }

    #[test]
    fn tables_and_json_say_the_same() {
        let users = vec![
            UserCredentials {
                user: "alice".into(),
                credentials: vec![(1, 4096), (2, 8192)],
            },
            UserCredentials {
                user: "bob".into(),
                credentials: vec![(2, 4096)],
            },
        ];
        assert_eq!(
            render_list(&users, false),
            "USER   MECHANISM      ITERATIONS\n\
             alice  SCRAM-SHA-256        4096\n\
             alice  SCRAM-SHA-512        8192\n\
             bob    SCRAM-SHA-512        4096\n"
        );
        let v: Value = serde_json::from_str(&render_list(&users, true)).unwrap();
        assert_eq!(
            v["users"][0]["credentials"][1]["mechanism"],
            "SCRAM-SHA-512"
        );
        assert_eq!(v["users"][0]["credentials"][1]["iterations"], 8192);
        assert!(render_list(&[], false).contains("pinlog user set-password"));
        assert_eq!(
            render_set("alice", &[ScramMechanism::Sha256], 4096, false),
            "Set the SCRAM-SHA-256 password of user \"alice\" (4096 iterations).\n"
        );
        let v: Value = serde_json::from_str(&render_delete(
            "bob",
            &[ScramMechanism::Sha256, ScramMechanism::Sha512],
            true,
        ))
        .unwrap();
        assert_eq!(v["deleted"][1], "SCRAM-SHA-512");
    }
}
