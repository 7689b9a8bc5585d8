//! Access control (issue 31): Kafka's ACLs and the decisions made from
//! them, as pure functions of the metadata image's ACLs and the
//! authorizer's settings.
//!
//! - `types`: the four enumerations of an ACL with Kafka's wire codes and
//!   names.
//! - `binding`: an ACL (`AclBinding`), the DescribeAcls/DeleteAcls filters,
//!   and CreateAcls's checks with Kafka's errors.
//! - `store`: the ACLs of the metadata image, by id and indexed by
//!   resource for the authorizer.
//! - `authorizer`: Kafka's `StandardAuthorizer` rules (super users, DENY
//!   over ALLOW, implied DESCRIBE, prefixed and wildcard patterns,
//!   `allow.everyone.if.no.acl.found`) and `authorizeByResourceType`.
//! - `matrix`: which operation on which resource each Kafka API needs, and
//!   the error a refusal answers.
//! - `wire`: the ACL APIs' messages as these types, and back.
//!
//! **Architecture Invariant:** nothing here knows a connection or a
//! request: the broker names the principal and the client's host, and
//! gets a yes or no.

pub mod authorizer;
pub mod binding;
pub mod matrix;
pub mod store;
pub mod types;
pub mod wire;

pub use authorizer::{Authorizer, AuthorizerConfig};
pub use binding::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclError,
    ResourcePattern, ResourcePatternFilter,
};
pub use store::{AclId, AclImage};
pub use types::{AclOperation, AclPermissionType, PatternType, ResourceType};
