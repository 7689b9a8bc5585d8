//! Kafka's `sasl.jaas.config` value: one or more login modules, each
//!
//! ```text
//! <loginModuleClass> <controlFlag> (<optionName>=<optionValue>)* ;
//! ```
//!
//! tokenized as Kafka's `JaasConfig` sets up Java's `StreamTokenizer`:
//! bytes up to space are whitespace; `;` and `=` stand alone; `"` and `'`
//! quote a value, with backslash escapes (`\"`, `\\`, `\n`, `\t`, octal);
//! `/` starts a comment (`//`, `/* */`, or a lone `/` to the end of the
//! line); every other run of characters is a word. The control flag is one
//! of `required`, `requisite`, `sufficient`, `optional`, in any case.
//!
//! pinlog is stricter than `StreamTokenizer` in one place: a quoted value
//! that reaches a line end or the end of the text is an error, where Java
//! would silently end the value there.
//!
//! [`SaslLogins::from_config`] picks out what the broker uses: PLAIN's
//! `user_<name>` table and its own `username`/`password`, SCRAM's
//! `username`/`password` (the broker's inter-broker credentials), and
//! OAUTHBEARER's options (the unsecured validator's settings).

use std::collections::BTreeMap;
use std::fmt;

use super::plain::PlainUsers;

/// Kafka's `PlainLoginModule`.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// Kafka's `ScramLoginModule`.
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
/// Kafka's `OAuthBearerLoginModule`.
pub const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
/// The prefix of a PLAIN user's option (`PlainServerCallbackHandler`).
pub const PLAIN_USER_PREFIX: &str = "user_";
/// The longest JAAS text parsed: it is an operator's setting, and a bound
/// keeps a runaway file from becoming a runaway table.
pub const JAAS_CONFIG_BYTES_MAX: usize = 1 << 20;

/// A login module's control flag (`LoginModuleControlFlag`). pinlog
/// records it and gives it no meaning: each mechanism has one module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

/// One login module of the config.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasEntry {
    pub login_module: String,
    pub control_flag: ControlFlag,
    /// Kafka keeps the options in a map, so a repeated key's last value
    /// wins; so here.
    pub options: BTreeMap<String, String>,
}

impl fmt::Debug for JaasEntry {
    // Option names only: values are passwords.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JaasEntry")
            .field("login_module", &self.login_module)
            .field("control_flag", &self.control_flag)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Semicolon,
    Equals,
}

/// Parses the text of `sasl.jaas.config` into its login modules.
pub fn parse_jaas_config(text: &str) -> Result<Vec<JaasEntry>, JaasError> {
    if text.len() > JAAS_CONFIG_BYTES_MAX {
        return Err(JaasError::TooLarge { len: text.len() });
    }
    let mut tokens = Tokenizer { text, at: 0 };
    let mut entries = Vec::new();
    while let Some(first) = tokens.next_token()? {
        let login_module = match first {
            Token::Word(w) | Token::Quoted(w) => w,
            other => {
                return Err(JaasError::Unexpected {
                    at: tokens.at,
                    found: other.describe(),
                    expected: "a login module class",
                })
            }
        };
        let control_flag = match tokens.next_token()? {
            None => return Err(JaasError::NoControlFlag { login_module }),
            Some(Token::Word(w) | Token::Quoted(w)) => parse_control_flag(&w)?,
            Some(other) => {
                return Err(JaasError::Unexpected {
                    at: tokens.at,
                    found: other.describe(),
                    expected: "a control flag",
                })
            }
        };
        let mut options = BTreeMap::new();
        loop {
            let key = match tokens.next_token()? {
                None => return Err(JaasError::NotTerminated { login_module }),
                Some(Token::Semicolon) => break,
                Some(Token::Word(k) | Token::Quoted(k)) => k,
                Some(Token::Equals) => {
                    return Err(JaasError::Unexpected {
                        at: tokens.at,
                        found: Token::Equals.describe(),
                        expected: "an option name",
                    })
                }
            };
            if tokens.next_token()? != Some(Token::Equals) {
                return Err(JaasError::NoValue { key });
            }
            match tokens.next_token()? {
                Some(Token::Word(v) | Token::Quoted(v)) => {
                    options.insert(key, v);
                }
                _ => return Err(JaasError::NoValue { key }),
            }
        }
        entries.push(JaasEntry {
            login_module,
            control_flag,
            options,
        });
    }
    if entries.is_empty() {
        return Err(JaasError::NoLoginModule);
    }
    Ok(entries)
}

