//! TLS for the served API: a certificate authority made when the server starts, and a server
//! certificate it signs for the address clients dial (127.0.0.1, localhost). The CA goes into
//! the kubeconfig (`certificate-authority-data`), so kubectl and the client libraries verify the
//! server as they would a cluster's — and send their bearer tokens, which client-go does only
//! over TLS (kubernetes/kubectl#744).

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The server's TLS configuration and the CA's certificate (PEM) for the kubeconfig.
pub struct Tls {
    pub config: Arc<ServerConfig>,
    pub ca_pem: String,
}

pub fn make(address: IpAddr) -> Result<Tls, String> {
    let fail = |e: rcgen::Error| format!("cannot make the server's certificates: {e}");
    let ca_key = KeyPair::generate().map_err(fail)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca_params.distinguished_name.push(DnType::CommonName, "leasesim-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).map_err(fail)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().map_err(fail)?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).map_err(fail)?;
    params.distinguished_name.push(DnType::CommonName, "leasesim");
    let mut ips: Vec<IpAddr> = vec!["127.0.0.1".parse().expect("an address"), "::1".parse().expect("an address")];
    if !address.is_unspecified() && !ips.contains(&address) {
        ips.push(address);
    }
    params.subject_alt_names.extend(ips.into_iter().map(SanType::IpAddress));
    let cert = params.signed_by(&key, &issuer).map_err(fail)?;

    let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone(), ca_cert.der().clone()];
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| format!("TLS: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls { config: Arc::new(config), ca_pem: ca_cert.pem() })
}
