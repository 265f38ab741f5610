//! The model: the plain data every layer above shares and no layer below
//! needs. A tool's name rule ([`names`]), its spec as the catalog serves it
//! ([`spec`]) and the JSON Schema rules of its arguments and output
//! ([`schema`]). Nothing here reads a file, runs a guest or knows a host.

pub(crate) mod names;
pub(crate) mod schema;
pub(crate) mod spec;
