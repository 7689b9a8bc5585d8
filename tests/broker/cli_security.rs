//! `pinlog acl`, `pinlog user` and `pinlog quota` against a secured
//! broker: one SASL_SSL listener (a certificate from `support::test_ca`),
//! PLAIN and both SCRAM mechanisms, Kafka's `StandardAuthorizer` rules
//! with `super.users=User:admin` (a PLAIN user from the broker's
//! configuration, the first administrator) and
//! `allow.everyone.if.no.acl.found=false`.
//!
//! Every command runs as a user would run it, with `--command-config`
//! naming Kafka client properties. Each change is checked in the table and
//! in the `--json` document, and where it has an effect, by that effect:
//! a password set with `pinlog user set-password` logs the CLI in as that
//! user (and stops doing so once deleted); an ACL added with `pinlog acl
//! add` shows the user the topic (and hides it once removed). A user who
//! is not a super user is refused, with the broker's error and a next
//! step. Needs `openssl`, no Kafka client.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::cli::{expect_exit, json, run_pinlog, table_rows};
use support::test_ca::TestCa;
use support::{free_port, write_file, Broker, BrokerOpts, CmdOutput};

const TOPIC: &str = "orders";
const ADMIN_PASSWORD: &str = "admin-secret";
const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin=\"admin-secret\";";

/// The broker and the files its clients use.
struct Secured {
    broker: Broker,
    sasl_ssl: String,
    /// The certificates, and the directory for the properties files.
    ca: TestCa,
}

