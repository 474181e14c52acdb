//! ferry-testenv
