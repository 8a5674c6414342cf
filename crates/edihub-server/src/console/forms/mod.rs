//! The console's state-changing forms, all `POST`s under `/admin/forms/`.
//!
//! Every form is read through [`token::ConsoleForm`], which checks its
//! anti-forgery token before anything changes; [`form`] renders a form and
//! its refusals; [`edit`] and [`integration`] edit rules, [`redeliver`]
//! sends a message's deliveries again. Each hands its input to the same code
//! as the JSON admin API.

pub mod edit;
pub mod form;
pub mod integration;
pub mod redeliver;
pub mod token;
