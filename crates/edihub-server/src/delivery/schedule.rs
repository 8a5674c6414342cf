//! What happens to a delivery after an attempt: done (2xx, unless the
//! answer itself refuses the message, as a negative AS2 MDN does), given up (`410
//! Gone`, a purged message, or the retry schedule exhausted), or retried
//! after the schedule's next delay with ±20 % jitter (so deliveries that
//! failed together do not return together), lengthened to the receiver's
//! `Retry-After` (capped at a day).

use std::time::Duration;

use chrono::{DateTime, Utc};
use edihub_store::Verdict;

use super::attempt::Answer;

/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(86_400);

/// The verdict after `attempts_made` attempts (this one included), the last
/// answered `answer`; `jitter` in `[0.8, 1.2)` scales the delay.
pub fn verdict(
    answer: &Answer,
    attempts_made: i32,
    delays: &[Duration],
    jitter: f64,
    now: DateTime<Utc>,
) -> Verdict {
    match answer.record.status_code {
        Some(200..=299) if !answer.refused => return Verdict::Delivered,
        Some(410) => return Verdict::Failed,
        _ if answer.gone => return Verdict::Failed,
        _ => {}
    }
    let Some(delay) = usize::try_from(attempts_made - 1).ok().and_then(|i| delays.get(i)) else {
        return Verdict::Failed;
    };
    let asked = answer.retry_after.unwrap_or_default().min(MAX_RETRY_AFTER);
    let wait = delay.mul_f64(jitter).max(asked);
    Verdict::RetryAt(now + chrono::Duration::from_std(wait).unwrap_or_default())
}

/// A random jitter factor in `[0.8, 1.2)`.
pub fn jitter_factor() -> f64 {
    let r = (uuid::Uuid::new_v4().as_u128() % 1_000_000) as f64 / 1_000_000.0;
    0.8 + 0.4 * r
}

/// A `Retry-After` value (seconds, or an HTTP date) as a wait from `now`.
pub fn retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = DateTime::parse_from_rfc2822(value).ok()?.with_timezone(&Utc);
    (at - now).to_std().ok()
}

#[cfg(test)]
mod tests {
    use edihub_store::AttemptRow;

    use super::*;

    fn answer(status: Option<i32>, retry_after: Option<u64>) -> Answer {
        let record = AttemptRow {
            attempted_at: Utc::now(),
            status_code: status,
            latency_ms: 1,
            error: None,
            response_prefix: None,
        };
        Answer { record, retry_after: retry_after.map(Duration::from_secs), gone: false, refused: false }
    }

    #[test]
    fn success_gone_and_exhaustion_end_the_delivery() {
        let delays = [Duration::from_secs(5), Duration::from_secs(30)];
        let now = Utc::now();
        assert_eq!(verdict(&answer(Some(204), None), 1, &delays, 1.0, now), Verdict::Delivered);
        assert_eq!(verdict(&answer(Some(410), None), 1, &delays, 1.0, now), Verdict::Failed);
        assert_eq!(verdict(&answer(Some(500), None), 3, &delays, 1.0, now), Verdict::Failed);
        let gone = Answer { gone: true, ..answer(None, None) };
        assert_eq!(verdict(&gone, 1, &delays, 1.0, now), Verdict::Failed);
    }

    #[test]
    fn a_refusing_2xx_is_retried_on_the_schedule() {
        let delays = [Duration::from_secs(5), Duration::from_secs(30)];
        let now = Utc::now();
        let refused = Answer { refused: true, ..answer(Some(200), None) };
        assert_eq!(
            verdict(&refused, 1, &delays, 1.0, now),
            Verdict::RetryAt(now + chrono::Duration::seconds(5))
        );
        assert_eq!(
            verdict(&refused, 2, &delays, 1.0, now),
            Verdict::RetryAt(now + chrono::Duration::seconds(30))
        );
        assert_eq!(
            verdict(&refused, 3, &delays, 1.0, now),
            Verdict::Failed,
            "then the schedule is exhausted"
        );
        assert_eq!(verdict(&answer(Some(200), None), 1, &delays, 1.0, now), Verdict::Delivered);
    }

    #[test]
    fn retries_follow_the_schedule_with_jitter_and_retry_after() {
        let delays = [Duration::from_secs(5), Duration::from_secs(30)];
        let now = Utc::now();
        let at = |a: &Answer, n, j| match verdict(a, n, &delays, j, now) {
            Verdict::RetryAt(t) => (t - now).num_milliseconds(),
            other => panic!("expected a retry, got {other:?}"),
        };
        assert_eq!(at(&answer(Some(500), None), 1, 1.0), 5_000);
        assert_eq!(at(&answer(None, None), 2, 0.8), 24_000, "a connection error is retried too");
        assert_eq!(at(&answer(Some(503), Some(120)), 1, 1.2), 120_000, "Retry-After lengthens the delay");
        assert_eq!(at(&answer(Some(429), Some(1)), 1, 1.0), 5_000, "but never shortens it");
        assert_eq!(at(&answer(Some(503), Some(10_000_000)), 1, 1.0), 86_400_000, "capped at a day");
        for _ in 0..100 {
            assert!((0.8..1.2).contains(&jitter_factor()));
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(retry_after(" 30 ", now), Some(Duration::from_secs(30)));
        assert_eq!(retry_after("Thu, 01 Jan 2026 00:01:00 GMT", now), Some(Duration::from_secs(60)));
        assert_eq!(retry_after("Wed, 31 Dec 2025 23:00:00 GMT", now), None, "a past date");
        assert_eq!(retry_after("soon", now), None);
    }
}
