//! Data safety: outputs replace only what the engine wrote, temps are unpredictable and never follow links, modes are kept.
