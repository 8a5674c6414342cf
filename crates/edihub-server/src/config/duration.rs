//! Durations as the file writes them: windows (`2s`, `15m`, `12h`, `7d`)
//! and delays, which also take milliseconds (`500ms`); and the windows an
//! environment or a message type gets when it sets none.

use std::time::Duration;

/// Default dedup window: one week.
pub const DEFAULT_WINDOW_SECONDS: i64 = 168 * 3600;
/// The interchange window when an environment sets none.
pub const DEFAULT_INTERCHANGE_WINDOW_DAYS: u32 = 30;

/// Parses a window such as `2s`, `15m`, `12h`, `7d` into seconds.
pub fn parse_window(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (num, unit) = text.split_at(split);
    let n: i64 =
        num.parse().map_err(|_| format!("`{text}` is not a number with a unit (2s, 15m, 12h, 7d)"))?;
    let factor = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("unknown unit `{other}` (use s, m, h or d)")),
    };
    match n.checked_mul(factor) {
        Some(s) if s > 0 => Ok(s),
        _ => Err(format!("`{text}` must be a positive duration")),
    }
}

/// Parses a delay such as `500ms`, `5s`, `2m`, `1h`, `1d`.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    match text.trim().strip_suffix("ms") {
        Some(ms) => match ms.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Duration::from_millis(n)),
            _ => Err(format!("`{text}` must be a positive duration (500ms, 5s, 2m, 1h, 1d)")),
        },
        None => parse_window(text).map(|s| Duration::from_secs(s.unsigned_abs())),
    }
}
