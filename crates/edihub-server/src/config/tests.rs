//! Configuration loading and validation: every refusal names its key.

use std::collections::HashMap;

use super::{Config, SecretSource, Window};

const SHA: &str = "ca4822ad34afb4cf7d32beabed6d8fd80ba2d29b05690c67464b0227c6475074";

fn base() -> String {
    format!(
        "[admin]\ntoken_sha256 = \"{SHA}\"\n[[tenants]]\nid = \"acme\"\n  [[tenants.environments]]\n  id = \"prod\"\n  api_keys_sha256 = [\"{}\"]\n",
        "1".repeat(64)
    )
}

fn key_of(text: &str) -> String {
    Config::from_toml_with_secrets(text, SecretSource::Fixed(HashMap::new()))
        .expect_err("must be refused")
        .key
}

fn demo_secrets() -> SecretSource {
    let pairs = [
        ("SHOP_SECRET", "dev-shop-secret"),
        ("GITHUB_SECRET", "dev-github-secret"),
        ("STD_WEBHOOK_SECRET", "whsec_ZGV2LXN0ZC13ZWJob29rLXNlY3JldA=="),
        ("STRIPE_SECRET", "whsec_dev_stripe_secret"),
        ("GUBEE_SECRET", "dev-gubee-secret"),
        ("EDIHUB_SECRET_AS2_DEMO_KEY", include_str!("../../../../config/as2-demo/edihub.key")),
        ("EDIHUB_SECRET_AS2_DEMO_CERT", include_str!("../../../../config/as2-demo/edihub.crt")),
        ("EDIHUB_SECRET_AS2_DEMO_PARTNER_CERT", include_str!("../../../../config/as2-demo/partner.crt")),
    ];
    SecretSource::Fixed(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

#[test]
fn the_demo_config_is_valid() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/edihub.toml")).unwrap();
    let config = Config::from_toml_with_secrets(&text, demo_secrets()).expect("demo config");
    assert_eq!(config.tenants[0].environments.len(), 2);
    assert!(config.message_types.iter().any(|m| m.id == "ORDERS05"));
    assert_eq!(config.integrations.len(), 5);
    assert_eq!(config.destinations.len(), 1, "the demo receiver of `make listen`");
    assert!(config.destinations[0].url.starts_with("http://127.0.0.1:9999/"));
    assert_eq!((config.as2.stations.len(), config.as2.partners.len()), (1, 1), "the demo AS2 station");
    // Without the secrets the integrations are refused, naming the key.
    let err = Config::from_toml_with_secrets(&text, SecretSource::Fixed(HashMap::new())).unwrap_err();
    assert_eq!(err.key, "integrations[0].signature.secret_env");
}

#[test]
fn defaults_apply() {
    let c = Config::from_toml(&base()).unwrap();
    assert_eq!((c.listen.as_str(), c.max_body_bytes), ("127.0.0.1:8080", 32 * 1024 * 1024));
    assert_eq!(
        (c.retention.messages_days, c.retention.pause_ms, c.retention.detach_pause_ms),
        (90, 100, 1000)
    );
    assert_eq!(c.max_connections_per_address, 256);
    assert_eq!(c.max_inflight_webhook_body_bytes, 4 * 1024 * 1024);
    assert_eq!(c.max_inflight_webhook_body_bytes_per_address, 1024 * 1024);
    assert_eq!((c.body_read_grace_secs, c.body_read_min_bytes_per_sec), (10, 1024));
    assert_eq!(c.signature_rejection_audit_secs, 60);
    assert_eq!(c.admin.search_scan_messages, 10_000);
}

#[test]
fn refusals_name_the_key() {
    let b = base();
    let cases = [
        (format!("listen = \"nope\"\n{b}"), "listen"),
        (format!("database_url = \"mysql://x\"\n{b}"), "database_url"),
        (format!("log_format = \"xml\"\n{b}"), "log_format"),
        (
            format!("database_url = \"postgres://db/e\"\ndatabase_pooler = \"pgbouncer\"\n{b}"),
            "database_pooler",
        ),
        // SQLite (the default database_url) has no server to pool.
        (format!("database_pooler = \"transaction\"\n{b}"), "database_pooler"),
        (format!("database_partition_period = \"month\"\n{b}"), "database_partition_period"),
        (format!("database_partitions_ahead = 400\n{b}"), "database_partitions_ahead"),
        (format!("database_partitions_ahead = -1\n{b}"), "database_partitions_ahead"),
        (format!("max_body_bytes = \"big\"\n{b}"), "max_body_bytes"),
        (format!("max_inflight_body_bytes = 0\n{b}"), "max_inflight_body_bytes"),
        (format!("max_inflight_webhook_body_bytes = 0\n{b}"), "max_inflight_webhook_body_bytes"),
        (
            format!("max_inflight_webhook_body_bytes_per_address = 0\n{b}"),
            "max_inflight_webhook_body_bytes_per_address",
        ),
        (format!("body_read_grace_secs = 0\n{b}"), "body_read_grace_secs"),
        (format!("body_read_min_bytes_per_sec = -1\n{b}"), "body_read_min_bytes_per_sec"),
        (format!("max_connections_per_address = 0\n{b}"), "max_connections_per_address"),
        (format!("signature_rejection_audit_secs = 0\n{b}"), "signature_rejection_audit_secs"),
        (format!("[retention]\npause_ms = 10001\n{b}"), "retention.pause_ms"),
        (format!("[retention]\ndetach_pause_ms = 10001\n{b}"), "retention.detach_pause_ms"),
        (format!("[feed]\npage_bytes = 100\n{b}"), "feed.page_bytes"),
        (format!("[feed]\nscan_messages = 0\n{b}"), "feed.scan_messages"),
        (format!("[feed]\nrender_budget_bytes = 1000\n{b}"), "feed.render_budget_bytes"),
        (b.replace(SHA, "abc"), "admin.token_sha256"),
        (b.replace("[admin]\n", "[admin]\nsearch_scan_messages = 0\n"), "admin.search_scan_messages"),
        (b.replace(&"1".repeat(64), "zz"), "tenants[0].environments[0].api_keys_sha256[0]"),
        (format!("{b}[[tenants]]\nid = \"acme\"\nenvironments = []\n"), "tenants[1].id"),
        (
            format!("{b}[[message_types]]\nid = \"X\"\nduplicate_window = \"5 fortnights\"\n"),
            "message_types[0].duplicate_window",
        ),
        (format!("{b}  interchange_window = \"2 weeks\"\n"), "tenants[0].environments[0].interchange_window"),
        (format!("{b}  interchange_window_days = 0\n"), "tenants[0].environments[0].interchange_window_days"),
        // Longer than the keys that keep the claims are kept.
        (
            format!("[retention]\nkeys_days = 10\n{b}  interchange_window_days = 11\n"),
            "tenants[0].environments[0].interchange_window_days",
        ),
        (
            format!("[retention]\nkeys_days = 1\n{b}  interchange_window = \"25h\"\n"),
            "tenants[0].environments[0].interchange_window",
        ),
        (
            format!("{b}[[message_types]]\nid = \"X\"\nduplicate_window_hours = 0\n"),
            "message_types[0].duplicate_window_hours",
        ),
        (format!("{b}[[message_types]]\nid = \"X\"\ntenant = \"nobody\"\n"), "message_types[0].tenant"),
        (
            format!("{b}[[message_types]]\nid = \"X\"\nduplicate_key_fields = [\"E1EDK02[QUALF=001\"]\n"),
            "message_types[0].duplicate_key_fields[0]",
        ),
        (format!("{b}[[message_types]]\nid = \"X\"\n[[message_types]]\nid = \"X\"\n"), "message_types[1].id"),
        (
            format!("{b}[[message_types]]\nid = \"X\"\nfingerprint_scope = [\"receiver\", \"buyer\"]\n"),
            "message_types[0].fingerprint_scope",
        ),
        (
            format!("{b}[[message_types]]\nid = \"X\"\nfingerprint_scope = [\"sender\", \"sender\"]\n"),
            "message_types[0].fingerprint_scope",
        ),
        (
            format!(
                "{b}[[integrations]]\nid = \"i\"\ntenant = \"acme\"\nenvironment = \"qa\"\nmessage_type = \"t\"\n"
            ),
            "integrations[0].environment",
        ),
        (
            format!("{b}[[integrations]]\nid = \"i\"\ntenant = \"acme\"\nenvironment = \"prod\"\n"),
            "integrations[0].message_type",
        ),
        (
            format!(
                "{b}[[integrations]]\nid = \"i\"\ntenant = \"acme\"\nenvironment = \"prod\"\nmessage_type = \"t\"\nsignature = {{ scheme = \"md5\", secret_env = \"S\" }}\n"
            ),
            "integrations[0].signature.secret_env",
        ),
        (format!("unknown_key = 1\n{b}"), "unknown_key"),
    ];
    for (text, key) in cases {
        assert_eq!(key_of(&text), key, "for:\n{text}");
    }
}

#[test]
fn unknown_scheme_is_named_once_the_secret_exists() {
    let text = format!(
        "{}[[integrations]]\nid = \"i\"\ntenant = \"acme\"\nenvironment = \"prod\"\nmessage_type = \"t\"\nsignature = {{ scheme = \"md5\", secret_env = \"S\" }}\n",
        base()
    );
    let secrets = SecretSource::Fixed(HashMap::from([("S".to_string(), "x".to_string())]));
    let err = Config::from_toml_with_secrets(&text, secrets).unwrap_err();
    assert_eq!(err.key, "integrations[0].signature.scheme");
    assert!(err.to_string().contains("unknown scheme `md5`"), "{err}");
}

#[test]
fn windows_parse_with_units() {
    let seconds = |text: &str| Window::parse(text).map(Window::seconds);
    assert_eq!(seconds("2s"), Ok(2));
    assert_eq!(seconds("15m"), Ok(900));
    assert_eq!(seconds("12h"), Ok(43_200));
    assert_eq!(seconds("7d"), Ok(604_800));
    assert_eq!(seconds(" 90 s "), Ok(90), "white space around the number and the unit");
    for bad in ["0s", "m", "3w", "15", "-1s", "1.5h", "", "99999999999999999d"] {
        assert!(Window::parse(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        Window::parse("15"),
        Err("`15` has no unit (write it as 15s, 15m, 15h or 15d)".to_string()),
        "a number without its unit says which units it takes"
    );
    // Shown in the largest unit that divides it; read back, the same window.
    for (text, shown) in [("2s", "2s"), ("90s", "90s"), ("15m", "15m"), ("120m", "2h"), ("7d", "168h")] {
        let window = Window::parse(text).unwrap();
        assert_eq!(window.to_string(), shown);
        assert_eq!(Window::parse(shown), Ok(window));
    }
    assert_eq!(
        (Window::from_seconds(0), Window::from_hours(0), Window::from_hours(u64::MAX)),
        (None, None, None)
    );
}

#[test]
#[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
fn environment_overrides_the_file() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("edihub.toml", &base())?;
        jail.set_env("EDIHUB_LISTEN", "0.0.0.0:9999");
        jail.set_env("DATABASE_URL", "postgres://db/plain");
        jail.set_env("EDIHUB_RETENTION__MESSAGES_DAYS", "7");
        let c = Config::load(Some(std::path::Path::new("edihub.toml"))).expect("loads");
        assert_eq!(c.listen, "0.0.0.0:9999");
        assert_eq!(c.database_url, "postgres://db/plain");
        assert_eq!(c.retention.messages_days, 7);
        assert_eq!(c.database_pooler, super::DatabasePooler::None);
        jail.set_env("EDIHUB_DATABASE_POOLER", "transaction");
        let c = Config::load(Some(std::path::Path::new("edihub.toml"))).expect("loads");
        assert_eq!(c.database_pooler, super::DatabasePooler::Transaction);
        assert_eq!(crate::pool_settings(&c).pooler, edihub_store::Pooler::Transaction);
        let layout = crate::pool_settings(&c).partitions;
        assert_eq!((layout.period, layout.ahead), (edihub_store::PartitionPeriod::Day, 7));
        jail.set_env("EDIHUB_DATABASE_PARTITION_PERIOD", "week");
        jail.set_env("EDIHUB_DATABASE_PARTITIONS_AHEAD", "3");
        let layout =
            crate::pool_settings(&Config::load(Some(std::path::Path::new("edihub.toml"))).expect("loads"))
                .partitions;
        assert_eq!((layout.period, layout.ahead), (edihub_store::PartitionPeriod::Week, 3));
        jail.set_env("EDIHUB_DATABASE_URL", "postgres://db/edihub");
        let c = Config::load(Some(std::path::Path::new("edihub.toml"))).expect("loads");
        assert_eq!(c.database_url, "postgres://db/edihub", "EDIHUB_ wins over DATABASE_URL");
        jail.set_env("EDIHUB_MAX_BODY_BYTES", "lots");
        let err = Config::load(Some(std::path::Path::new("edihub.toml"))).unwrap_err();
        assert_eq!(err.key, "max_body_bytes");
        Ok(())
    });
}

