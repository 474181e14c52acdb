//! ferry-operator
