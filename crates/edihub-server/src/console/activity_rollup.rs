//! Keeps the store's hourly rollup of the overview's counts up to date in
//! the background, so that showing `GET /admin` only reads.
//!
//! An hour can be rolled up once it has *settled*: every request stamped in
//! it has committed or rolled back. Reads stay correct however far the
//! rollup lags (the store counts what it does not hold directly), so the
//! task only keeps the overview cheap: it rolls up at start and then every
//! [`EVERY`], which leaves at most one settled hour to count directly.
//! Replicas may all run it: a roll-up adds only the hours still missing,
//! under the store's lock.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// How often the rollup is brought up to date.
pub const EVERY: StdDuration = StdDuration::from_secs(300);

/// A request's rows are stamped with its start time and commit before its
/// `request_timeout_secs` ends (a request past it is dropped and its
/// transaction rolled back); this margin covers what runs on after the
/// handler (a group insert's batch, clocks of replicas a little apart).
const SETTLE_MARGIN: Duration = Duration::seconds(60);

/// The time before which every request has committed or rolled back: the
/// hours that ended before it can be rolled up (see
/// [`edihub_store::Store::roll_up_activity`]).
pub fn settled(request_timeout_secs: u64, now: DateTime<Utc>) -> DateTime<Utc> {
    let timeout = i64::try_from(request_timeout_secs).ok().and_then(Duration::try_seconds);
    now - timeout.unwrap_or(Duration::days(365)) - SETTLE_MARGIN
}

/// Rolls up the settled hours now and every [`EVERY`] until `shutdown`.
/// A failed roll-up is logged and tried again at the next turn.
pub async fn run(state: AppState, shutdown: CancellationToken) {
    loop {
        let settled = settled(state.config.request_timeout_secs, crate::ingest::now());
        if let Err(e) = state.store.roll_up_activity(settled).await {
            tracing::warn!(error = %e, "rolling up the overview's counts failed; the overview counts directly meanwhile");
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(EVERY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_settles_after_the_request_timeout_and_the_margin() {
        let now = DateTime::parse_from_rfc3339("2026-12-05T12:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(settled(30, now), now - Duration::seconds(90));
        assert_eq!(settled(u64::MAX, now), now - Duration::days(365) - SETTLE_MARGIN);
    }
}