#[test]
fn debug_masks_the_database_password() {
    use super::redact_url;
    assert_eq!(redact_url("postgres://edihub:s3cret@db:5432/edihub"), "postgres://edihub:***@db:5432/edihub");
    assert_eq!(redact_url("postgres://edihub@db/edihub"), "postgres://edihub@db/edihub");
    assert_eq!(redact_url("sqlite://data/edihub.db"), "sqlite://data/edihub.db");
    let text = format!("database_url = \"postgres://u:s3cret@h/d\"\n{}", base());
    let config = Config::from_toml(&text).unwrap();
    let debug = format!("{config:?}");
    assert!(!debug.contains("s3cret") && debug.contains("u:***@h"), "{debug}");
}

fn integration(extra: &str) -> String {
    format!(
        "{}[[integrations]]\nid = \"i\"\ntenant = \"acme\"\nenvironment = \"prod\"\nmessage_type = \"t\"\n{extra}\n",
        base()
    )
}

/// Every name the refusals below use, set: only the name rule refuses them.
fn all_set(names: &[&str]) -> SecretSource {
    SecretSource::Fixed(names.iter().map(|n| (n.to_string(), "whsec_eA==".to_string())).collect())
}

#[test]
fn secret_env_never_names_a_process_variable() {
    let names = ["PATH", "HOME", "DATABASE_URL", "EDIHUB_ADMIN__TOKEN_SHA256", "PGPASSWORD", "my-var"];
    for var in names {
        let text = integration(&format!("signature = {{ scheme = \"github\", secret_env = \"{var}\" }}"));
        let err = Config::from_toml_with_secrets(&text, all_set(&names)).expect_err(var);
        assert_eq!(err.key, "integrations[0].signature.secret_env", "{var}: {err}");
    }
    // A name under the prefix, or any other name the file uses, is fine.
    for var in ["EDIHUB_SECRET_SHOP", "PARTNER_SECRET"] {
        let text = integration(&format!("signature = {{ scheme = \"github\", secret_env = \"{var}\" }}"));
        Config::from_toml_with_secrets(&text, all_set(&[var])).unwrap_or_else(|e| panic!("{var}: {e}"));
    }
    let text = format!("webhook_secret_prefix = \"PG\"\n{}", base());
    assert_eq!(key_of(&text), "webhook_secret_prefix");
}