fn parse_control_flag(flag: &str) -> Result<ControlFlag, JaasError> {
    match flag.to_ascii_uppercase().as_str() {
        "REQUIRED" => Ok(ControlFlag::Required),
        "REQUISITE" => Ok(ControlFlag::Requisite),
        "SUFFICIENT" => Ok(ControlFlag::Sufficient),
        "OPTIONAL" => Ok(ControlFlag::Optional),
        _ => Err(JaasError::InvalidControlFlag {
            flag: flag.to_string(),
        }),
    }
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Word(w) => format!("word {w:?}"),
            Token::Quoted(_) => "a quoted value".to_string(),
            Token::Semicolon => "';'".to_string(),
            Token::Equals => "'='".to_string(),
        }
    }
}

struct Tokenizer<'a> {
    text: &'a str,
    /// Byte offset of the next character.
    at: usize,
}

impl Tokenizer<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    fn next_token(&mut self) -> Result<Option<Token>, JaasError> {
        loop {
            let Some(c) = self.peek() else {
                return Ok(None);
            };
            match c {
                c if c <= ' ' => {
                    self.bump();
                }
                '/' => self.skip_comment()?,
                ';' => {
                    self.bump();
                    return Ok(Some(Token::Semicolon));
                }
                '=' => {
                    self.bump();
                    return Ok(Some(Token::Equals));
                }
                '"' | '\'' => return self.quoted(c).map(Some),
                _ => {
                    let start = self.at;
                    while self
                        .peek()
                        .is_some_and(|c| c > ' ' && !matches!(c, '/' | ';' | '=' | '"' | '\''))
                    {
                        self.bump();
                    }
                    return Ok(Some(Token::Word(self.text[start..self.at].to_string())));
                }
            }
        }
    }

    fn skip_comment(&mut self) -> Result<(), JaasError> {
        let start = self.at;
        self.bump();
        if self.peek() == Some('*') {
            self.bump();
            match self.text[self.at..].find("*/") {
                Some(end) => self.at += end + 2,
                None => return Err(JaasError::UnterminatedComment { at: start }),
            }
        } else {
            // `//` and a lone `/` both run to the end of the line.
            match self.text[self.at..].find(['\n', '\r']) {
                Some(end) => self.at += end,
                None => self.at = self.text.len(),
            }
        }
        Ok(())
    }

    /// A quoted value, with `StreamTokenizer`'s escapes.
    fn quoted(&mut self, quote: char) -> Result<Token, JaasError> {
        let start = self.at;
        self.bump();
        let mut value = String::new();
        loop {
            let c = match self.bump() {
                None | Some('\n' | '\r') => return Err(JaasError::UnterminatedQuote { at: start }),
                Some(c) => c,
            };
            if c == quote {
                return Ok(Token::Quoted(value));
            }
            if c != '\\' {
                value.push(c);
                continue;
            }
            let escaped = self
                .bump()
                .ok_or(JaasError::UnterminatedQuote { at: start })?;
            value.push(match escaped {
                'a' => '\u{7}',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'v' => '\u{b}',
                '0'..='7' => self.octal(escaped),
                other => other,
            });
        }
    }

    /// `StreamTokenizer`'s octal escape: up to three digits, the third only
    /// if the first is 0 to 3 (so the value fits a byte).
    fn octal(&mut self, first: char) -> char {
        let digit = |c: char| c.to_digit(8);
        let mut value = digit(first).unwrap_or(0);
        let max_digits = if first <= '3' { 3 } else { 2 };
        for _ in 1..max_digits {
            match self.peek().and_then(digit) {
                Some(d) => {
                    value = value * 8 + d;
                    self.bump();
                }
                None => break,
            }
        }
        char::from_u32(value).unwrap_or('\u{fffd}')
    }
}

