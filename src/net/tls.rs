//! The TLS clients' configurations, rustls on the ring provider with
//! webpki: the CA and client certificate files a check names (or the
//! system's CA store), ureq's configuration for https checks and the OTLP
//! exporter's https://, and the rustls client (ALPN h2) of gRPC over TLS.
//! Built only with the `tls` feature; without it `no_tls.rs` stands in at
//! this path, with a configuration type that has no values.

use super::io_msg;
use crate::config::target::Host;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use ureq::tls::{Certificate, ClientCert, PemItem, RootCerts, TlsConfig, TlsProvider};

/// Where OpenWrt's ca-bundle (and Debian's ca-certificates) keep system CAs.
pub(crate) const SYSTEM_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

fn read_file(what: &str, path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("reading {what} {path}: {}", io_msg(&e)))
}

/// The system's CA certificates (none when the file is missing: every
/// verified connection then fails with "unknown issuer").
pub(crate) fn system_roots() -> Vec<Certificate<'static>> {
    pem_certs("system CA file", SYSTEM_CA_FILE).unwrap_or_default()
}

/// Every certificate in a PEM file.
pub(crate) fn pem_certs(what: &str, path: &str) -> Result<Vec<Certificate<'static>>, String> {
    let pem = read_file(what, path)?;
    let certs: Vec<_> = ureq::tls::parse_pem(&pem)
        .filter_map(|i| match i {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(format!("parsing {what} {path}: no certificates found"));
    }
    Ok(certs)
}

/// The client certificate chain `cert` and its key `key` (PEM files).
pub(crate) fn client_cert(cert: &str, key: &str) -> Result<ClientCert, String> {
    let chain = pem_certs("tls_client_cert", cert)?;
    let pem = read_file("tls_client_key", key)?;
    let key = ureq::tls::parse_pem(&pem)
        .find_map(|i| match i {
            Ok(PemItem::PrivateKey(k)) => Some(k),
            _ => None,
        })
        .ok_or_else(|| format!("parsing tls_client_key {key}: no private key found"))?;
    Ok(ClientCert::new_with_certs(&chain, key))
}

/// ureq's TLS configuration: rustls on ring, trusting `roots` only, with
/// `client` as the client certificate, or verifying nothing (`insecure`).
pub(crate) fn ureq_config(
    roots: Vec<Certificate<'static>>,
    client: Option<ClientCert>,
    insecure: bool,
) -> TlsConfig {
    TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::Specific(Arc::new(roots)))
        .client_cert(client)
        .disable_verification(insecure)
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build()
}

/// The rustls client configuration of HTTP/2 over TLS (gRPC), made once.
pub(crate) type H2Config = Arc<ClientConfig>;

/// Accepts any certificate (tls_insecure) but still checks the handshake
/// signatures, so the connection is at least consistent.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The rustls client config: ring provider, ALPN h2, the CA file `ca`
/// (else the system store), or no verification with `insecure`.
pub(crate) fn h2_config(ca: Option<&str>, insecure: bool) -> Result<H2Config, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let mut cfg = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth()
    } else {
        let (what, path) = match ca {
            Some(p) => ("tls_ca_cert", p),
            None => ("system CA file", SYSTEM_CA_FILE),
        };
        let pem = std::fs::read(path).map_err(|e| format!("reading {what} {path}: {}", io_msg(&e)));
        let certs: Vec<CertificateDer<'static>> = match (pem, ca) {
            (Ok(p), _) => CertificateDer::pem_slice_iter(&p)
                .filter_map(Result::ok)
                .collect(),
            (Err(e), Some(_)) => return Err(e),
            // No system store: every call fails verification, visibly.
            (Err(_), None) => Vec::new(),
        };
        if certs.is_empty() && ca.is_some() {
            return Err(format!("parsing tls_ca_cert {path}: no certificates found"));
        }
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(certs);
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    // RFC 9113 §3.2: HTTP/2 over TLS is negotiated with ALPN "h2".
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// The TLS session over `sock` to `server_name`, its handshake done and
/// h2 negotiated; errors name `addr`.
pub(crate) fn connect_h2<S: Read + Write>(
    cfg: &H2Config,
    server_name: &Host,
    sock: S,
    addr: SocketAddr,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, S>, String> {
    let name = match server_name {
        Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
        Host::Name(n) => ServerName::try_from(n.clone())
            .map_err(|_| format!("tls: invalid server name {n:?}"))?,
    };
    let conn =
        rustls::ClientConnection::new(cfg.clone(), name).map_err(|e| format!("tls {addr}: {e}"))?;
    let mut s = rustls::StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn
            .complete_io(&mut s.sock)
            .map_err(|e| format!("tls {addr}: {}", io_msg(&e)))?;
    }
    if s.conn.alpn_protocol() != Some(b"h2") {
        return Err(format!("tls {addr}: server did not negotiate h2"));
    }
    Ok(s)
}