#[test]
fn integration_headers_and_types_are_checked() {
    let cases = [
        ("event_id = { header = \"Authorization\" }", "integrations[0].event_id.header"),
        ("event_id = { header = \"bad header\" }", "integrations[0].event_id.header"),
        (
            "signature = { scheme = \"hmac\", secret_env = \"S\", header = \"Cookie\" }",
            "integrations[0].signature.header",
        ),
        ("event_id_days = 400", "integrations[0].event_id_days"),
    ];
    for (extra, key) in cases {
        let text = integration(extra);
        let err = Config::from_toml_with_secrets(&text, all_set(&["S"])).expect_err(extra);
        assert_eq!(err.key, key, "{extra}: {err}");
    }
    let text = integration("").replace("message_type = \"t\"", "message_type = \"<t>\"");
    assert_eq!(key_of(&text), "integrations[0].message_type");
    let text = base().replace("  id = \"prod\"\n", "  id = \"prod\"\n  message_types = [\"a b\"]\n");
    assert_eq!(key_of(&text), "tenants[0].environments[0].message_types[0]");
}

#[test]
#[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
fn secret_variables_are_not_settings() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("edihub.toml", &base())?;
        jail.set_env("EDIHUB_SECRET_SHOP", "dev-shop-secret");
        jail.set_env("EDIHUB_WEBHOOK_SECRET_PREFIX", "PARTNER_");
        let c = Config::load(Some(std::path::Path::new("edihub.toml"))).expect("loads");
        assert_eq!(c.webhook_secret_prefix, "PARTNER_");
        Ok(())
    });
}

