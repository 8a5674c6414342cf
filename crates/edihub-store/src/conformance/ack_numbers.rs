//! Acknowledgement control numbers (`Store::next_ack_number`): counted per
//! (tenant, environment, partner), never handed out twice, also when many
//! requests ask at once and across a reopened store.

use std::collections::HashSet;

use super::support::*;

/// How many tasks ask for a number at once.
pub const ACK_RACERS: usize = 32;

/// Numbers count 1, 2, 3 per partner; another partner, environment or
/// tenant counts on its own.
pub async fn ack_numbers_count_per_partner(store: StoreRef) {
    let scope = fresh_scope();
    let next = |scope: Scope, partner: &'static str| {
        let store = store.clone();
        async move { store.next_ack_number(&scope, partner).await.expect("next_ack_number") }
    };
    assert_eq!(next(scope.clone(), "X12|ZZ:A").await, 1);
    assert_eq!(next(scope.clone(), "X12|ZZ:A").await, 2);
    assert_eq!(next(scope.clone(), "X12|ZZ:B").await, 1, "another partner counts on its own");
    assert_eq!(next(scope.clone(), "X12|ZZ:A").await, 3);
    let qa = Scope::new(scope.tenant_id.clone(), "qa");
    assert_eq!(next(qa, "X12|ZZ:A").await, 1, "another environment counts on its own");
    let other_tenant = fresh_scope();
    assert_eq!(next(other_tenant, "X12|ZZ:A").await, 1, "another tenant counts on its own");
    assert_eq!(next(scope, "X12|ZZ:A").await, 4);
}

/// 32 tasks asking for the same partner's number at once get 32 distinct
/// numbers, exactly 1 to 32.
pub async fn racing_ack_numbers_are_distinct(store: StoreRef) {
    let scope = fresh_scope();
    let mut tasks = Vec::new();
    for _ in 0..ACK_RACERS {
        let (store, scope) = (store.clone(), scope.clone());
        tasks.push(tokio::spawn(async move {
            store.next_ack_number(&scope, "EDIFACT|14:5400110000009").await.expect("next_ack_number")
        }));
    }
    let mut numbers = HashSet::new();
    for t in tasks {
        assert!(numbers.insert(t.await.expect("task")), "a number was handed out twice");
    }
    let expected: HashSet<i64> = (1..=ACK_RACERS as i64).collect();
    assert_eq!(numbers, expected);
}
