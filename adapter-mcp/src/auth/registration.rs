//! Who this client is at the authorization server, in the MCP order: a pre-registered
//! client (`oauth.clientId` / `clientSecret` of the server's config); else a Client ID
//! Metadata Document URL (`oauth.clientMetadataUrl`) when the server advertises
//! `client_id_metadata_document_supported`; else dynamic client registration (RFC
//! 7591) as the fallback. Also how the client authenticates at the token endpoint
//! (`client_secret_basic`, `client_secret_post` or `none`) and when the
//! client-credentials grant (machine to machine) is used instead of a person's login.

use std::time::Duration;

use rmcp::transport::auth::AuthorizationMetadata;
use serde::Deserialize;
use serde_json::json;

use super::discovery::metadata_list;
use super::store::TokenAuth;
use super::{AuthFailure, OAuthClientSettings};

/// The client name sent in a dynamic registration.
pub(crate) const CLIENT_NAME: &str = "Mecatl";

/// How long one registration request may take.
const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The client identity an authorization uses.
#[derive(Clone)]
pub(crate) enum Identity {
    /// A client id (and maybe a secret) known before the authorization request:
    /// configured, or just registered.
    Client {
        client_id: String,
        client_secret: Option<String>,
        token_auth: TokenAuth,
    },
    /// The URL of this client's metadata document, used as its client id.
    MetadataDocument(String),
}

/// Whether the server advertises Client ID Metadata Documents.
fn supports_metadata_documents(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// How a client with (or without) a secret authenticates at the token endpoint: no
/// secret is `none`; with one, `client_secret_post` when the server advertises it
/// and not `client_secret_basic`, else `client_secret_basic` (the OAuth default).
/// A registration response's own `token_endpoint_auth_method` wins when it names one
/// of the three.
pub(crate) fn token_auth(
    metadata: &AuthorizationMetadata,
    has_secret: bool,
    registered: Option<&str>,
) -> TokenAuth {
    if !has_secret {
        return TokenAuth::None;
    }
    match registered {
        Some("client_secret_basic") => return TokenAuth::ClientSecretBasic,
        Some("client_secret_post") => return TokenAuth::ClientSecretPost,
        _ => {}
    }
    let methods = metadata_list(metadata, "token_endpoint_auth_methods_supported").unwrap_or_default();
    let has = |m: &str| methods.iter().any(|x| x == m);
    if has("client_secret_post") && !has("client_secret_basic") {
        TokenAuth::ClientSecretPost
    } else {
        TokenAuth::ClientSecretBasic
    }
}

/// Whether the client-credentials grant is used: the client has its own credentials
/// and the server offers that grant but not the authorization-code grant (or the
/// config asks for it).
pub(crate) fn uses_client_credentials(
    metadata: &AuthorizationMetadata,
    settings: &OAuthClientSettings,
) -> bool {
    if settings.client_id.is_none() || settings.client_secret.is_none() {
        return false;
    }
    if settings.client_credentials {
        return true;
    }
    let grants = metadata_list(metadata, "grant_types_supported").unwrap_or_default();
    grants.iter().any(|g| g == "client_credentials") && !grants.iter().any(|g| g == "authorization_code")
}

/// The identity for an authorization with `redirect_uri`, registering dynamically
/// when neither a configured client nor a usable metadata document applies.
///
/// # Errors
/// [`AuthFailure::Failed`] when the server offers no way to identify this client, or
/// the registration fails.
pub(crate) async fn identity(
    server: &str,
    metadata: &AuthorizationMetadata,
    settings: &OAuthClientSettings,
    redirect_uri: &str,
    http: &reqwest::Client,
) -> Result<Identity, AuthFailure> {
    if let Some(client_id) = &settings.client_id {
        return Ok(Identity::Client {
            client_id: client_id.clone(),
            client_secret: settings.client_secret.clone(),
            token_auth: token_auth(metadata, settings.client_secret.is_some(), None),
        });
    }
    if let Some(url) = &settings.client_metadata_url
        && supports_metadata_documents(metadata)
    {
        return Ok(Identity::MetadataDocument(url.clone()));
    }
    let Some(endpoint) = &metadata.registration_endpoint else {
        return Err(AuthFailure::Failed(format!(
            "MCP server {server:?}: its authorization server offers no dynamic client registration{}; configure a client id (\"oauth\": {{\"clientId\": …}} in the server's --mcp-config entry)",
            if supports_metadata_documents(metadata) {
                " (it accepts a client metadata document: \"oauth\": {\"clientMetadataUrl\": …})"
            } else {
                ""
            }
        )));
    };
    register(server, metadata, endpoint, redirect_uri, http).await
}

#[derive(Deserialize)]
struct Registered {
    client_id: String,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

/// RFC 7591 registration of a native public client for `redirect_uri`.
async fn register(
    server: &str,
    metadata: &AuthorizationMetadata,
    endpoint: &str,
    redirect_uri: &str,
    http: &reqwest::Client,
) -> Result<Identity, AuthFailure> {
    let failed = |what: String| {
        AuthFailure::Failed(format!(
            "MCP server {server:?}: client registration failed: {what}"
        ))
    };
    let body = json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    let response = http
        .post(endpoint)
        .json(&body)
        .timeout(REGISTRATION_TIMEOUT)
        .send()
        .await
        .map_err(|e| failed(crate::session::error_chain(&e.without_url())))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!(
            "HTTP {status} from {}",
            crate::redact::redact_url(endpoint)
        )));
    }
    let registered: Registered = response
        .json()
        .await
        .map_err(|e| failed(format!("unreadable answer: {}", e.without_url())))?;
    let secret = registered.client_secret.filter(|s| !s.is_empty());
    Ok(Identity::Client {
        token_auth: token_auth(
            metadata,
            secret.is_some(),
            registered.token_endpoint_auth_method.as_deref(),
        ),
        client_id: registered.client_id,
        client_secret: secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(methods: &[&str], grants: &[&str]) -> AuthorizationMetadata {
        let mut metadata = AuthorizationMetadata::default();
        metadata
            .additional_fields
            .insert("token_endpoint_auth_methods_supported".into(), json!(methods));
        metadata
            .additional_fields
            .insert("grant_types_supported".into(), json!(grants));
        metadata
    }

    #[test]
    fn the_token_endpoint_method_follows_the_secret_and_what_the_server_advertises() {
        let both = metadata(&["client_secret_basic", "client_secret_post"], &[]);
        assert_eq!(token_auth(&both, false, None), TokenAuth::None);
        assert_eq!(token_auth(&both, true, None), TokenAuth::ClientSecretBasic);
        let post = metadata(&["client_secret_post"], &[]);
        assert_eq!(token_auth(&post, true, None), TokenAuth::ClientSecretPost);
        assert_eq!(
            token_auth(&post, true, Some("client_secret_basic")),
            TokenAuth::ClientSecretBasic
        );
    }

    #[test]
    fn client_credentials_need_a_secret_and_a_server_without_the_code_grant() {
        let settings = OAuthClientSettings {
            client_id: Some("id".into()),
            client_secret: Some("secret".into()),
            ..OAuthClientSettings::default()
        };
        assert!(uses_client_credentials(
            &metadata(&[], &["client_credentials"]),
            &settings
        ));
        assert!(!uses_client_credentials(
            &metadata(&[], &["client_credentials", "authorization_code"]),
            &settings
        ));
        let public = OAuthClientSettings {
            client_secret: None,
            ..settings
        };
        assert!(!uses_client_credentials(
            &metadata(&[], &["client_credentials"]),
            &public
        ));
    }
}