#[test]
fn interchange_windows() {
    let b = base();
    let window = |text: &str| {
        let c = Config::from_toml(text).unwrap_or_else(|e| panic!("{e}\nfor:\n{text}"));
        c.tenants[0].environments[0].interchange_window().seconds()
    };
    assert_eq!(window(&b), 30 * 86_400, "default 30 days");
    // The default follows shorter-lived keys, as the window did before it could be set.
    assert_eq!(window(&format!("[retention]\nkeys_days = 7\n{b}")), 7 * 86_400);
    assert_eq!(window(&format!("[retention]\nkeys_days = 0\n{b}")), 30 * 86_400);
    assert_eq!(
        window(&format!("[retention]\nkeys_days = 0\n{b}  interchange_window_days = 400\n")),
        400 * 86_400
    );
    assert_eq!(window(&format!("{b}  interchange_window_days = 30\n")), 30 * 86_400);
    assert_eq!(window(&format!("{b}  interchange_window = \"2s\"\ninterchange_window_days = 9\n")), 2);
    // Both spellings of one window are one window.
    assert_eq!(window(&format!("{b}  interchange_window = \"14d\"\n")), 14 * 86_400);
    assert_eq!(window(&format!("{b}  interchange_window = \"336h\"\n")), 14 * 86_400);
    assert_eq!(window(&format!("{b}  interchange_window_days = 14\n")), 14 * 86_400);
    // The unit form wins, even over a number of days that alone is refused.
    assert_eq!(window(&format!("{b}  interchange_window = \"1d\"\n  interchange_window_days = 0\n")), 86_400);
    assert_eq!(
        window(&format!(
            "[retention]\nkeys_days = 7\n{b}  interchange_window = \"7d\"\n  interchange_window_days = 400\n"
        )),
        7 * 86_400
    );
    // Each environment reads its own.
    let two = format!("{b}  interchange_window = \"2s\"\n  [[tenants.environments]]\n  id = \"qa\"\n");
    let c = Config::from_toml(&two).unwrap();
    let windows: Vec<i64> =
        c.tenants[0].environments.iter().map(|e| e.interchange_window().seconds()).collect();
    assert_eq!(windows, [2, 30 * 86_400]);
}

