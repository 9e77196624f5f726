//! VM harness (being written).