impl Secured {
    fn start() -> Secured {
        let ca = TestCa::new("pinlog test CA");
        let server = ca.issue("broker", "/CN=localhost");
        let port = free_port();
        let broker = Broker::start(
            BrokerOpts::new()
                .setting(
                    "listeners",
                    format!("PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:{port}"),
                )
                .setting(
                    "sasl.enabled.mechanisms",
                    "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                )
                .setting("sasl.jaas.config", PLAIN_JAAS)
                .setting("ssl.keystore.location", server.pem.display().to_string())
                .setting(
                    "authorizer.class.name",
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                )
                .setting("super.users", "User:admin")
                .setting("allow.everyone.if.no.acl.found", false)
                .setting("auto.create.topics.enable", false),
        );
        Secured {
            broker,
            sasl_ssl: format!("127.0.0.1:{port}"),
            ca,
        }
    }

    /// Kafka client properties that log `user` in with `mechanism`.
    fn properties(&self, mechanism: &str, user: &str, password: &str) -> PathBuf {
        let module = if mechanism == "PLAIN" {
            "plain.PlainLoginModule"
        } else {
            "scram.ScramLoginModule"
        };
        write_file(
            self.ca.path(),
            &format!("{user}-{mechanism}-{password}.properties"),
            format!(
                "security.protocol=SASL_SSL\nssl.truststore.type=PEM\n\
                 ssl.truststore.location={}\nsasl.mechanism={mechanism}\n\
                 sasl.jaas.config=org.apache.kafka.common.security.{module} required \
                 username=\"{user}\" password=\"{password}\";\n",
                self.ca.ca().display()
            )
            .as_bytes(),
        )
    }

    /// `pinlog ARGS` on the SASL_SSL listener as `properties` say.
    fn run(&self, properties: &Path, args: &[&str]) -> CmdOutput {
        self.run_with_stdin(properties, args, None)
    }

    fn run_with_stdin(&self, properties: &Path, args: &[&str], stdin: Option<&[u8]>) -> CmdOutput {
        let config = properties.display().to_string();
        let mut all = args.to_vec();
        all.extend([
            "--bootstrap-server",
            &self.sasl_ssl,
            "--command-config",
            &config,
        ]);
        run_pinlog(&all, stdin)
    }
}

/// The stdout of a run that succeeded.
fn ok(out: CmdOutput) -> String {
    expect_exit(&out, 0);
    out.stdout
}

/// The stderr of a run that failed with exit code 1.
fn refused(out: CmdOutput) -> String {
    expect_exit(&out, 1);
    assert!(out.stdout.is_empty(), "{out}");
    out.stderr
}

fn rows(text: &str, header: &str) -> Vec<Vec<String>> {
    table_rows(text, header)
}

fn strings(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// The topics `topic list --json` shows.
fn topic_names(listed: &Value) -> Vec<String> {
    listed["topics"]
        .as_array()
        .expect("a topics array")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_string())
        .collect()
}

/// A command line refused as a usage error: its arguments, its stdin, and
/// what stderr says.
type UsageCase<'a> = (&'a [&'a str], Option<&'a [u8]>, &'a str);

#[test]
fn bad_security_command_lines_exit_2_without_a_broker() {
    // A closed port: these are refused before any connection is tried.
    let nowhere = format!("127.0.0.1:{}", free_port());
    let dir = tempfile::tempdir().expect("a directory");
    let missing = dir.path().join("no-such-file").display().to_string();
    let two_lines = write_file(dir.path(), "two-lines", b"first\nsecond\n")
        .display()
        .to_string();
    let cases: &[UsageCase] = &[
        (
            &[
                "acl",
                "add",
                "--allow-principal",
                "User:a",
                "--operation",
                "Read",
            ],
            None,
            "name a resource",
        ),
        (
            &[
                "acl",
                "add",
                "--group",
                "g",
                "--allow-principal",
                "User:a",
                "--operation",
                "Write",
            ],
            None,
            "Group ACLs take the operations Read, Describe, Delete, DescribeConfigs, AlterConfigs, All",
        ),
        (
            &[
                "acl",
                "add",
                "--topic",
                "t",
                "--allow-principal",
                "User:a",
                "--operation",
                "Reed",
            ],
            None,
            "IdempotentWrite",
        ),
        (
            &["acl", "remove", "--topic", "t", "--operation", "Read"],
            None,
            "--allow-principal",
        ),
        (
            &[
                "user",
                "set-password",
                "alice",
                "--mechanism",
                "SCRAM-SHA-256",
            ],
            Some(b"\n"),
            "holds no password",
        ),
        (
            &[
                "user",
                "set-password",
                "alice",
                "--mechanism",
                "SCRAM-SHA-256",
                "--password-file",
                &missing,
            ],
            None,
            "cannot read --password-file",
        ),
        (
            &[
                "user",
                "set-password",
                "alice",
                "--mechanism",
                "SCRAM-SHA-256",
                "--password-file",
                &two_lines,
            ],
            None,
            "more than one line",
        ),
        (
            &[
                "user",
                "set-password",
                "alice",
                "--mechanism",
                "SCRAM-SHA-256",
                "--iterations",
                "1000",
            ],
            Some(b"pw"),
            "4096..=16384",
        ),
        (
            &["quota", "set", "--producer-byte-rate", "1024"],
            None,
            "--user",
        ),
        (
            &["quota", "remove", "producer-byte-rate", "--user", "alice"],
            None,
            "producer_byte_rate, consumer_byte_rate",
        ),
    ];
    for (args, stdin, says) in cases {
        let mut all = args.to_vec();
        all.extend(["--bootstrap-server", &nowhere]);
        let out = run_pinlog(&all, *stdin);
        expect_exit(&out, 2);
        assert!(
            out.stderr.contains(says),
            "{args:?} should say {says:?}: {out}"
        );
        assert!(!out.stderr.contains("cannot connect"), "{out}");
    }
}

#[test]
fn acl_user_and_quota_commands_against_a_secured_broker() {
    let mut s = Secured::start();
    let admin = s.properties("PLAIN", "admin", ADMIN_PASSWORD);
    ok(s.run(&admin, &["topic", "create", TOPIC]));

    // ---------------------------------------------------------- users
    assert!(ok(s.run(&admin, &["user", "list"])).contains("No users with SCRAM credentials"));
    assert_eq!(
        json(&s.run(&admin, &["user", "list", "--json"]))["users"],
        json!([])
    );
    let out = ok(s.run_with_stdin(
        &admin,
        &[
            "user",
            "set-password",
            "alice",
            "--mechanism",
            "SCRAM-SHA-512",
            "--iterations",
            "8192",
        ],
        Some(b"alice-secret\n"),
    ));
    assert_eq!(
        out,
        "Set the SCRAM-SHA-512 password of user \"alice\" (8192 iterations).\n"
    );
    let bob_password = write_file(s.ca.path(), "bob.password", b"bob-secret\n");
    let set = json(&s.run(
        &admin,
        &[
            "user",
            "set-password",
            "bob",
            "--mechanism",
            "SCRAM-SHA-256",
            "--mechanism",
            "SCRAM-SHA-512",
            "--password-file",
            &bob_password.display().to_string(),
            "--json",
        ],
    ));
    assert_eq!(
        set,
        json!({"user": "bob", "set": [
            {"mechanism": "SCRAM-SHA-256", "iterations": 4096},
            {"mechanism": "SCRAM-SHA-512", "iterations": 4096},
        ]})
    );
    assert_eq!(
        rows(&ok(s.run(&admin, &["user", "list"])), "USER"),
        vec![
            strings(&["alice", "SCRAM-SHA-512", "8192"]),
            strings(&["bob", "SCRAM-SHA-256", "4096"]),
            strings(&["bob", "SCRAM-SHA-512", "4096"]),
        ]
    );
    assert_eq!(
        json(&s.run(&admin, &["user", "list", "alice", "--json"])),
        json!({"users": [{"name": "alice", "credentials": [
            {"mechanism": "SCRAM-SHA-512", "iterations": 8192},
        ]}]})
    );
    let err = refused(s.run(&admin, &["user", "list", "nobody"]));
    assert!(err.contains("user \"nobody\": RESOURCE_NOT_FOUND"), "{err}");
    assert!(err.contains("pinlog user set-password nobody"), "{err}");

    // The password works: the CLI logs in as alice with SCRAM-SHA-512,
    // and sees no topic, having no ACL yet.
    let alice = s.properties("SCRAM-SHA-512", "alice", "alice-secret");
    let listed = json(&s.run(&alice, &["topic", "list", "--json"]));
    assert_eq!(topic_names(&listed), Vec::<String>::new());
    let err = refused(s.run(
        &s.properties("SCRAM-SHA-512", "alice", "wrong"),
        &["topic", "list"],
    ));
    assert!(
        err.contains("refused the SASL SCRAM-SHA-512 login of alice"),
        "{err}"
    );
    // Alice may not administer: the broker's error, and what to do.
    let err = refused(s.run(&alice, &["acl", "list"]));
    assert!(err.contains("CLUSTER_AUTHORIZATION_FAILED"), "{err}");
    assert!(err.contains("super.users"), "{err}");
    // Nor read the quotas and credentials (DESCRIBE_CONFIGS and DESCRIBE
    // on the cluster).
    for args in [&["quota", "list"][..], &["user", "list"]] {
        let err = refused(s.run(&alice, args));
        assert!(
            err.contains("CLUSTER_AUTHORIZATION_FAILED"),
            "{args:?}: {err}"
        );
    }

    // ----------------------------------------------------------- ACLs
    assert!(ok(s.run(&admin, &["acl", "list"])).contains("No ACLs match"));
    let out = ok(s.run(
        &admin,
        &[
            "acl",
            "add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Describe",
            "--operation",
            "Read",
            "--topic",
            TOPIC,
        ],
    ));
    assert!(out.starts_with("Added 2 ACLs:\n"), "{out}");
    assert_eq!(
        rows(&out, "RESOURCE-TYPE"),
        vec![
            strings(&[
                "TOPIC",
                TOPIC,
                "LITERAL",
                "User:alice",
                "*",
                "READ",
                "ALLOW"
            ]),
            strings(&[
                "TOPIC",
                TOPIC,
                "LITERAL",
                "User:alice",
                "*",
                "DESCRIBE",
                "ALLOW"
            ]),
        ]
    );
    let added = json(&s.run(
        &admin,
        &[
            "acl",
            "add",
            "--deny-principal",
            "User:alice",
            "--operation",
            "Write",
            "--topic",
            "orders-",
            "--resource-pattern-type",
            "prefixed",
            "--json",
        ],
    ));
    assert_eq!(
        added,
        json!({"added": [{
            "resource_type": "TOPIC", "resource_name": "orders-", "pattern_type": "PREFIXED",
            "principal": "User:alice", "host": "*", "operation": "WRITE", "permission": "DENY",
        }]})
    );
    ok(s.run(
        &admin,
        &[
            "acl",
            "add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--group",
            "orders-app",
        ],
    ));
    let all = rows(&ok(s.run(&admin, &["acl", "list"])), "RESOURCE-TYPE");
    assert_eq!(all.len(), 4, "{all:?}");
    let count = |args: &[&str]| {
        let mut args = args.to_vec();
        args.push("--json");
        json(&s.run(&admin, &args))["acls"]
            .as_array()
            .expect("an acls array")
            .len()
    };
    assert_eq!(count(&["acl", "list", "--topic", TOPIC]), 2, "literal only");
    assert_eq!(
        count(&[
            "acl",
            "list",
            "--topic",
            "orders-eu",
            "--resource-pattern-type",
            "match",
        ]),
        1,
        "the prefixed ACL applies to orders-eu"
    );
    assert_eq!(count(&["acl", "list", "--principal", "User:alice"]), 4);
    assert_eq!(count(&["acl", "list", "--principal", "User:bob"]), 0);
    assert_eq!(
        rows(
            &ok(s.run(&admin, &["acl", "list", "--group", "orders-app"])),
            "RESOURCE-TYPE"
        ),
        vec![strings(&[
            "GROUP",
            "orders-app",
            "LITERAL",
            "User:alice",
            "*",
            "READ",
            "ALLOW"
        ])]
    );
    // The ACLs apply: alice sees the topic now.
    let listed = json(&s.run(&alice, &["topic", "list", "--json"]));
    assert_eq!(topic_names(&listed), vec![TOPIC.to_string()]);

    // Removing shows what was removed; Any is every operation.
    let out = ok(s.run(
        &admin,
        &[
            "acl",
            "remove",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Any",
            "--topic",
            TOPIC,
        ],
    ));
    assert!(out.starts_with("Removed 2 ACLs:\n"), "{out}");
    assert_eq!(rows(&out, "RESOURCE-TYPE").len(), 2, "{out}");
    let removed = json(&s.run(
        &admin,
        &[
            "acl",
            "remove",
            "--deny-principal",
            "User:alice",
            "--operation",
            "Write",
            "--topic",
            "orders-",
            "--resource-pattern-type",
            "prefixed",
            "--json",
        ],
    ));
    assert_eq!(removed["removed"][0]["permission"], "DENY");
    assert_eq!(removed["removed"].as_array().map(Vec::len), Some(1));
    let out = ok(s.run(
        &admin,
        &[
            "acl",
            "remove",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--topic",
            TOPIC,
        ],
    ));
    assert!(out.contains("Removed no ACLs: none matched"), "{out}");
    assert_eq!(count(&["acl", "list"]), 1, "the group's ACL is left");
    let listed = json(&s.run(&alice, &["topic", "list", "--json"]));
    assert_eq!(topic_names(&listed), Vec::<String>::new());

    // --------------------------------------------------------- quotas
    assert!(ok(s.run(&admin, &["quota", "list"])).contains("No quotas match"));
    let out = ok(s.run(
        &admin,
        &[
            "quota",
            "set",
            "--user",
            "alice",
            "--producer-byte-rate",
            "1048576",
            "--consumer-byte-rate",
            "2097152",
        ],
    ));
    assert_eq!(
        out,
        "Set the quotas of user=alice: producer_byte_rate=1048576, consumer_byte_rate=2097152.\n"
    );
    assert_eq!(
        json(&s.run(
            &admin,
            &[
                "quota",
                "set",
                "--user-default",
                "--request-percentage",
                "50",
                "--json"
            ],
        )),
        json!({"entity": {"user": null}, "set": {"request_percentage": 50}})
    );
    ok(s.run(
        &admin,
        &[
            "quota",
            "set",
            "--user",
            "alice",
            "--client-id-default",
            "--controller-mutation-rate",
            "2.5",
        ],
    ));
    assert_eq!(
        rows(&ok(s.run(&admin, &["quota", "list"])), "USER"),
        vec![
            strings(&["alice", "-", "consumer_byte_rate", "2097152"]),
            strings(&["alice", "-", "producer_byte_rate", "1048576"]),
            strings(&["alice", "<default>", "controller_mutation_rate", "2.5"]),
            strings(&["<default>", "-", "request_percentage", "50"]),
        ]
    );
    let alices = json(&s.run(&admin, &["quota", "list", "--user", "alice", "--json"]));
    assert_eq!(
        alices["quotas"].as_array().map(Vec::len),
        Some(2),
        "{alices}"
    );
    assert_eq!(
        json(&s.run(&admin, &["quota", "list", "--user-default", "--json"])),
        json!({"quotas": [{"entity": {"user": null}, "values": {"request_percentage": 50}}]})
    );
    let out = ok(s.run(
        &admin,
        &["quota", "remove", "producer_byte_rate", "--user", "alice"],
    ));
    assert_eq!(
        out,
        "Removed producer_byte_rate from the quotas of user=alice.\n"
    );
    let alices = json(&s.run(&admin, &["quota", "list", "--user", "alice", "--json"]));
    assert_eq!(
        alices["quotas"][0],
        json!({"entity": {"user": "alice"}, "values": {"consumer_byte_rate": 2097152}})
    );

    // ---------------------------------------------- deleting a user
    let bob_256 = s.properties("SCRAM-SHA-256", "bob", "bob-secret");
    let bob_512 = s.properties("SCRAM-SHA-512", "bob", "bob-secret");
    ok(s.run(&bob_256, &["topic", "list"]));
    let out = ok(s.run(
        &admin,
        &["user", "delete", "bob", "--mechanism", "SCRAM-SHA-256"],
    ));
    assert_eq!(
        out,
        "Deleted the SCRAM-SHA-256 credential of user \"bob\".\n"
    );
    let err = refused(s.run(&bob_256, &["topic", "list"]));
    assert!(
        err.contains("refused the SASL SCRAM-SHA-256 login of bob"),
        "{err}"
    );
    ok(s.run(&bob_512, &["topic", "list"]));
    let err = refused(s.run(
        &admin,
        &["user", "delete", "bob", "--mechanism", "SCRAM-SHA-256"],
    ));
    assert!(err.contains("RESOURCE_NOT_FOUND"), "{err}");
    assert!(err.contains("pinlog user list"), "{err}");
    assert_eq!(
        json(&s.run(
            &admin,
            &[
                "user",
                "delete",
                "bob",
                "--mechanism",
                "SCRAM-SHA-512",
                "--json"
            ],
        )),
        json!({"user": "bob", "deleted": ["SCRAM-SHA-512"]})
    );
    let users = json(&s.run(&admin, &["user", "list", "--json"]));
    assert_eq!(users["users"].as_array().map(Vec::len), Some(1), "{users}");
    assert_eq!(users["users"][0]["name"], "alice");

    s.broker.stop();
}
