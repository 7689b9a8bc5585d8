//! SASL on a connection of a SASL listener: the handshake, the
//! mechanism's exchange, and re-authentication (KIP-368), as Kafka's
//! `SaslServerAuthenticator` runs them.
//!
//! The connection hands every request to [`SaslAuthenticator::intercept`]
//! before dispatch. Until the client has authenticated, only ApiVersions,
//! SaslHandshake and SaslAuthenticate are served; anything else closes the
//! connection. A failed authentication is answered SASL_AUTHENTICATION_FAILED
//! with a message that hides why, then the connection closes after
//! `connection.failed.authentication.delay.ms`. An authenticated session
//! with a lifetime (`connections.max.reauth.ms`, an OAUTHBEARER token's
//! expiry) must re-authenticate in band before it ends, or the connection
//! closes at its next request.
//!
//! The mechanisms' decisions are pure (`crate::sasl`); this module
//! draws the SCRAM nonces, reads the clock and the credentials in the
//! metadata image.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};

use crate::broker_config::sasl_settings::{OAuthBearerValidation, SaslSettings};
use crate::metadata::image::MetadataImage;
use crate::protocol::api::ApiKey;
use crate::protocol::codec::Reader;
use crate::protocol::error_code;
use crate::protocol::header::{encode_response_header, RequestHeader};
use crate::protocol::messages::sasl_authenticate::{
    SaslAuthenticateRequest, SaslAuthenticateResponse,
};
use crate::protocol::messages::sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};
use crate::sasl::jwks::{validate_signed, Jwks};
use crate::sasl::jwt::validate_unsecured;
use crate::sasl::oauthbearer::{OAuthBearerServer, OAuthBearerStep};
use crate::sasl::scram::{printable_nonce, ScramServer};
use crate::sasl::scram_credential::{ScramCredential, ScramMechanism};
use crate::sasl::{generic_failure_message, plain, session_lifetime_ms, Mechanism};

/// Random bytes behind a SCRAM server nonce.
const SCRAM_NONCE_RANDOM_BYTES: usize = 24;

/// A SASL listener's settings as its connections use them: built once at
/// startup (the JWKS file read then) and shared by every shard.
pub struct SaslServing {
    pub settings: SaslSettings,
    /// The keys signed OAUTHBEARER tokens are checked against.
    pub jwks: Option<Jwks>,
}

impl SaslServing {
    pub fn new(settings: SaslSettings) -> Result<SaslServing, String> {
        let jwks = match &settings.oauthbearer {
            OAuthBearerValidation::Signed { jwks_file, .. } => {
                let text = std::fs::read_to_string(jwks_file).map_err(|e| {
                    format!(
                        "cannot read the JWKS file {} (sasl.oauthbearer.jwks.endpoint.url): {e}",
                        jwks_file.display()
                    )
                })?;
                Some(Jwks::parse(&text).map_err(|e| {
                    format!("the JWKS file {} is not usable: {e}", jwks_file.display())
                })?)
            }
            OAuthBearerValidation::Unsecured(_) => None,
        };
        Ok(SaslServing { settings, jwks })
    }
}

/// Kafka's ScramMechanism type, as AlterUserScramCredentials and the
/// metadata records carry it.
pub fn scram_mechanism_type(m: ScramMechanism) -> i8 {
    match m {
        ScramMechanism::Sha256 => 1,
        ScramMechanism::Sha512 => 2,
    }
}

/// The mechanism's exchange in progress.
enum Exchange {
    Plain,
    Scram {
        server: Box<ScramServer>,
        username: Option<String>,
    },
    OAuthBearer(OAuthBearerServer),
}

enum State {
    /// Before the handshake (or between sessions of re-authentication).
    AwaitHandshake,
    /// SaslHandshake v0: the next frames are raw tokens, outside the Kafka
    /// protocol.
    RawTokens(Mechanism, Exchange),
    /// SaslHandshake v1: SaslAuthenticate requests follow.
    Authenticating(Mechanism, Exchange),
    Authenticated,
}

/// What the connection does with a request.
pub enum Intercept {
    /// Not a SASL matter: dispatch it as usual.
    Dispatch,
    /// Send this frame (size prefix included).
    Respond(Bytes),
    /// Send this frame, wait, and close (a failed authentication).
    RespondThenClose(Bytes, Duration, String),
    /// Close without an answer, logging why.
    Close(String),
}