/// A username and password from a login module's options.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginCredentials {
    pub username: String,
    pub password: String,
}

impl fmt::Debug for LoginCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoginCredentials")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// PLAIN's side of the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainLogin {
    /// The `user_<name>` options: whom PLAIN accepts.
    pub users: PlainUsers,
    /// `username` and `password`: what this broker sends as a client
    /// (inter-broker), if both are set.
    pub own: Option<LoginCredentials>,
}

/// What the broker takes from a `sasl.jaas.config`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaslLogins {
    pub plain: Option<PlainLogin>,
    /// ScramLoginModule's `username`/`password`: the broker's inter-broker
    /// SCRAM credentials. The users themselves live in the metadata log.
    pub scram: Option<LoginCredentials>,
    /// OAuthBearerLoginModule's options (`unsecuredValidator*`, ...).
    pub oauthbearer: Option<BTreeMap<String, String>>,
}

impl SaslLogins {
    /// Parses the config and sorts its modules. A module other than
    /// Kafka's three (Kerberos' `Krb5LoginModule`, a custom class) is an
    /// error, as is a module given twice.
    pub fn from_config(text: &str) -> Result<SaslLogins, JaasError> {
        let mut logins = SaslLogins::default();
        for entry in parse_jaas_config(text)? {
            let duplicate = JaasError::DuplicateModule {
                login_module: entry.login_module.clone(),
            };
            match entry.login_module.as_str() {
                PLAIN_LOGIN_MODULE => {
                    if logins.plain.is_some() {
                        return Err(duplicate);
                    }
                    logins.plain = Some(plain_login(&entry.options));
                }
                SCRAM_LOGIN_MODULE => {
                    if logins.scram.is_some() {
                        return Err(duplicate);
                    }
                    // Without both options the module names no credentials;
                    // `Some` records that it was present.
                    logins.scram = Some(credentials(&entry.options).unwrap_or(LoginCredentials {
                        username: String::new(),
                        password: String::new(),
                    }));
                }
                OAUTHBEARER_LOGIN_MODULE => {
                    if logins.oauthbearer.is_some() {
                        return Err(duplicate);
                    }
                    logins.oauthbearer = Some(entry.options);
                }
                _ => {
                    return Err(JaasError::UnsupportedModule {
                        login_module: entry.login_module,
                    })
                }
            }
        }
        Ok(logins)
    }
}

fn credentials(options: &BTreeMap<String, String>) -> Option<LoginCredentials> {
    Some(LoginCredentials {
        username: options.get("username")?.clone(),
        password: options.get("password")?.clone(),
    })
}

fn plain_login(options: &BTreeMap<String, String>) -> PlainLogin {
    let users = options.iter().filter_map(|(key, password)| {
        let user = key.strip_prefix(PLAIN_USER_PREFIX)?;
        Some((user.to_string(), password.clone()))
    });
    PlainLogin {
        users: PlainUsers::new(users),
        own: credentials(options),
    }
}

/// Why a `sasl.jaas.config` does not parse. The texts follow Kafka's
/// `JaasConfig` and add where in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JaasError {
    TooLarge {
        len: usize,
    },
    NoLoginModule,
    NoControlFlag {
        login_module: String,
    },
    InvalidControlFlag {
        flag: String,
    },
    NoValue {
        key: String,
    },
    NotTerminated {
        login_module: String,
    },
    UnterminatedQuote {
        at: usize,
    },
    UnterminatedComment {
        at: usize,
    },
    Unexpected {
        at: usize,
        found: String,
        expected: &'static str,
    },
    UnsupportedModule {
        login_module: String,
    },
    DuplicateModule {
        login_module: String,
    },
}

