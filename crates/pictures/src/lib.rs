//! The pictures of `fairshare` ([`plot`]: icicles of the tree, line charts of its history, a
//! forecast's trajectory, entitlement bars, as SVG or PNG) and the static report for users
//! ([`report`]), drawn from the engine's runs and the analyses.

pub mod plot;
pub mod report;
