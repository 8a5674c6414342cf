//! `[delivery]` and `[[destinations]]`: defaults, and every refusal names its key.

use std::collections::HashMap;
use std::time::Duration;

use super::super::{Config, DeliveryFormat, DeliveryOrdering, SecretSource};
use super::parse_delay;

const SHA: &str = "ca4822ad34afb4cf7d32beabed6d8fd80ba2d29b05690c67464b0227c6475074";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn base(top: &str) -> String {
    format!(
        "{top}\n[admin]\ntoken_sha256 = \"{SHA}\"\n[[tenants]]\nid = \"acme\"\n  [[tenants.environments]]\n  id = \"prod\"\n"
    )
}

/// A config with one destination of acme/prod, plus `fields`.
fn destination(fields: &str) -> String {
    let d = format!(
        "[[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"https://erp.example/in\"\n{fields}\n"
    );
    base(&d)
}

fn secrets() -> SecretSource {
    SecretSource::Fixed(HashMap::from([("ERP_SECRET".to_string(), SECRET.to_string())]))
}

fn load(text: &str) -> Result<Config, super::super::ConfigError> {
    Config::from_toml_with_secrets(text, secrets())
}

#[test]
fn defaults_apply() {
    let c = load(&destination("")).expect("valid");
    let d = &c.destinations[0];
    assert_eq!((d.format, d.timeout_secs, d.enabled), (DeliveryFormat::Envelope, 10, true));
    assert_eq!(d.ordering, DeliveryOrdering::Parallel);
    let fifo = load(&destination("ordering = \"fifo\"")).expect("fifo is valid");
    assert_eq!(fifo.destinations[0].ordering, DeliveryOrdering::Fifo);
    assert!(d.message_types.is_none() && d.signature.is_none());
    let delays = c.delivery.delays();
    assert_eq!(delays.len(), 10);
    assert_eq!((delays[0], delays[9]), (Duration::from_secs(5), Duration::from_secs(86_400)));
    assert_eq!(c.delivery.max_in_flight_per_destination, 64);
    assert_eq!((d.max_in_flight, d.in_flight(&c.delivery)), (None, 64));
    let own = load(&destination("max_in_flight = 4")).expect("its own limit is valid");
    assert_eq!(own.destinations[0].in_flight(&own.delivery), 4);
    let signed = destination("signature = { scheme = \"standard-webhooks\", secret_env = \"ERP_SECRET\" }");
    assert!(load(&signed).is_ok(), "a secret named by the file is allowed");
}

