//! kubectl-ferry: the command-line front end of Ferry.