impl fmt::Display for JaasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JaasError::TooLarge { len } => write!(
                f,
                "JAAS config of {len} bytes exceeds {JAAS_CONFIG_BYTES_MAX}"
            ),
            JaasError::NoLoginModule => f.write_str("Login module not specified in JAAS config"),
            JaasError::NoControlFlag { login_module } => write!(
                f,
                "Login module control flag not specified in JAAS config (after {login_module})"
            ),
            JaasError::InvalidControlFlag { flag } => write!(
                f,
                "Invalid login module control flag '{flag}' in JAAS config (expected required, requisite, sufficient or optional)"
            ),
            JaasError::NoValue { key } => {
                write!(f, "Value not specified for key '{key}' in JAAS config")
            }
            JaasError::NotTerminated { login_module } => write!(
                f,
                "JAAS config entry not terminated by semi-colon (the entry of {login_module})"
            ),
            JaasError::UnterminatedQuote { at } => write!(
                f,
                "JAAS config has a quoted value at byte {at} with no closing quote on its line"
            ),
            JaasError::UnterminatedComment { at } => {
                write!(f, "JAAS config has a /* comment at byte {at} with no */")
            }
            JaasError::Unexpected {
                at,
                found,
                expected,
            } => write!(f, "JAAS config has {found} before byte {at} where {expected} belongs"),
            JaasError::UnsupportedModule { login_module } => write!(
                f,
                "JAAS config names login module {login_module}, which pinlog does not support (it supports {PLAIN_LOGIN_MODULE}, {SCRAM_LOGIN_MODULE} and {OAUTHBEARER_LOGIN_MODULE})"
            ),
            JaasError::DuplicateModule { login_module } => {
                write!(f, "JAAS config names login module {login_module} twice")
            }
        }
    }
}

impl std::error::Error for JaasError {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KAFKA_EXAMPLE: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#;

    #[test]
    fn parses_kafkas_documented_plain_line() {
        let logins = SaslLogins::from_config(KAFKA_EXAMPLE).unwrap();
        let plain = logins.plain.unwrap();
        assert_eq!(plain.users.len(), 2);
        assert!(plain.users.verify("admin", "admin-secret"));
        assert!(plain.users.verify("alice", "alice-secret"));
        assert!(!plain.users.verify("alice", "admin-secret"));
        assert_eq!(
            plain.own,
            Some(LoginCredentials {
                username: "admin".into(),
                password: "admin-secret".into()
            })
        );
        assert_eq!(logins.scram, None);
        assert_eq!(logins.oauthbearer, None);
    }

