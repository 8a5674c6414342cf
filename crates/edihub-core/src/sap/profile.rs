//! Who talks to whom: a SAP system and the hub as that system knows it.

use crate::CoreError;
use crate::idoc::layout::CONTROL_FIELDS;

/// A SAP system the hub writes IDocs to, and the hub's identity in it (the
/// partner profile SAP keeps for the hub, transaction WE20, and its port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SapProfile {
    /// The SAP system's logical system (RCVPRN of what the hub sends), e.g. `S4HCLNT100`.
    pub logical_system: String,
    /// The SAP system's partner type (RCVPRT), `LS` for a logical system.
    pub partner_type: String,
    /// The SAP system's port (RCVPOR), `SAP` and its system id, e.g. `SAPS4H`.
    pub port: String,
    /// The SAP client (MANDT, and `sap-client` of the HTTP call): three digits.
    pub client: String,
    /// The hub's partner number in SAP (SNDPRN), e.g. `EDIHUB`.
    pub hub_partner: String,
    /// The hub's partner type in SAP (SNDPRT), usually `LS`.
    pub hub_partner_type: String,
    /// The port SAP knows the hub by (SNDPOR), e.g. an XML-HTTP port `EDIHUB`.
    pub hub_port: String,
}

impl SapProfile {
    /// Checks every value against the control record field it fills:
    /// present, within SAP's length, no white space or control characters;
    /// the client three digits. The error names the profile key.
    pub fn check(&self) -> Result<(), CoreError> {
        for (key, field, value) in self.fields() {
            let max = CONTROL_FIELDS.iter().find(|(n, _)| *n == field).map_or(0, |(_, len)| *len);
            let count = value.chars().count();
            if count == 0 || count > max {
                return Err(invalid(format!("{key} `{value}` must have 1 to {max} characters ({field})")));
            }
            if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(invalid(format!("{key} `{value}` contains white space or a control character")));
            }
        }
        if !self.client.bytes().all(|b| b.is_ascii_digit()) || self.client.len() != 3 {
            return Err(invalid(format!("client `{}` must be three digits", self.client)));
        }
        Ok(())
    }

    /// Each profile key, the control record field it fills, its value.
    fn fields(&self) -> [(&'static str, &'static str, &str); 7] {
        [
            ("logical_system", "RCVPRN", &self.logical_system),
            ("partner_type", "RCVPRT", &self.partner_type),
            ("port", "RCVPOR", &self.port),
            ("client", "MANDT", &self.client),
            ("hub_partner", "SNDPRN", &self.hub_partner),
            ("hub_partner_type", "SNDPRT", &self.hub_partner_type),
            ("hub_port", "SNDPOR", &self.hub_port),
        ]
    }

    /// The control record fields the profile sets on everything the hub
    /// writes for this SAP system: receiver, sender, client, direction.
    pub(crate) fn addressing(&self) -> [(&'static str, &str); 8] {
        [
            ("MANDT", &self.client),
            ("DIRECT", "2"),
            ("SNDPOR", &self.hub_port),
            ("SNDPRT", &self.hub_partner_type),
            ("SNDPRN", &self.hub_partner),
            ("RCVPOR", &self.port),
            ("RCVPRT", &self.partner_type),
            ("RCVPRN", &self.logical_system),
        ]
    }
}

/// A moment as SAP's records write it: a date `YYYYMMDD` and a time `HHMMSS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SapTimestamp {
    date: String,
    time: String,
}

impl SapTimestamp {
    /// A timestamp from its date and time (the caller's clock, in the time
    /// zone the SAP system expects); refused unless both are digits of
    /// their length with a month 01–12, a day 01–31 and a time of day.
    pub fn new(date: &str, time: &str) -> Result<SapTimestamp, CoreError> {
        let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
        let num = |s: &str| s.parse::<u32>().unwrap_or(u32::MAX);
        let ok = digits(date, 8)
            && digits(time, 6)
            && (1..=12).contains(&num(&date[4..6]))
            && (1..=31).contains(&num(&date[6..8]))
            && num(&time[0..2]) < 24
            && num(&time[2..4]) < 60
            && num(&time[4..6]) < 60;
        if !ok {
            return Err(invalid(format!("`{date}` `{time}` is not a SAP date YYYYMMDD and time HHMMSS")));
        }
        Ok(SapTimestamp { date: date.to_string(), time: time.to_string() })
    }

    /// The date, `YYYYMMDD`.
    pub fn date(&self) -> &str {
        &self.date
    }

    /// The time, `HHMMSS`.
    pub fn time(&self) -> &str {
        &self.time
    }
}

fn invalid(detail: String) -> CoreError {
    CoreError::SapProfile(detail)
}
