//! Durations as the file writes them: windows (`2s`, `15m`, `12h`, `7d`),
//! read into a [`Window`], and delays, which also take milliseconds
//! (`500ms`).

use std::fmt;
use std::num::NonZeroU32;
use std::time::Duration;

/// A dedup window: a positive number of seconds. The configuration reads
/// each message type's and each environment's window into one once, when
/// it is validated, whichever spelling the file uses (`duplicate_window =
/// "15m"` or `duplicate_window_hours = 168`, `interchange_window = "14d"`
/// or `interchange_window_days = 30`); everything after reads that value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Window(i64);

impl Window {
    /// A message type's window when it sets none: one week.
    pub const DEFAULT_DEDUP: Window = Window(168 * 3600);
    /// An environment's interchange window when it sets none: 30 days (cut
    /// to `retention.keys_days` when that is shorter).
    pub const DEFAULT_INTERCHANGE: Window = Window(30 * 86_400);

    /// Reads a window with its unit: `2s`, `15m`, `12h`, `7d`.
    pub fn parse(text: &str) -> Result<Window, String> {
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
            "" => {
                return Err(format!(
                    "`{text}` has no unit (write it as {text}s, {text}m, {text}h or {text}d)"
                ));
            }
            other => return Err(format!("unknown unit `{other}` (use s, m, h or d)")),
        };
        n.checked_mul(factor)
            .and_then(Window::from_seconds)
            .ok_or_else(|| format!("`{text}` must be a positive duration"))
    }

    /// `seconds` as a window, if it is positive.
    pub fn from_seconds(seconds: i64) -> Option<Window> {
        (seconds > 0).then_some(Window(seconds))
    }

    /// `hours` as a window, if it is positive and its seconds fit.
    pub fn from_hours(hours: u64) -> Option<Window> {
        i64::try_from(hours).ok()?.checked_mul(3600).and_then(Window::from_seconds)
    }

    /// `days` as a window.
    pub fn from_days(days: NonZeroU32) -> Window {
        Window(i64::from(days.get()) * 86_400)
    }

    /// The window in seconds (what the store keeps).
    pub const fn seconds(self) -> i64 {
        self.0
    }

    /// The window as a [`Duration`].
    pub fn duration(self) -> Duration {
        Duration::from_secs(self.0.unsigned_abs())
    }
}

/// The unit form the file and the console's form take back: whole hours
/// (`168h`), else whole minutes (`15m`), else seconds (`2s`).
impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            s if s % 3600 == 0 => write!(f, "{}h", s / 3600),
            s if s % 60 == 0 => write!(f, "{}m", s / 60),
            s => write!(f, "{s}s"),
        }
    }
}

/// Parses a delay such as `500ms`, `5s`, `2m`, `1h`, `1d`.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    match text.trim().strip_suffix("ms") {
        Some(ms) => match ms.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Duration::from_millis(n)),
            _ => Err(format!("`{text}` must be a positive duration (500ms, 5s, 2m, 1h, 1d)")),
        },
        None => Window::parse(text).map(Window::duration),
    }
}