#[test]
fn message_type_windows() {
    let windows = |rules: &[&str]| {
        let text = rules
            .iter()
            .enumerate()
            .fold(base(), |text, (i, rule)| format!("{text}[[message_types]]\nid = \"T{i}\"\n{rule}\n"));
        let c = Config::from_toml(&text).unwrap_or_else(|e| panic!("{e}\nfor:\n{text}"));
        c.message_types.iter().map(|m| m.window().seconds()).collect::<Vec<_>>()
    };
    let week = 168 * 3600;
    // The default, and one week in either spelling.
    assert_eq!(
        windows(&[
            "",
            "duplicate_window_hours = 168",
            "duplicate_window = \"168h\"",
            "duplicate_window = \"7d\"",
            "duplicate_window = \"10080m\"",
        ]),
        [week; 5]
    );
    assert_eq!(windows(&["duplicate_window_hours = 2", "duplicate_window = \"2h\""]), [7200, 7200]);
    // The unit form wins, even over a number of hours that alone is refused.
    assert_eq!(
        windows(&[
            "duplicate_window = \"15m\"\nduplicate_window_hours = 2",
            "duplicate_window = \"2s\"\nduplicate_window_hours = 0",
        ]),
        [900, 2]
    );
}

/// The whole refusal of `text`: the key and why.
fn refusal(text: &str) -> String {
    Config::from_toml_with_secrets(text, SecretSource::Fixed(HashMap::new()))
        .expect_err("must be refused")
        .to_string()
}

