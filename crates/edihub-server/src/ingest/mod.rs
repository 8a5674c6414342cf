//! Pieces every ingest route shares: bounded body reading (`body`, within a
//! memory budget: `budget`), header checks (`headers`) and identifier checks
//! (`identifiers`), building the messages of a request (`messages`),
//! handing them to the store (`submit`) at one time (`clock`), and the
//! response format of stored and duplicate messages (`response`); the AS2
//! intake (`as2`), which stores an opened AS2 message's payload the same
//! way. This file only names the parts, so the routes, the EDI
//! acknowledgements and the SAP status recorder that use them import no
//! circle through it.

pub mod as2;
mod body;
mod budget;
mod clock;
mod headers;
pub(crate) mod identifiers;
mod messages;
mod response;
mod submit;

pub use body::{Pace, check_body_headers, parse, read_body, read_body_from};
pub use budget::{BodyBudget, BodyPermit};
pub use clock::now;
pub use headers::{MAX_KEY_LEN, header_text, refuse_repeated, validate_key, validate_type};
pub use messages::{MessageSource, build_messages};
pub use response::{outcome_json, outcome_response, render_answer};
pub use submit::{Submission, store, submit};
