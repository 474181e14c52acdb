//! Tests that run alone and after every other test that runs alone (`scripts/lib/run_tests.py`
//! runs a module `alone::last` at the very end): the controller-manager is still cleaning up after
//! them when they end, and the next test would wait behind it (the kubelet restart's test took
//! 96 s after the memory test, 28 s on its own).

// 2,000 StatefulSets, pods and claims keep the controller-manager busy for minutes: every other
// test's StatefulSets would wait behind them.
mod operator_memory;