#[test]
fn dedup_window_refusals_name_the_key_written() {
    let b = base();
    let types =
        |rule: &str| format!("{b}[[message_types]]\nid = \"X\"\n[[message_types]]\nid = \"Y\"\n{rule}\n");
    let at = "config key `message_types[1]";
    let cases = [
        (
            types("duplicate_window = \"5 fortnights\""),
            format!("{at}.duplicate_window`: unknown unit `fortnights` (use s, m, h or d)"),
        ),
        (
            types("duplicate_window = \"0s\""),
            format!("{at}.duplicate_window`: `0s` must be a positive duration"),
        ),
        (
            types("duplicate_window = \"m\""),
            format!("{at}.duplicate_window`: `m` is not a number with a unit (2s, 15m, 12h, 7d)"),
        ),
        // The unit form is read, and refused, whatever the hours say.
        (
            types("duplicate_window = \"-1s\"\nduplicate_window_hours = 2"),
            format!("{at}.duplicate_window`: `-1s` is not a number with a unit (2s, 15m, 12h, 7d)"),
        ),
        (types("duplicate_window_hours = 0"), format!("{at}.duplicate_window_hours`: must be at least 1")),
        (
            types(&format!("duplicate_window_hours = {}", i64::MAX)),
            format!("{at}.duplicate_window_hours`: too large"),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(refusal(&text), expected, "for:\n{text}");
    }
    // A number without its unit, and a value of the wrong type, are named by the same key.
    assert_eq!(key_of(&types("duplicate_window = \"15\"")), "message_types[1].duplicate_window");
    assert_eq!(key_of(&types("duplicate_window_hours = -1")), "message_types[1].duplicate_window_hours");
    assert_eq!(key_of(&types("duplicate_window = 15")), "message_types[1].duplicate_window");
}

#[test]
fn interchange_window_refusals_name_the_key_written() {
    let b = base();
    let envs = |keys_days: u32, window: &str| {
        format!(
            "[retention]\nkeys_days = {keys_days}\n{b}  [[tenants.environments]]\n  id = \"qa\"\n  {window}\n"
        )
    };
    let at = "config key `tenants[0].environments[1]";
    let longer = "is longer than retention.keys_days (10 days), which keeps the interchange claims: raise retention.keys_days or shorten the window";
    let cases = [
        (
            envs(30, "interchange_window = \"2 weeks\""),
            format!("{at}.interchange_window`: unknown unit `weeks` (use s, m, h or d)"),
        ),
        (
            envs(30, "interchange_window = \"0d\""),
            format!("{at}.interchange_window`: `0d` must be a positive duration"),
        ),
        (
            envs(30, "interchange_window_days = 0"),
            format!("{at}.interchange_window_days`: must be at least 1"),
        ),
        (envs(10, "interchange_window_days = 11"), format!("{at}.interchange_window_days`: {longer}")),
        (envs(10, "interchange_window = \"241h\""), format!("{at}.interchange_window`: {longer}")),
        // The unit form is the one checked against the keys' lifetime.
        (
            envs(10, "interchange_window = \"11d\"\n  interchange_window_days = 5"),
            format!("{at}.interchange_window`: {longer}"),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(refusal(&text), expected, "for:\n{text}");
    }
    assert_eq!(
        key_of(&envs(30, "interchange_window_days = -1")),
        "tenants[0].environments[1].interchange_window_days"
    );
    // Exactly the keys' lifetime is allowed, and so is any window when keys are kept forever.
    for ok in [
        envs(10, "interchange_window = \"240h\""),
        envs(10, "interchange_window_days = 10"),
        envs(0, "interchange_window_days = 4000"),
    ] {
        Config::from_toml(&ok).unwrap_or_else(|e| panic!("{e}\nfor:\n{ok}"));
    }
}

#[test]
#[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
fn environment_overrides_set_windows_in_either_spelling() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("edihub.toml", &format!("{}  interchange_window_days = 20\n", base()))?;
        let path = std::path::Path::new("edihub.toml");
        let types = r#"[{id="A", duplicate_window_hours=2},
            {id="B", duplicate_window="15m", duplicate_window_hours=2}]"#;
        jail.set_env("EDIHUB_MESSAGE_TYPES", types);
        let c = Config::load(Some(path)).expect("loads");
        let windows: Vec<i64> = c.message_types.iter().map(|m| m.window().seconds()).collect();
        assert_eq!(windows, [7200, 900]);
        assert_eq!(c.tenants[0].environments[0].interchange_window().seconds(), 20 * 86_400);
        // Shorter-lived keys from the environment refuse the file's window, naming its key.
        jail.set_env("EDIHUB_RETENTION__KEYS_DAYS", "10");
        let err = Config::load(Some(path)).unwrap_err();
        assert_eq!(err.key, "tenants[0].environments[0].interchange_window_days");
        jail.set_env("EDIHUB_MESSAGE_TYPES", r#"[{id="A", duplicate_window="soon"}]"#);
        jail.set_env("EDIHUB_RETENTION__KEYS_DAYS", "30");
        let err = Config::load(Some(path)).unwrap_err();
        assert_eq!(err.key, "message_types[0].duplicate_window");
        Ok(())
    });
}

