//! The top-level settings that take one of a fixed set of values, as enums:
//! serde reads and writes them under the names the file and the `EDIHUB_*`
//! variables use, so an unknown value is refused while loading, naming its
//! key.

use serde::{Deserialize, Serialize};

/// `log_format`: how the log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// `database_pooler`: what sits between edihub and PostgreSQL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatabasePooler {
    /// A direct connection, or a pooler in session mode.
    #[default]
    None,
    /// A pooler in transaction mode, such as PgBouncer with
    /// `pool_mode = transaction`.
    Transaction,
}

/// `database_partition_period`: the range of one PostgreSQL time partition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatabasePartitionPeriod {
    /// From midnight to midnight, UTC.
    #[default]
    Day,
    /// From Monday's midnight to the next Monday's, UTC.
    Week,
}

/// The name the file gives `value` of one of these sets (its serde name).
pub fn choice_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

/// The value of one of these sets that the file names `name`, or serde's
/// refusal, which lists the names allowed.
pub fn parse_choice<T: serde::de::DeserializeOwned>(name: &str) -> Result<T, String> {
    use serde::de::value::{Error, StrDeserializer};
    T::deserialize(StrDeserializer::<Error>::new(name)).map_err(|e| e.to_string())
}
