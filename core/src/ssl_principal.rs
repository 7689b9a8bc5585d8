//! `ssl.principal.mapping.rules`: from a client certificate's subject (its
//! RFC 2253 distinguished name) to the name of its `User:` principal, with
//! Kafka's rule language:
//!
//! ```text
//! RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=(.*?),.*$/$1/, DEFAULT
//! ```
//!
//! Rules are tried in order. A `RULE:pattern/replacement/[L|U]` applies
//! when the pattern matches the whole name; the replacement's `$1`... name
//! the pattern's groups, and `L` or `U` changes the result's case. `DEFAULT`
//! keeps the name as it is. A name no rule applies to fails the
//! authentication, as in Kafka.

use regex::Regex;

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        /// The pattern anchored at both ends: a rule applies only when it
        /// matches the whole name (Java's `Matcher.matches`).
        whole: Regex,
        /// The replacement in the regex crate's syntax.
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// Parsed `ssl.principal.mapping.rules`.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

/// Reads up to the next unescaped `/`; returns the text (escapes kept) and
/// the rest after the slash.
fn until_slash(s: &str) -> Option<(&str, &str)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '/' => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

/// A Java replacement (`$1`, `\$`) in the regex crate's syntax (`${1}`,
/// `$$`), so that `$1a` stays group 1 followed by `a`, as in Java.
fn rust_replacement(java: &str) -> String {
    let mut out = String::with_capacity(java.len() + 4);
    let mut chars = java.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => {}
            },
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    out.push_str("$$");
                } else {
                    out.push_str(&format!("${{{digits}}}"));
                }
            }
            other => out.push(other),
        }
    }
    out
}

impl PrincipalMapper {
    /// Parses the rules; the error names the rule that cannot be read.
    pub fn parse(text: &str) -> Result<PrincipalMapper, String> {
        let mut rules = Vec::new();
        let mut rest = text.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        while !rest.is_empty() {
            let (rule, after) = if let Some(after) = rest.strip_prefix("DEFAULT") {
                (Rule::Default, after)
            } else if let Some(body) = rest.strip_prefix("RULE:") {
                let invalid = || {
                    format!("invalid rule {rest:?}: write RULE:pattern/replacement/ with an optional L or U after the last slash")
                };
                let (pattern, after) = until_slash(body).ok_or_else(invalid)?;
                let (replacement, after) = until_slash(after).ok_or_else(invalid)?;
                let (case, after) = match after.chars().next() {
                    Some('L') => (Case::Lower, &after[1..]),
                    Some('U') => (Case::Upper, &after[1..]),
                    _ => (Case::Keep, after),
                };
                let pattern = pattern.replace("\\/", "/");
                let whole = Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("invalid pattern {pattern:?} in a rule: {e}"))?;
                (
                    Rule::Replace {
                        whole,
                        replacement: rust_replacement(&replacement.replace("\\/", "/")),
                        case,
                    },
                    after,
                )
            } else {
                return Err(format!(
                    "invalid rule {rest:?}: a rule is DEFAULT or RULE:pattern/replacement/[L|U]"
                ));
            };
            rules.push(rule);
            // A rule ends at a comma or a line break.
            let after = after.trim_start_matches([' ', '\t', '\r']);
            rest = match after.chars().next() {
                None => "",
                Some(',') | Some('\n') => {
                    after.trim_start_matches(|c: char| c.is_whitespace() || c == ',')
                }
                Some(_) => {
                    return Err(format!(
                    "invalid rule: unexpected {after:?} after a rule; separate rules with commas"
                ))
                }
            };
        }
        if rules.is_empty() {
            return Err("no rule given; the default is DEFAULT".to_string());
        }
        Ok(PrincipalMapper { rules })
    }

    /// The principal name for a distinguished name, `None` when no rule
    /// applies (the authentication then fails).
    pub fn name_for(&self, distinguished_name: &str) -> Option<String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Some(distinguished_name.to_string()),
                Rule::Replace {
                    whole,
                    replacement,
                    case,
                } => {
                    let Some(captures) = whole.captures(distinguished_name) else {
                        continue;
                    };
                    let mut name = String::new();
                    captures.expand(replacement, &mut name);
                    return Some(match case {
                        Case::Keep => name,
                        Case::Lower => name.to_lowercase(),
                        Case::Upper => name.to_uppercase(),
                    });
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keeps_the_distinguished_name() {
        let m = PrincipalMapper::parse("DEFAULT").unwrap();
        assert_eq!(
            m.name_for("CN=alice,OU=eng,O=Acme,C=US").as_deref(),
            Some("CN=alice,OU=eng,O=Acme,C=US")
        );
    }

    #[test]
    fn rules_apply_in_order_to_whole_names_with_kafkas_syntax() {
        let m = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,\n RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U, DEFAULT",
        )
        .unwrap();
        assert_eq!(
            m.name_for("CN=Kafka-Broker,OU=ServiceUsers,O=Acme")
                .as_deref(),
            Some("kafka-broker")
        );
        assert_eq!(
            m.name_for("CN=alice,OU=eng,O=Acme").as_deref(),
            Some("ALICE@ENG")
        );
        // The rules match whole names only; DEFAULT catches the rest.
        assert_eq!(m.name_for("CN=bob").as_deref(), Some("CN=bob"));
    }

    #[test]
    fn a_name_no_rule_applies_to_has_no_principal() {
        let m = PrincipalMapper::parse("RULE:^CN=([a-z]+)$/$1/").unwrap();
        assert_eq!(m.name_for("CN=alice").as_deref(), Some("alice"));
        assert_eq!(m.name_for("CN=Alice,O=x"), None);
    }

    #[test]
    fn escaped_slashes_and_dollars() {
        let m = PrincipalMapper::parse(r"RULE:^CN=(.*)\/ops$/$1\$x$1a/").unwrap();
        assert_eq!(m.name_for("CN=svc/ops").as_deref(), Some("svc$xsvca"));
    }

    #[test]
    fn unreadable_rules_are_refused() {
        for bad in [
            "",
            "RULE:^CN=(.*)$",
            "RULE:^CN=(.*)$/$1",
            "DEFAULTS",
            "RULE:([/x/",
            "KERBEROS",
        ] {
            assert!(PrincipalMapper::parse(bad).is_err(), "{bad:?}");
        }
    }
}
