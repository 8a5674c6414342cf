//! One module per resource, each with its own `router()`.

pub mod audit;
pub mod audit_page;
pub mod catalog;
pub mod catalog_page;
pub mod console_edit;
pub mod console_forms;
pub mod deliveries;
pub mod delivery_panel;
pub mod destinations;
pub mod destinations_page;
pub mod edit_form;
pub mod feed;
pub mod health;
pub mod integration_edit;
pub mod message_page;
pub mod message_search_page;
pub mod messages;
pub mod openapi;
pub mod overview;
pub mod overview_deliveries;
pub mod overview_page;
pub mod page;
pub mod payload_view;
pub mod receive;
pub mod webhook;
