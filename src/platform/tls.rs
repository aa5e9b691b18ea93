//! The TLS crypto provider of every HTTP client Troupe builds (model providers,
//! `web_fetch`, MCP over HTTP): reqwest is compiled without a provider of its own, so
//! one process-wide provider (ring) is installed before the first client is built.

use std::sync::Once;

/// Installs ring as the process's rustls provider; later calls do nothing.
pub fn install_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only when a provider is already installed, which is what is wanted.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
