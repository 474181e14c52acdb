//! ferry-api