pub struct SaslAuthenticator {
    serving: Arc<SaslServing>,
    state: State,
    /// Set once authenticated: `User:<name>`.
    principal: Option<String>,
    mechanism: Option<Mechanism>,
    /// When the session ends (ms since the epoch), if it does.
    session_end_ms: Option<i64>,
    reauthenticating: bool,
    /// Completed authentications on this connection: more than one means
    /// the client re-authenticated.
    authentications: u32,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A framed response: size, header, body.
fn frame(correlation_id: i32, header_version: i16, body: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut w = BytesMut::with_capacity(64);
    w.put_i32(0);
    encode_response_header(&mut w, correlation_id, header_version);
    body(&mut w);
    let size = (w.len() - 4) as i32;
    w[..4].copy_from_slice(&size.to_be_bytes());
    w.freeze()
}

fn raw_frame(token: &[u8]) -> Bytes {
    let mut w = BytesMut::with_capacity(4 + token.len());
    w.put_i32(token.len() as i32);
    w.put_slice(token);
    w.freeze()
}

/// One step of an exchange.
enum Step {
    Continue(Vec<u8>),
    Complete {
        name: String,
        response: Vec<u8>,
        credential_expiry_ms: Option<i64>,
    },
    /// The message the client gets (Kafka's rule: the mechanism's own text
    /// where it is meant for the client, else the generic one).
    Failed {
        client_message: String,
        log: String,
    },
}

impl SaslAuthenticator {
    pub fn new(serving: Arc<SaslServing>) -> SaslAuthenticator {
        SaslAuthenticator {
            serving,
            state: State::AwaitHandshake,
            principal: None,
            mechanism: None,
            session_end_ms: None,
            reauthenticating: false,
            authentications: 0,
        }
    }

    /// How many times the client has authenticated on this connection.
    pub fn authentications(&self) -> u32 {
        self.authentications
    }

    /// `sasl.server.max.receive.size`: the largest frame before
    /// authentication.
    pub fn max_receive_size(&self) -> usize {
        self.serving.settings.max_receive_size
    }

    /// The authenticated principal, once there is one.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// Whether requests may be served: authenticated, and the session has
    /// not ended.
    pub fn is_authenticated(&self) -> bool {
        self.principal.is_some()
    }

    /// Looks at a request before dispatch; `image` holds the SCRAM
    /// credentials.
    pub fn intercept(&mut self, frame_bytes: &Bytes, image: &MetadataImage) -> Intercept {
        let now = now_ms();
        if let State::RawTokens(mechanism, _) = &self.state {
            let mechanism = *mechanism;
            let State::RawTokens(_, mut exchange) =
                std::mem::replace(&mut self.state, State::AwaitHandshake)
            else {
                unreachable!("matched above")
            };
            return match self.step(mechanism, &mut exchange, frame_bytes, image, now) {
                Step::Continue(token) => {
                    self.state = State::RawTokens(mechanism, exchange);
                    Intercept::Respond(raw_frame(&token))
                }
                Step::Complete {
                    name,
                    response,
                    credential_expiry_ms,
                } => {
                    self.complete(mechanism, name, credential_expiry_ms, now);
                    Intercept::Respond(raw_frame(&response))
                }
                Step::Failed { log, .. } => Intercept::RespondThenClose(
                    Bytes::new(),
                    self.failure_delay(),
                    format!("SASL {} authentication failed: {log}", mechanism.name()),
                ),
            };
        }
        let mut r = Reader::new(frame_bytes.clone());
        let Ok(prefix) = RequestHeader::decode_prefix(&mut r) else {
            return Intercept::Close("unreadable request header".into());
        };
        let (key, version, correlation_id) = prefix;
        match ApiKey::from_i16(key) {
            Some(ApiKey::ApiVersions) => Intercept::Dispatch,
            Some(k @ (ApiKey::SaslHandshake | ApiKey::SaslAuthenticate)) => {
                if !k.supports(version) {
                    return Intercept::Close(format!("{} v{version} is not supported", k.name()));
                }
                let header = match RequestHeader::decode_rest(
                    &mut r,
                    prefix,
                    k.request_header_version(version),
                ) {
                    Ok(h) => h,
                    Err(e) => return Intercept::Close(format!("malformed {}: {e}", k.name())),
                };
                let resp_header = k.response_header_version(version);
                if k == ApiKey::SaslHandshake {
                    match SaslHandshakeRequest::decode(&mut r, version) {
                        Ok(req) => self.handshake(&header, req, resp_header),
                        Err(e) => Intercept::Close(format!("malformed SaslHandshake: {e}")),
                    }
                } else {
                    match SaslAuthenticateRequest::decode(&mut r, version) {
                        Ok(req) => self.authenticate(&header, req, resp_header, image, now),
                        Err(e) => Intercept::Close(format!("malformed SaslAuthenticate: {e}")),
                    }
                }
            }
            _ if !self.is_authenticated() => Intercept::Close(format!(
                "request of API key {key} (correlation id {correlation_id}) before SASL authentication; \
                 only ApiVersions, SaslHandshake and SaslAuthenticate are served until then"
            )),
            _ if matches!(self.session_end_ms, Some(end) if now > end) => Intercept::Close(
                "the SASL session ended without re-authentication (connections.max.reauth.ms)"
                    .into(),
            ),
            _ => Intercept::Dispatch,
        }
    }

