//! The console's pages: the overview (`GET /admin`, [`overview`]) and the
//! HTML faces of the admin API's lists and records. Each renders data the
//! handler already read; none changes anything.

pub mod as2_partners;
pub mod audit;
pub mod destinations;
pub mod message;
pub mod message_search;
pub mod overview;
pub mod rules;