#[test]
fn idoc_descriptions_are_read_at_start_naming_the_file() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/idoc/flat");
    let good = format!("{fixtures}/orders05-ordrsp.description.txt");
    let json = format!("{fixtures}/orders05-ordrsp.description.json");
    let with = |paths: &[&str]| format!("idoc_descriptions = {paths:?}\n{}", base());
    let config = Config::from_toml_with_secrets(&with(&[&good]), SecretSource::Fixed(HashMap::new()))
        .expect("a WE60 description is read");
    let loaded = crate::config::idoc_descriptions::load(&config).unwrap();
    assert!(loaded.get("ORDERS05").is_some());

    let missing = format!("{fixtures}/no-such-description.txt");
    let err = Config::from_toml_with_secrets(&with(&[&good, &missing]), SecretSource::Fixed(HashMap::new()))
        .expect_err("a missing file is refused");
    assert_eq!(err.key, "idoc_descriptions[1]");
    assert!(err.to_string().contains("no-such-description.txt"), "{err}");
    // The same type described twice (once in each form).
    let err = Config::from_toml_with_secrets(&with(&[&good, &json]), SecretSource::Fixed(HashMap::new()))
        .expect_err("a type described twice is refused");
    assert_eq!(err.key, "idoc_descriptions[1]");
    assert!(err.to_string().contains("described twice"), "{err}");
    // A file that is no description.
    let not = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    assert_eq!(key_of(&with(&[not])), "idoc_descriptions[0]");
}