    fn failure_delay(&self) -> Duration {
        Duration::from_millis(self.serving.settings.failed_authentication_delay_ms)
    }

    fn handshake(
        &mut self,
        header: &RequestHeader,
        req: SaslHandshakeRequest,
        resp_header: i16,
    ) -> Intercept {
        let enabled: Vec<String> = self
            .serving
            .settings
            .mechanisms
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        let respond = |error_code: i16| {
            let resp = SaslHandshakeResponse {
                error_code,
                mechanisms: enabled.clone(),
            };
            frame(header.correlation_id, resp_header, |w| {
                resp.encode(w, header.api_version)
            })
        };
        let reauthentication = matches!(self.state, State::Authenticated);
        if !matches!(self.state, State::AwaitHandshake | State::Authenticated) {
            return Intercept::RespondThenClose(
                respond(error_code::ILLEGAL_SASL_STATE),
                Duration::ZERO,
                "a second SaslHandshake before the first authentication ended".into(),
            );
        }
        let mechanism = Mechanism::from_name(&req.mechanism)
            .filter(|m| self.serving.settings.mechanisms.contains(m));
        let Some(mechanism) = mechanism else {
            return Intercept::RespondThenClose(
                respond(error_code::UNSUPPORTED_SASL_MECHANISM),
                Duration::ZERO,
                format!(
                    "SASL mechanism {:?} is not enabled here (enabled: {})",
                    req.mechanism,
                    enabled.join(", ")
                ),
            );
        };
        if reauthentication {
            if header.api_version < 1 || self.mechanism != Some(mechanism) {
                return Intercept::RespondThenClose(
                    respond(error_code::ILLEGAL_SASL_STATE),
                    Duration::ZERO,
                    "re-authentication must use SaslHandshake v1 and the session's mechanism"
                        .into(),
                );
            }
            self.reauthenticating = true;
        }
        let exchange = match self.new_exchange(mechanism) {
            Ok(e) => e,
            Err(why) => return Intercept::Close(why),
        };
        self.state = if header.api_version == 0 {
            State::RawTokens(mechanism, exchange)
        } else {
            State::Authenticating(mechanism, exchange)
        };
        Intercept::Respond(respond(error_code::NONE))
    }

    fn new_exchange(&self, mechanism: Mechanism) -> Result<Exchange, String> {
        Ok(match mechanism {
            Mechanism::Plain => Exchange::Plain,
            Mechanism::ScramSha256 | Mechanism::ScramSha512 => {
                let random: [u8; SCRAM_NONCE_RANDOM_BYTES] = rand::random();
                let nonce = printable_nonce(&random);
                let m = ScramMechanism::from_mechanism(mechanism).expect("a SCRAM mechanism");
                let server = ScramServer::new(m, nonce.as_bytes())
                    .map_err(|e| format!("cannot start SCRAM: {e}"))?;
                Exchange::Scram {
                    server: Box::new(server),
                    username: None,
                }
            }
            Mechanism::OAuthBearer => Exchange::OAuthBearer(OAuthBearerServer::new()),
        })
    }

    fn authenticate(
        &mut self,
        header: &RequestHeader,
        req: SaslAuthenticateRequest,
        resp_header: i16,
        image: &MetadataImage,
        now: i64,
    ) -> Intercept {
        let version = header.api_version;
        let respond = |resp: SaslAuthenticateResponse| {
            frame(header.correlation_id, resp_header, |w| {
                resp.encode(w, version)
            })
        };
        let State::Authenticating(mechanism, mut exchange) =
            std::mem::replace(&mut self.state, State::AwaitHandshake)
        else {
            return Intercept::RespondThenClose(
                respond(SaslAuthenticateResponse {
                    error_code: error_code::ILLEGAL_SASL_STATE,
                    error_message: Some(
                        "SaslAuthenticate without a SaslHandshake v1 before it".into(),
                    ),
                    ..Default::default()
                }),
                Duration::ZERO,
                "SaslAuthenticate out of order".into(),
            );
        };
        match self.step(mechanism, &mut exchange, &req.auth_bytes, image, now) {
            Step::Continue(token) => {
                self.state = State::Authenticating(mechanism, exchange);
                Intercept::Respond(respond(SaslAuthenticateResponse {
                    auth_bytes: token.into(),
                    ..Default::default()
                }))
            }
            Step::Complete {
                name,
                response,
                credential_expiry_ms,
            } => {
                let principal = format!("User:{name}");
                if self.reauthenticating && self.principal.as_deref() != Some(principal.as_str()) {
                    return Intercept::RespondThenClose(
                        respond(SaslAuthenticateResponse {
                            error_code: error_code::SASL_AUTHENTICATION_FAILED,
                            error_message: Some(format!(
                                "Cannot change principals during re-authentication from {}: {principal}",
                                self.principal.as_deref().unwrap_or("")
                            )),
                            ..Default::default()
                        }),
                        self.failure_delay(),
                        "re-authentication as another principal".into(),
                    );
                }
                let lifetime = self.complete(mechanism, name, credential_expiry_ms, now);
                Intercept::Respond(respond(SaslAuthenticateResponse {
                    auth_bytes: response.into(),
                    session_lifetime_ms: lifetime.unwrap_or(0),
                    ..Default::default()
                }))
            }
            Step::Failed {
                client_message,
                log,
            } => Intercept::RespondThenClose(
                respond(SaslAuthenticateResponse {
                    error_code: error_code::SASL_AUTHENTICATION_FAILED,
                    error_message: Some(client_message),
                    ..Default::default()
                }),
                self.failure_delay(),
                format!("SASL {} authentication failed: {log}", mechanism.name()),
            ),
        }
    }

