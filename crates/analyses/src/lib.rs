//! The analyses of `fairshare`, each owning its rendering: why an association stands where it
//! does ([`explain`]), two runs or a what-if side by side ([`compare`]), what changed between two run directories
//! ([`diff`]), when a user's priority
//! recovers ([`forecast`]), delivered against entitled usage over time ([`fairness`]), what each
//! association deserves of the machine now ([`entitlement`]), and shares from hardware
//! ([`shares`]).
//!
//! They sit on the engine's pipeline (`fairshare_engine::pipeline`); pictures of them are drawn a
//! layer up, in `fairshare_pictures`.

pub mod chart;
pub mod compare;
pub mod diff;
pub mod entitlement;
pub mod explain;
pub mod fairness;
pub mod forecast;
pub mod shares;