#[test]
fn sap_systems_are_checked_naming_the_key() {
    let sap = "  [tenants.environments.sap]\n  logical_system = \"S4HCLNT100\"\n  port = \"SAPS4H\"\n  \
               client = \"CLIENT\"\n  hub_partner = \"EDIHUB\"\n  hub_port = \"EDIHUB\"\n";
    let destination = "[[destinations]]\nid = \"s4h\"\ntenant = \"acme\"\nenvironment = \"prod\"\n\
                       url = \"https://sap.example.com/sap/bc/idoc_xml\"\nformat = \"sap-idoc-xml\"\n";
    let with = |sap: &str| format!("{}{sap}", base());
    assert_eq!(key_of(&with(sap)), "tenants[0].environments[0].sap.client");
    let long = sap.replace("CLIENT", "100").replace("S4HCLNT100", "A_LOGICAL_SYSTEM_NAME_TOO_LONG");
    assert_eq!(key_of(&with(&long)), "tenants[0].environments[0].sap.logical_system");
    let good = sap.replace("CLIENT", "100");
    let config = Config::from_toml_with_secrets(
        &format!("{}{destination}", with(&good)),
        SecretSource::Fixed(HashMap::new()),
    )
    .expect("a SAP system and its destination");
    let system = config.sap_system("acme", "prod").expect("acme/prod's SAP system");
    assert_eq!((system.partner_type.as_str(), system.hub_partner_type.as_str()), ("LS", "LS"));
    // A sap-idoc-xml destination needs its environment's SAP system.
    assert_eq!(key_of(&format!("{}{destination}", base())), "destinations[0].format");
}

#[test]
fn sap_status_is_checked_naming_the_key() {
    let sap = "  [tenants.environments.sap]\n  logical_system = \"S4HCLNT100\"\n  port = \"SAPS4H\"\n  \
               client = \"100\"\n  hub_partner = \"EDIHUB\"\n  hub_port = \"EDIHUB\"\n";
    let with = |status: &str| format!("{}{sap}  status = {status}\n", base());
    let at = "tenants[0].environments[0].sap.status";
    assert_eq!(key_of(&with("{ idoc = \"ALEAUD02\" }")), format!("{at}.idoc"));
    assert_eq!(key_of(&with("{ interval = \"soon\" }")), format!("{at}.interval"));
    assert_eq!(key_of(&with("{ interval = \"0s\" }")), format!("{at}.interval"));
    assert_eq!(key_of(&with("{ max_per_idoc = 0 }")), format!("{at}.max_per_idoc"));
    assert_eq!(key_of(&with("{ max_per_idoc = 501 }")), format!("{at}.max_per_idoc"));
    let config = Config::from_toml_with_secrets(
        &with("{ idoc = \"SYSTAT01\", interval = \"30s\", max_per_idoc = 100 }"),
        SecretSource::Fixed(HashMap::new()),
    )
    .expect("a status setting");
    let status = config.sap_system("acme", "prod").and_then(|s| s.status.clone()).expect("status");
    assert_eq!(status.idoc_type(), Some(edihub_core::sap::StatusIdocType::Systat01));
    assert_eq!((status.every(), status.max_per_idoc), (std::time::Duration::from_secs(30), 100));
    let defaults = Config::from_toml_with_secrets(&with("{}"), SecretSource::Fixed(HashMap::new()))
        .expect("the defaults");
    let status = defaults.sap_system("acme", "prod").and_then(|s| s.status.clone()).expect("status");
    assert_eq!(
        (status.idoc.as_str(), status.interval.as_str(), status.max_per_idoc),
        ("ALEAUD01", "1m", 500)
    );
}
