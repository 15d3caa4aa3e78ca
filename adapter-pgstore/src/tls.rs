//! TLS for the database connections: rustls over aws-lc-rs, configured from the URL's
//! `sslmode` and `sslrootcert` with libpq's meanings.
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | never | — |
//! | `allow`, `prefer` (default) | when the server offers it | no |
//! | `require` | always | only against `sslrootcert` when given (then as `verify-ca`) |
//! | `verify-ca` | always | chain against `sslrootcert` (else the system's roots), any host name |
//! | `verify-full` | always | chain and host name |

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::url::{RootCerts, SslMode, StoreUrl};

/// The connector for `url`'s TLS settings; `Err` names the certificate file or the
/// missing roots.
pub(crate) fn connector(url: &StoreUrl) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let check = match (url.ssl_mode(), url.root_certs()) {
        (SslMode::Disable | SslMode::Prefer, _) | (SslMode::Require, RootCerts::Default) => Check::None,
        (SslMode::Require | SslMode::VerifyCa, roots) => Check::Chain(roots.clone()),
        (SslMode::VerifyFull, roots) => Check::Full(roots.clone()),
    };
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::None => Arc::new(Relaxed {
            chain: None,
            provider: Arc::clone(&provider),
        }),
        Check::Chain(roots) => Arc::new(Relaxed {
            chain: Some(webpki(&roots, &provider)?),
            provider: Arc::clone(&provider),
        }),
        Check::Full(roots) => webpki(&roots, &provider)?,
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

enum Check {
    None,
    Chain(RootCerts),
    Full(RootCerts),
}

fn webpki(roots: &RootCerts, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, String> {
    let mut store = RootCertStore::empty();
    match roots {
        RootCerts::File(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "sslrootcert {}: no PEM certificate in it",
                    path.display()
                ));
            }
            for cert in certs {
                store
                    .add(cert)
                    .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            }
        }
        RootCerts::Default | RootCerts::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err("no system root certificate found (give sslrootcert=FILE)".to_owned());
            }
        }
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(store), Arc::clone(provider))
        .build()
        .map_err(|e| format!("TLS setup failed: {e}"))
}

/// The modes that do not check the whole certificate (libpq's meanings):
/// `prefer` / `require` without roots encrypt without authenticating the server
/// (`chain: None`); `verify-ca` requires the chain to lead to a trusted root but does
/// not match the host name (webpki checks the chain before the name, so a name
/// mismatch means the chain passed). Handshake signatures are always checked.
#[derive(Debug)]
struct Relaxed {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Relaxed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
