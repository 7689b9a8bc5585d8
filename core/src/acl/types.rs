//! The four enumerations of an ACL, with Kafka's wire codes and names.
//!
//! A code Kafka does not know decodes as `Unknown` (Kafka's `fromCode`), so
//! a record or request from a newer release is read, and matches nothing,
//! rather than refused. Each value has two names: Kafka's enum name
//! (`TRANSACTIONAL_ID`, what `kafka-acls.sh --list` prints) and the
//! Pascal-case name of `SecurityUtils` (`TransactionalId`, what the audit
//! log and the CLI's `--operation` use). Parsing accepts either, in any
//! case, as Kafka's `fromString` and `SecurityUtils` together do.

use std::fmt;

/// One enumeration: its variants with their code, enum name and Pascal-case
/// name, and the conversions every one of the four needs.
macro_rules! acl_enum {
    (
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$vdoc:meta])* $variant:ident = $code:literal, $kafka:literal, $pascal:literal; )+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vdoc])* $variant, )+
        }

        impl $name {
            /// Every value, in code order.
            pub const VALUES: &'static [$name] = &[$($name::$variant),+];

            /// The wire code (an INT8 in every Kafka message and record).
            pub fn code(self) -> i8 {
                match self {
                    $( $name::$variant => $code, )+
                }
            }

            /// The value of a wire code; `Unknown` for a code Kafka does
            /// not define.
            pub fn from_code(code: i8) -> $name {
                match code {
                    $( $code => $name::$variant, )+
                    _ => $name::Unknown,
                }
            }

            /// Kafka's enum name, as `kafka-acls.sh --list` prints it.
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $kafka, )+
                }
            }

            /// The Pascal-case name of Kafka's `SecurityUtils`, as the
            /// CLI's options and the audit log spell it.
            pub fn pascal_name(self) -> &'static str {
                match self {
                    $( $name::$variant => $pascal, )+
                }
            }

            /// The value named `name` in either spelling, in any case;
            /// `Unknown` when no value has that name.
            pub fn from_name(name: &str) -> $name {
                $name::VALUES
                    .iter()
                    .copied()
                    .find(|v| {
                        v.name().eq_ignore_ascii_case(name)
                            || v.pascal_name().eq_ignore_ascii_case(name)
                    })
                    .unwrap_or($name::Unknown)
            }

            /// Whether this is the value of a code Kafka does not define.
            pub fn is_unknown(self) -> bool {
                self == $name::Unknown
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

acl_enum! {
    /// What an ACL protects (Kafka's `ResourceType`).
    ResourceType {
        Unknown = 0, "UNKNOWN", "Unknown";
        /// Only in filters: every resource type.
        Any = 1, "ANY", "Any";
        Topic = 2, "TOPIC", "Topic";
        Group = 3, "GROUP", "Group";
        /// The one resource named [`CLUSTER_NAME`](super::binding::CLUSTER_NAME).
        Cluster = 4, "CLUSTER", "Cluster";
        TransactionalId = 5, "TRANSACTIONAL_ID", "TransactionalId";
        DelegationToken = 6, "DELEGATION_TOKEN", "DelegationToken";
        User = 7, "USER", "User";
    }
}

acl_enum! {
    /// How an ACL's resource name matches (Kafka's `PatternType`, KIP-290).
    PatternType {
        Unknown = 0, "UNKNOWN", "Unknown";
        /// Only in filters: any pattern type, the name compared exactly.
        Any = 1, "ANY", "Any";
        /// Only in filters: every pattern that would apply to the literal
        /// name (the name itself, the `*` wildcard and its prefixes).
        Match = 2, "MATCH", "Match";
        /// The name exactly, or every name when it is `*`.
        Literal = 3, "LITERAL", "Literal";
        /// Every name that starts with it.
        Prefixed = 4, "PREFIXED", "Prefixed";
    }
}

acl_enum! {
    /// What an ACL allows or denies (Kafka's `AclOperation`).
    AclOperation {
        Unknown = 0, "UNKNOWN", "Unknown";
        /// Only in filters: every operation.
        Any = 1, "ANY", "Any";
        /// In an ACL: every operation, allowed or denied.
        All = 2, "ALL", "All";
        Read = 3, "READ", "Read";
        Write = 4, "WRITE", "Write";
        Create = 5, "CREATE", "Create";
        Delete = 6, "DELETE", "Delete";
        Alter = 7, "ALTER", "Alter";
        Describe = 8, "DESCRIBE", "Describe";
        ClusterAction = 9, "CLUSTER_ACTION", "ClusterAction";
        DescribeConfigs = 10, "DESCRIBE_CONFIGS", "DescribeConfigs";
        AlterConfigs = 11, "ALTER_CONFIGS", "AlterConfigs";
        IdempotentWrite = 12, "IDEMPOTENT_WRITE", "IdempotentWrite";
        CreateTokens = 13, "CREATE_TOKENS", "CreateTokens";
        DescribeTokens = 14, "DESCRIBE_TOKENS", "DescribeTokens";
        /// KIP-939: a transactional id's two-phase commit (Kafka 4.1).
        TwoPhaseCommit = 15, "TWO_PHASE_COMMIT", "TwoPhaseCommit";
    }
}

acl_enum! {
    /// Whether an ACL allows or denies (Kafka's `AclPermissionType`).
    AclPermissionType {
        Unknown = 0, "UNKNOWN", "Unknown";
        /// Only in filters: both.
        Any = 1, "ANY", "Any";
        Deny = 2, "DENY", "Deny";
        Allow = 3, "ALLOW", "Allow";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas_and_round_trip() {
        assert_eq!(ResourceType::TransactionalId.code(), 5);
        assert_eq!(ResourceType::User.code(), 7);
        assert_eq!(PatternType::Prefixed.code(), 4);
        assert_eq!(AclOperation::IdempotentWrite.code(), 12);
        assert_eq!(AclOperation::TwoPhaseCommit.code(), 15);
        assert_eq!(AclPermissionType::Allow.code(), 3);
        for (i, v) in ResourceType::VALUES.iter().enumerate() {
            assert_eq!(v.code(), i as i8, "{v}: codes are dense from 0");
            assert_eq!(ResourceType::from_code(v.code()), *v);
        }
        for (i, v) in PatternType::VALUES.iter().enumerate() {
            assert_eq!(v.code(), i as i8);
            assert_eq!(PatternType::from_code(v.code()), *v);
        }
        for (i, v) in AclOperation::VALUES.iter().enumerate() {
            assert_eq!(v.code(), i as i8);
            assert_eq!(AclOperation::from_code(v.code()), *v);
        }
        for (i, v) in AclPermissionType::VALUES.iter().enumerate() {
            assert_eq!(v.code(), i as i8);
            assert_eq!(AclPermissionType::from_code(v.code()), *v);
        }
    }

    #[test]
    fn a_code_kafka_does_not_define_is_unknown() {
        assert_eq!(ResourceType::from_code(8), ResourceType::Unknown);
        assert_eq!(PatternType::from_code(-1), PatternType::Unknown);
        assert_eq!(AclOperation::from_code(16), AclOperation::Unknown);
        assert_eq!(AclPermissionType::from_code(4), AclPermissionType::Unknown);
        assert!(AclOperation::from_code(99).is_unknown());
    }

    #[test]
    fn names_parse_in_both_of_kafkas_spellings() {
        assert_eq!(ResourceType::TransactionalId.name(), "TRANSACTIONAL_ID");
        assert_eq!(
            ResourceType::TransactionalId.pascal_name(),
            "TransactionalId"
        );
        assert_eq!(
            AclOperation::DescribeConfigs.to_string(),
            "DESCRIBE_CONFIGS"
        );
        for name in [
            "TRANSACTIONAL_ID",
            "transactional_id",
            "TransactionalId",
            "TRANSACTIONALID",
        ] {
            assert_eq!(
                ResourceType::from_name(name),
                ResourceType::TransactionalId,
                "{name}"
            );
        }
        assert_eq!(
            AclOperation::from_name("IdempotentWrite"),
            AclOperation::IdempotentWrite
        );
        assert_eq!(AclOperation::from_name("read"), AclOperation::Read);
        assert_eq!(
            AclPermissionType::from_name("Allow"),
            AclPermissionType::Allow
        );
        assert_eq!(PatternType::from_name("prefixed"), PatternType::Prefixed);
        assert_eq!(AclOperation::from_name("Reed"), AclOperation::Unknown);
    }
}