    /// Records a finished authentication; returns the session's lifetime.
    fn complete(
        &mut self,
        mechanism: Mechanism,
        name: String,
        credential_expiry_ms: Option<i64>,
        now: i64,
    ) -> Option<i64> {
        let lifetime = session_lifetime_ms(
            now,
            self.serving.settings.connections_max_reauth_ms,
            credential_expiry_ms,
        );
        self.session_end_ms = lifetime.map(|l| now.saturating_add(l));
        self.principal = Some(format!("User:{name}"));
        self.mechanism = Some(mechanism);
        self.reauthenticating = false;
        self.authentications += 1;
        self.state = State::Authenticated;
        lifetime
    }

    fn step(
        &self,
        mechanism: Mechanism,
        exchange: &mut Exchange,
        message: &[u8],
        image: &MetadataImage,
        now: i64,
    ) -> Step {
        let generic = || generic_failure_message(mechanism, self.reauthenticating);
        let failed = |visible: bool, text: String| Step::Failed {
            client_message: if visible { text.clone() } else { generic() },
            log: text,
        };
        match exchange {
            Exchange::Plain => {
                match plain::authenticate(message, &self.serving.settings.plain_users) {
                    Ok(name) => Step::Complete {
                        name,
                        response: Vec::new(),
                        credential_expiry_ms: None,
                    },
                    Err(e) => failed(e.is_client_visible(), e.to_string()),
                }
            }
            Exchange::Scram { server, username } => match username {
                None => {
                    let first = match server.client_first(message) {
                        Ok(f) => f,
                        Err(e) => return failed(e.is_client_visible(), e.to_string()),
                    };
                    if first.token_auth {
                        return failed(
                            false,
                            "delegation tokens (tokenauth) are not served".to_string(),
                        );
                    }
                    let key = (
                        first.username.clone(),
                        scram_mechanism_type(server.mechanism()),
                    );
                    let credential = image.scram_credentials.get(&key).and_then(|c| {
                        Some(ScramCredential {
                            salt: c.salt.clone(),
                            stored_key: c.stored_key.clone(),
                            server_key: c.server_key.clone(),
                            iterations: u32::try_from(c.iterations).ok()?,
                        })
                    });
                    match server.server_first(credential.as_ref()) {
                        Ok(token) => {
                            *username = Some(first.username);
                            Step::Continue(token)
                        }
                        Err(e) => failed(
                            e.is_client_visible(),
                            format!("user {:?}: {e}", first.username),
                        ),
                    }
                }
                Some(name) => match server.client_final(message) {
                    Ok(token) => Step::Complete {
                        name: name.clone(),
                        response: token,
                        credential_expiry_ms: None,
                    },
                    Err(e) => failed(e.is_client_visible(), format!("user {name:?}: {e}")),
                },
            },
            Exchange::OAuthBearer(server) => {
                let validate = |token: &str| match &self.serving.settings.oauthbearer {
                    OAuthBearerValidation::Unsecured(config) => {
                        validate_unsecured(token, config, now)
                    }
                    OAuthBearerValidation::Signed { config, .. } => validate_signed(
                        token,
                        self.serving.jwks.as_ref().expect("read with the settings"),
                        config,
                        now,
                    ),
                };
                match server.evaluate(message, validate) {
                    Ok(OAuthBearerStep::Challenge(json)) => Step::Continue(json),
                    Ok(OAuthBearerStep::Complete(session)) => Step::Complete {
                        name: session.token.principal,
                        response: Vec::new(),
                        credential_expiry_ms: Some(session.token.expiry_ms),
                    },
                    Err(e) => failed(e.is_client_visible(), e.to_string()),
                }
            }
        }
    }
}
