//! What the binary-level tests share about the demo setup: the development
//! secrets `make run` sets (Makefile, `DEMO_SECRETS`) and paths in the repo.

#![allow(dead_code)] // each test binary uses a subset

/// The demo integrations' secret variables with their development values,
/// and the demo AS2 station's key and certificates (Makefile, `DEMO_AS2`).
pub const DEMO_SECRETS: [(&str, &str); 8] = [
    ("SHOP_SECRET", "dev-shop-secret"),
    ("GITHUB_SECRET", "dev-github-secret"),
    ("STD_WEBHOOK_SECRET", "whsec_ZGV2LXN0ZC13ZWJob29rLXNlY3JldA=="),
    ("STRIPE_SECRET", "whsec_dev_stripe_secret"),
    ("GUBEE_SECRET", "dev-gubee-secret"),
    ("EDIHUB_SECRET_AS2_DEMO_KEY", include_str!("../../../../config/as2-demo/edihub.key")),
    ("EDIHUB_SECRET_AS2_DEMO_CERT", include_str!("../../../../config/as2-demo/edihub.crt")),
    ("EDIHUB_SECRET_AS2_DEMO_PARTNER_CERT", include_str!("../../../../config/as2-demo/partner.crt")),
];

/// A path in the repository, from this crate's directory.
pub fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}
