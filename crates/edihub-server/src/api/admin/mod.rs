//! The admin API, all under `/admin` and behind the admin credential: the
//! audit log ([`audit`]), messages ([`messages`]), message type and
//! integration rules ([`rules`]), push destinations ([`destinations`]) and
//! deliveries ([`deliveries`]), AS2 messages received ([`as2`]).
//!
//! Every change is validated like the config file, stored and audited with
//! the old and the new value; the console's forms hand their input to the
//! same functions, so a form never accepts what the API refuses.

pub mod as2;
pub mod audit;
pub mod deliveries;
pub mod destinations;
pub mod messages;
pub mod rules;
