//! ferry-mover: copies one directory tree onto another with full fidelity.
