//! One-shot decode of a whole Send payload (being written).