#[test]
fn delays_parse_with_units() {
    assert_eq!(parse_delay("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_delay("2m"), Ok(Duration::from_secs(120)));
    assert!(parse_delay("0ms").is_err() && parse_delay("5 parsecs").is_err() && parse_delay("ms").is_err());
}

#[test]
fn refusals_name_the_key() {
    let sig =
        |scheme: &str, var: &str| format!("signature = {{ scheme = \"{scheme}\", secret_env = \"{var}\" }}");
    let cases = [
        (base("[delivery]\nretry_schedule = [\"5s\", \"soon\"]"), "delivery.retry_schedule[1]"),
        (base("[delivery]\npoll_interval_ms = 0"), "delivery.poll_interval_ms"),
        (base("[delivery]\nmax_in_flight_per_destination = 0"), "delivery.max_in_flight_per_destination"),
        (base("[delivery]\nmax_in_flight_per_destination = 5000"), "delivery.max_in_flight_per_destination"),
        (destination("max_in_flight = 0"), "destinations[0].max_in_flight"),
        (destination("max_in_flight = 1001"), "destinations[0].max_in_flight"),
        (base("[delivery]\nretries = 3"), "delivery"),
        (base("[delivery]\nlease_margin_secs = 0"), "delivery.lease_margin_secs"),
        (destination("").replace("id = \"erp\"", "id = \"e r p\""), "destinations[0].id"),
        (
            destination("").replace("tenant = \"acme\"\nenvironment", "tenant = \"nobody\"\nenvironment"),
            "destinations[0].tenant",
        ),
        (
            destination("").replace("environment = \"prod\"\nurl", "environment = \"qa\"\nurl"),
            "destinations[0].environment",
        ),
        (destination("").replace("https://erp.example/in", "ftp://erp.example/in"), "destinations[0].url"),
        (destination("").replace("https://erp.example/in", "not a url"), "destinations[0].url"),
        (destination("format = \"xml\""), "destinations[0].format"),
        (destination("timeout_secs = 0"), "destinations[0].timeout_secs"),
        (destination("ordering = \"sorted\""), "destinations[0].ordering"),
        (destination("message_types = [\"\"]"), "destinations[0].message_types[0]"),
        (destination(&sig("github", "ERP_SECRET")), "destinations[0].signature.scheme"),
        (destination(&sig("standard-webhooks", "MISSING_SECRET")), "destinations[0].signature.secret_env"),
        (destination(&sig("standard-webhooks", "DATABASE_URL")), "destinations[0].signature.secret_env"),
        (destination("colour = \"red\""), "destinations[0]"),
    ];
    for (text, key) in cases {
        let err = load(&text).expect_err(key);
        assert!(err.key.starts_with(key), "{key}: refused as {err}");
    }
    let twice = format!(
        "{}{}",
        destination(""),
        "[[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"https://erp.example/b\"\n"
    );
    assert_eq!(load(&twice).expect_err("twice").key, "destinations[1].id");
    let sorted = load(&destination("ordering = \"sorted\"")).expect_err("an unknown ordering");
    assert!(sorted.reason.contains("`parallel`") && sorted.reason.contains("`fifo`"), "{sorted}");
    let not_whsec = SecretSource::Fixed(HashMap::from([("ERP_SECRET".to_string(), "!!".to_string())]));
    let text = destination(&sig("standard-webhooks", "ERP_SECRET"));
    let err = Config::from_toml_with_secrets(&text, not_whsec).expect_err("not whsec");
    assert_eq!(err.key, "destinations[0].signature.secret_env");
    assert!(err.reason.contains("whsec_"), "{err}");
}

/// A destination at a literal private address is refused naming its url,
/// unless `delivery.allow_private_destinations`; a metadata address or
/// `0.0.0.0` always. A host name is left to the check at send time.
#[test]
fn literal_private_destinations_need_the_setting() {
    let at = |url: &str, top: &str| {
        let d = format!(
            "{top}[[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{url}\"\n"
        );
        load(&base(&d))
    };
    let allowed = "[delivery]\nallow_private_destinations = true\n";
    for url in [
        "http://127.0.0.1:9999/edihub",
        "http://2130706433/",
        "http://[::ffff:10.0.0.1]/",
        "http://192.168.1.5/",
    ] {
        let e = at(url, "").expect_err(url);
        assert_eq!(e.key, "destinations[0].url", "{url}");
        assert!(e.reason.contains("allow_private_destinations"), "{url}: {}", e.reason);
        assert!(at(url, allowed).is_ok(), "{url} with the setting");
    }
    for url in ["http://169.254.169.254/latest/", "http://0.0.0.0:8080/", "http://[fd00:ec2::254]/"] {
        let e = at(url, allowed).expect_err(url);
        assert!(e.reason.contains("never"), "{url}: {}", e.reason);
    }
    assert!(at("http://localhost:9999/", "").is_ok(), "names are checked when resolved");
    assert!(!load(&destination("")).expect("valid").delivery.allow_private_destinations, "off by default");
}

/// Credentials in a destination URL are refused naming the url; Basic
/// credentials come as `basic_auth`, the password from the environment.
#[test]
fn credentials_come_from_basic_auth_not_the_url() {
    for url in ["https://erp:s3cret@erp.example/in", "https://token@erp.example/in"] {
        let d = base(&format!(
            "[[destinations]]\nid = \"erp\"\ntenant = \"acme\"\nenvironment = \"prod\"\nurl = \"{url}\"\n"
        ));
        let e = load(&d).expect_err(url);
        assert_eq!(e.key, "destinations[0].url");
        assert!(e.reason.contains("basic_auth") && !e.reason.contains("s3cret"), "{}", e.reason);
    }
    let ok =
        load(&destination("basic_auth = { user = \"erp\", password_env = \"ERP_SECRET\" }")).expect("valid");
    assert_eq!(ok.destinations[0].basic_auth.as_ref().map(|b| b.user.as_str()), Some("erp"));
    let unset = load(&destination("basic_auth = { user = \"erp\", password_env = \"ERP_PASSWORD\" }"));
    assert_eq!(unset.expect_err("unset").key, "destinations[0].basic_auth.password_env");
    let colon = load(&destination("basic_auth = { user = \"a:b\", password_env = \"ERP_SECRET\" }"));
    assert_eq!(colon.expect_err("colon").key, "destinations[0].basic_auth.user");
}
