//! The hostile review's findings, one test each (`SECURITY.md` lists every
//! hostile class with the test that proves it): load-time attacks
//! ([`load`]), attacks during a call ([`runtime`]) and server-side request
//! forgery through an allowed name ([`ssrf`]).

mod load;
mod runtime;
mod ssrf;
