//! Finding the authorization server of a protected MCP server: the protected-resource
//! metadata named by the `WWW-Authenticate` challenge's `resource_metadata`, else its
//! well-known locations (with, then without, the endpoint's path), then the
//! authorization server's metadata (OAuth, then OpenID Connect well-knowns, path
//! insertion first), else the 2025-03-26 fallback to the server's own root; the
//! resource in the metadata must be the server's. rmcp's resolver walks those
//! locations (it also refuses metadata hosts of another address class than the
//! server's); this module adds the checks the MCP rules make before any authorization
//! request goes out.

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata, WWWAuthenticateParams};

use super::AuthFailure;

/// What a `WWW-Authenticate` challenge asks for.
#[derive(Clone, Debug, Default)]
pub(crate) struct Challenge {
    /// The header value as received.
    pub(crate) header: String,
    /// The scopes the operation needs (`scope="…"`), split.
    pub(crate) scopes: Vec<String>,
    /// Whether it is a 403 `insufficient_scope` (step-up) challenge.
    pub(crate) insufficient_scope: bool,
    /// Whether it names protected-resource metadata (`resource_metadata`).
    pub(crate) names_metadata: bool,
}

impl Challenge {
    /// Parses `header` (relative URLs resolve against `server_url`).
    pub(crate) fn parse(header: &str, server_url: &str) -> Self {
        let params = url::Url::parse(server_url)
            .map(|base| WWWAuthenticateParams::parse(header, &base))
            .unwrap_or_default();
        Self {
            header: header.to_owned(),
            scopes: params
                .scope
                .as_deref()
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            insufficient_scope: params.is_insufficient_scope(),
            names_metadata: params.resource_metadata_url.is_some(),
        }
    }
}

/// The discovered authorization server: a manager holding its metadata, and a copy
/// of that metadata.
pub(crate) struct Discovered {
    pub(crate) manager: AuthorizationManager,
    pub(crate) metadata: AuthorizationMetadata,
}

/// Discovers the authorization server of `server_url` from `challenge`.
///
/// # Errors
/// [`AuthFailure::Failed`]: nothing usable was found, the metadata names another
/// resource, or the server does not offer PKCE with S256.
pub(crate) async fn discover(
    server: &str,
    server_url: &str,
    challenge: &Challenge,
    http: &reqwest::Client,
) -> Result<Discovered, AuthFailure> {
    let failed = |what: String| AuthFailure::Failed(format!("MCP server {server:?}: {what}"));
    let mut manager = AuthorizationManager::new(server_url)
        .await
        .map_err(|e| failed(format!("cannot start authorization: {e}")))?;
    let (metadata, discovered) = match manager
        .resolve_metadata_from_challenge(Some(&challenge.header))
        .await
    {
        Ok(resolution) => (resolution.metadata, resolution.source.is_discovered()),
        Err(error @ AuthError::AuthorizationServerMismatch { .. }) if !challenge.names_metadata => {
            match own_root_metadata(server_url, http).await {
                Some(metadata) => (metadata, true),
                None => return Err(failed(format!("authorization server discovery failed: {error}"))),
            }
        }
        Err(error) => return Err(failed(format!("authorization server discovery failed: {error}"))),
    };
    if discovered {
        require_s256(&metadata).map_err(failed)?;
    }
    manager.set_metadata(metadata.clone());
    Ok(Discovered { manager, metadata })
}

/// The 2025-03-26 layout: no protected-resource metadata, the MCP server's own origin
/// publishing `/.well-known/oauth-authorization-server` for an issuer under that same
/// origin (whose path RFC 8414's issuer check does not expect at the root). Accepted
/// only when the issuer and every endpoint are on the MCP server's origin, so no
/// other server can be mixed in.
async fn own_root_metadata(server_url: &str, http: &reqwest::Client) -> Option<AuthorizationMetadata> {
    let base = url::Url::parse(server_url).ok()?;
    let root = base.join("/.well-known/oauth-authorization-server").ok()?;
    let response = http.get(root).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let metadata: AuthorizationMetadata = response.json().await.ok()?;
    let same_origin = |url: &str| url::Url::parse(url).is_ok_and(|u| u.origin() == base.origin());
    let endpoints = [
        Some(&metadata.authorization_endpoint),
        Some(&metadata.token_endpoint),
        metadata.registration_endpoint.as_ref(),
    ];
    let own = metadata.issuer.as_deref().is_some_and(same_origin)
        && endpoints.into_iter().flatten().all(|e| same_origin(e));
    own.then_some(metadata)
}

/// PKCE with S256 must be advertised: a server that lists other methods, or none,
/// is refused before the user is sent anywhere.
pub(crate) fn require_s256(metadata: &AuthorizationMetadata) -> Result<(), String> {
    let advertised = metadata
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
    if advertised {
        return Ok(());
    }
    let server = metadata
        .issuer
        .clone()
        .unwrap_or_else(|| crate::redact::redact_url(&metadata.authorization_endpoint));
    Err(format!(
        "the authorization server {server} does not advertise PKCE with S256 (code_challenge_methods_supported: {}); refusing to authorize without it",
        metadata
            .code_challenge_methods_supported
            .as_ref()
            .map_or_else(|| "absent".to_owned(), |m| format!("{m:?}"))
    ))
}

/// A list field of the metadata (`grant_types_supported`, …); `None` when absent.
pub(crate) fn metadata_list(metadata: &AuthorizationMetadata, field: &str) -> Option<Vec<String>> {
    metadata
        .additional_fields
        .get(field)
        .and_then(|v| v.as_array())
        .map(|values| {
            values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(methods: Option<Vec<&str>>) -> AuthorizationMetadata {
        let mut metadata = AuthorizationMetadata::default();
        metadata.authorization_endpoint = "https://as.example/authorize".into();
        metadata.issuer = Some("https://as.example".into());
        metadata.code_challenge_methods_supported =
            methods.map(|m| m.into_iter().map(String::from).collect());
        metadata
    }

    #[test]
    fn an_authorization_server_without_s256_is_refused_naming_what_it_advertises() {
        assert!(require_s256(&metadata(Some(vec!["plain", "S256"]))).is_ok());
        let plain = require_s256(&metadata(Some(vec!["plain"]))).unwrap_err();
        assert!(
            plain.contains("https://as.example") && plain.contains("[\"plain\"]"),
            "{plain}"
        );
        let absent = require_s256(&metadata(None)).unwrap_err();
        assert!(absent.contains("absent") && absent.contains("S256"), "{absent}");
    }

    #[test]
    fn a_challenge_gives_its_scopes_and_whether_it_asks_for_more() {
        let header = r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp""#;
        let challenge = Challenge::parse(header, "https://mcp.example/mcp");
        assert_eq!(challenge.scopes, ["mcp:basic", "mcp:write"]);
        assert!(challenge.insufficient_scope);
        let plain = Challenge::parse("Bearer", "https://mcp.example/mcp");
        assert!(plain.scopes.is_empty() && !plain.insufficient_scope);
    }
}
