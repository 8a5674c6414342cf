//! Who may produce which message type.
//!
//! Duplicates are found among all messages of one type in one tenant
//! environment, whoever sent them. Whoever may send a type into an
//! environment can therefore make the next genuine message of that type with
//! the same key look like a duplicate: a type is a claim over part of the
//! environment's dedup space, and these rules decide who holds it.
//!
//! - An integration with a fixed `message_type` produces only that type.
//! - An integration that reads its type from the payload
//!   (`message_type_path`) produces the types of its `message_types` list;
//!   without a list, any type no *other* integration of its environment
//!   claims.
//! - An API key produces the types of its environment's `message_types`
//!   list; without a list, any type no integration of the environment claims.
//!
//! An integration claims its fixed type and the types of its list, so a type
//! that belongs to an integration is reserved to it unless another list
//! names it explicitly. Every type named by a request (header, query or
//! payload) must also pass [`crate::config::check_type`].

use edihub_store::Scope;

use crate::error::ApiError;
use crate::integrations::{Integration, Registry, TypeSource};

/// Who sends a request.
#[derive(Debug, Clone, Copy)]
pub enum Producer<'a> {
    /// An API key of an environment, with that environment's list.
    Sender {
        /// The environment's `message_types`, if it has one.
        allowed: Option<&'a [String]>,
    },
    /// A webhook integration.
    Integration(&'a Integration),
}

fn listed(list: &[String], t: &str) -> bool {
    list.iter().any(|l| l == t)
}

impl Registry {
    /// 403 unless `producer` may send message type `t` into `scope` (see
    /// the module docs).
    pub fn may_produce(&self, scope: &Scope, producer: &Producer<'_>, t: &str) -> Result<(), ApiError> {
        let (own_id, allowed) = match producer {
            Producer::Sender { allowed } => (None, *allowed),
            Producer::Integration(integ) => match &integ.message_type {
                TypeSource::Fixed(fixed) if fixed == t => return Ok(()),
                TypeSource::Fixed(fixed) => {
                    return Err(ApiError::Forbidden(format!(
                        "integration `{}` sends only message type `{fixed}`, not `{t}`",
                        integ.id
                    )));
                }
                TypeSource::Path(_) => (Some(integ.id.as_str()), integ.allowed_types.as_deref()),
            },
        };
        let who = match own_id {
            Some(id) => format!("integration `{id}`"),
            None => "this API key".to_string(),
        };
        if let Some(list) = allowed {
            return if listed(list, t) {
                Ok(())
            } else {
                Err(ApiError::Forbidden(format!(
                    "{who} may not send message type `{t}`: its message_types list does not name it"
                )))
            };
        }
        match self.claimant(scope, t, own_id) {
            None => Ok(()),
            Some(owner) => Err(ApiError::Forbidden(format!(
                "message type `{t}` belongs to integration `{owner}`; {who} may send it only if its \
                 message_types list names it"
            ))),
        }
    }
}