    #[test]
    fn entries_flags_and_options() {
        let entries = parse_jaas_config(KAFKA_EXAMPLE).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].login_module, PLAIN_LOGIN_MODULE);
        assert_eq!(entries[0].control_flag, ControlFlag::Required);
        assert_eq!(entries[0].options.len(), 4);
        for (flag, expected) in [
            ("REQUIRED", ControlFlag::Required),
            ("Requisite", ControlFlag::Requisite),
            ("sufficient", ControlFlag::Sufficient),
            ("optional", ControlFlag::Optional),
        ] {
            let entries = parse_jaas_config(&format!("a.B {flag};")).unwrap();
            assert_eq!(entries[0].control_flag, expected);
            assert!(entries[0].options.is_empty());
        }
    }

    #[test]
    fn quoting_escapes_comments_and_layout() {
        let text = "  // the broker's users\n\
            org.apache.kafka.common.security.plain.PlainLoginModule\n\
            \trequired /* flag */ username=admin\n\
            password='it\\'s' user_bob=\"a \\\"quoted\\\" \\\\ value\\n\\101\"\n\
            user_eve = unquoted-word_$1 ;\n";
        let entries = parse_jaas_config(text).unwrap();
        let options = &entries[0].options;
        assert_eq!(options["username"], "admin");
        assert_eq!(options["password"], "it's");
        // Two adjacent quoted strings are two tokens: the value is the first.
        assert!(parse_jaas_config("m required password='it''s';").is_err());
        assert_eq!(options["user_bob"], "a \"quoted\" \\ value\nA");
        assert_eq!(options["user_eve"], "unquoted-word_$1");
        let text = "m required a='x;y' b=\"=\";";
        let options = &parse_jaas_config(text).unwrap()[0].options;
        assert_eq!(options["a"], "x;y");
        assert_eq!(options["b"], "=");
    }

    #[test]
    fn scram_and_oauthbearer_lines_are_accepted() {
        let text = format!(
            "{SCRAM_LOGIN_MODULE} required username=\"broker\" password=\"broker-secret\";\n\
             {KAFKA_EXAMPLE}\n\
             {OAUTHBEARER_LOGIN_MODULE} required unsecuredValidatorAllowableClockSkewMs=\"3000\";"
        );
        let logins = SaslLogins::from_config(&text).unwrap();
        assert_eq!(logins.scram.unwrap().username, "broker");
        assert_eq!(logins.plain.unwrap().users.len(), 2);
        assert_eq!(
            logins.oauthbearer.unwrap()["unsecuredValidatorAllowableClockSkewMs"],
            "3000"
        );
        // A SCRAM line alone gives no PLAIN table.
        let logins = SaslLogins::from_config(&format!("{SCRAM_LOGIN_MODULE} required;")).unwrap();
        assert!(logins.plain.is_none());
        assert_eq!(logins.scram.unwrap().username, "");
    }

    #[test]
    fn repeated_option_keeps_the_last_value() {
        let entries = parse_jaas_config("m required user_a=1 user_a=2;").unwrap();
        assert_eq!(entries[0].options["user_a"], "2");
    }

    #[test]
    fn bad_lines_name_what_is_wrong() {
        let cases: &[(&str, &str)] = &[
            ("", "Login module not specified"),
            ("   // only a comment", "Login module not specified"),
            ("m", "control flag not specified"),
            (
                "m mandatory;",
                "Invalid login module control flag 'mandatory'",
            ),
            ("m required user_a=\"x\"", "not terminated by semi-colon"),
            ("m required user_a;", "Value not specified for key 'user_a'"),
            (
                "m required user_a=;",
                "Value not specified for key 'user_a'",
            ),
            ("m required user_a=", "Value not specified for key 'user_a'"),
            ("m required =x;", "where an option name belongs"),
            ("; m required;", "where a login module class belongs"),
            ("m = required;", "where a control flag belongs"),
            ("m required a=\"open;", "no closing quote"),
            ("m required a=\"line\nbreak\";", "no closing quote"),
            ("m required /* open", "no */"),
            (
                "com.sun.security.auth.module.Krb5LoginModule required;",
                "does not support",
            ),
        ];
        for (text, expected) in cases {
            let err = SaslLogins::from_config(text).unwrap_err();
            assert!(err.to_string().contains(expected), "{text:?}: {err}");
        }
        let twice = format!("{KAFKA_EXAMPLE}{KAFKA_EXAMPLE}");
        assert!(matches!(
            SaslLogins::from_config(&twice),
            Err(JaasError::DuplicateModule { .. })
        ));
        let huge = "a".repeat(JAAS_CONFIG_BYTES_MAX + 1);
        assert!(matches!(
            parse_jaas_config(&huge),
            Err(JaasError::TooLarge { .. })
        ));
    }

    #[test]
    fn debug_hides_values() {
        let entries = parse_jaas_config(KAFKA_EXAMPLE).unwrap();
        let logins = SaslLogins::from_config(KAFKA_EXAMPLE).unwrap();
        let shown = format!("{entries:?} {logins:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("user_alice"));
    }

    #[test]
    fn every_truncation_parses_or_fails_cleanly() {
        for end in 0..=KAFKA_EXAMPLE.len() {
            let _ = SaslLogins::from_config(&KAFKA_EXAMPLE[..end]);
        }
    }

    proptest! {
        #[test]
        fn never_panics(text in "[a-z_=;'\"\\\\/* \n0-9\u{e9}]{0,60}") {
            let _ = SaslLogins::from_config(&text);
        }
    }
}
